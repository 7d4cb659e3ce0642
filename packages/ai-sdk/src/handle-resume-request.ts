import { type Agent, type AgentSession, errorBody, httpStatusOf, InvalidInputError, type StreamStore } from '@ctx/core';
import { checkOptionNames, optionNames } from '@ctx/core/backend';
import { jsonResponse, notFound, report } from './route-responses.js';
import { INPUT_CHUNK_TYPE, readStoredTurn, replyOutgrewStoreError } from './turn-stream.js';
import type { UIMessage, UIMessageChunk } from './ui-message.js';
import { chunkStreamResponse, DEFAULT_UI_ERROR_TEXT, type ToUIMessageStreamOptions } from './ui-message-stream.js';

/** Options of `handleResumeRequest`: whose conversation, and where its turns' streams are kept. */
export interface HandleResumeRequestOptions {
  /** The agent of the POST route (`handleChatRequest`), with its `sessionStore`. */
  agent: Agent;
  /** The conversation's id, from the route (`/api/chat/:id/stream`). */
  sessionId: string;
  /** The signed-in user, from your authentication (never from the request). */
  userId: string;
  /** The stream store the POST route writes (`handleChatRequest`'s `streams`). */
  streams: StreamStore;
  /**
   * The text of the `error` chunk that ends a reply whose producer went away before it finished (its
   * process died, or the store was lost mid-read), or that outgrew the stream store's limits (an
   * `InvalidInputError` whose `limit` names the store's option). Default: `'An error occurred.'`.
   */
  onError?: ToUIMessageStreamOptions['onError'];
  /** More headers of the stream's response (they win over the protocol's of the same name). */
  headers?: Record<string, string>;
  /** Called with every failure answered with a JSON error instead of a stream, and its status. A throw here is ignored. */
  onErrorResponse?: (error: unknown, status: number) => void;
}

const OPTION_NAMES = optionNames<HandleResumeRequestOptions>()({
  agent: true,
  sessionId: true,
  userId: true,
  streams: true,
  onError: true,
  headers: true,
  onErrorResponse: true,
});

/**
 * Answers the `GET .../:id/stream` request of `useChat({ resume: true })` (a reload, a second tab,
 * a dropped connection): `return handleResumeRequest(request, { agent, sessionId, userId, streams })`.
 *
 * The conversation is checked as the POST route checks it: another user's (or one of no user) is a
 * 404 with the same body as for one that does not exist. Then, with the session's latest turn in
 * `streams`:
 * - running: its chunks from the first, then each as it comes, until it ends (two tabs each get all);
 *   a producer that went away (its process died) ends the reply with an `error` chunk, never a hang
 *   (204 instead when the history holds the turn: it lost the store, not the run); a reply that
 *   outgrew the store's `maxBytes` or `maxChunks` gives the chunks the store took, then an `error`
 *   chunk saying so (`onError` gets an `InvalidInputError` with that `limit`), and the turn can
 *   still be stopped;
 * - ended with a reply (finished or stopped) and still kept (the store's `ttlMs`): the same chunks,
 *   whose `start` names the stored message, so a page that loaded the stored reply shows it once
 *   (204 when the reply outgrew the store's limits: the page holds it whole from the history);
 * - otherwise (none, failed, expired, a conversation not stored yet): 204, which `useChat` reads as
 *   "nothing to resume".
 * Never rejects for what a request holds. @throws ConfigurationError (rejects) for an option it does not know.
 */
export async function handleResumeRequest(request: Request, options: HandleResumeRequestOptions): Promise<Response> {
  checkOptionNames('handleResumeRequest', options, OPTION_NAMES);
  const { agent, sessionId, userId, streams, onError, headers, onErrorResponse } = options;
  try {
    if (typeof sessionId !== 'string' || sessionId.trim() === '') {
      throw new InvalidInputError('The conversation id of a resume request must be a non-blank string (the route names it).');
    }
    const stored = await agent.getSession(sessionId);
    if (stored && stored.metadata.userId !== userId) return notFound(onErrorResponse);
    if (!stored) return noContent();
    const info = await streams.find(sessionId);
    if (!info || info.status === 'failed') return noContent();
    // Past a limit of the store: once ended, the history holds the whole reply; while running, the chunks kept, then why no more come.
    if (info.limitReached && (info.status === 'finished' || info.status === 'stopped')) return noContent();
    const limited =
      info.limitReached && info.status === 'running' ? { limitReached: info.limitReached, chunkCount: info.chunkCount } : undefined;
    // Its producer lost the store mid-turn, yet may have finished and stored the turn: the page holds that.
    if (info.status === 'abandoned' && (await turnStored(agent, stored, info.turnId))) return noContent();
    const read = await readStoredTurn(streams, info, onError, request.signal, limited);
    const first = read.first;
    if (limited && first === undefined && !request.signal.aborted) {
      const error = replyOutgrewStoreError(info, limited.limitReached);
      return chunkStreamResponse(chunkStream([{ type: 'error', errorText: textOf(onError, error) }]), 200, headers);
    }
    const replays =
      first?.type === 'chunk' &&
      (info.status === 'running' ||
        info.status === 'abandoned' ||
        (first.chunk as unknown as UIMessageChunk & { messageId?: string }).messageId !== undefined);
    if (!replays) {
      read.cancel();
      return noContent();
    }
    return chunkStreamResponse(read.chunks(), 200, headers);
  } catch (error) {
    const status = httpStatusOf(error);
    report(onErrorResponse, error, status);
    return jsonResponse(status, errorBody(error));
  }
}

/** A stream of `chunks`, then its end. */
function chunkStream(chunks: UIMessageChunk[]): ReadableStream<UIMessageChunk> {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
}

/** `onError`'s text for `error`, the default text when it has none or throws. */
function textOf(onError: ToUIMessageStreamOptions['onError'], error: unknown): string {
  try {
    return onError ? onError(error) : DEFAULT_UI_ERROR_TEXT;
  } catch {
    return DEFAULT_UI_ERROR_TEXT;
  }
}

/** Whether the history holds the turn: its input message with what followed it (the reply). */
async function turnStored(agent: Agent, session: AgentSession, turnId: string): Promise<boolean> {
  const history = await agent.getHistory(session);
  const at = history.findIndex((message) => message.id === turnId);
  return at !== -1 && at < history.length - 1;
}

/** The 204 by which `useChat` knows there is nothing to resume. */
export function noContent(): Response {
  return new Response(null, { status: 204, headers: { 'cache-control': 'no-store' } });
}

/**
 * The input of the conversation's running turn, as the page sent it (a user message), or undefined
 * when no turn runs (or it answers approvals, or has not had its first update yet: it never waits). The history stores a turn's input with its reply,
 * when the turn ends: add this message to the stored ones the page loads (`uiMessagesFromHistory`)
 * when they do not hold its id, so a reload mid-reply shows the question above the resumed reply.
 * Check the conversation's owner first, as for any read of it.
 * @throws BackendUnavailableError when the store cannot be reached.
 */
export async function runningTurnInput(streams: StreamStore, sessionId: string): Promise<UIMessage | undefined> {
  const info = await streams.find(sessionId);
  // No chunk yet (the turn waits for its first update): never wait for one, a page load would hang on it.
  if (info?.status !== 'running' || info.chunkCount === 0) return undefined;
  const abort = new AbortController();
  try {
    for await (const item of streams.read(info, { signal: abort.signal })) {
      if (item.type !== 'chunk') return undefined;
      const chunk = item.chunk as { type?: unknown; message?: UIMessage };
      return chunk.type === INPUT_CHUNK_TYPE ? chunk.message : undefined;
    }
    return undefined;
  } finally {
    abort.abort();
  }
}
