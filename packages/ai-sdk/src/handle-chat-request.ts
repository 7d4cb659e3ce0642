import { checkOptionNames, optionNames } from '@ctx/core/backend';
import {
  type Agent,
  type AgentRunOptions,
  type AgentRunStream,
  type ChatResponseUpdate,
  ConcurrencyError,
  errorBody,
  httpStatusOf,
  InvalidInputError,
  type Message,
  type StreamStore,
  type ToolApproval,
} from '@ctx/core';
import { jsonResponse, notFound, report } from './route-responses.js';
import { runInputFromUIMessages } from './run-input-from-ui-messages.js';
import { ReplySoFar, storeStoppedReply } from './stopped-reply.js';
import { produceTurn, readStoredTurn } from './turn-stream.js';
import type { UIMessage } from './ui-message.js';
import {
  chunkStreamResponse,
  type ToUIMessageStreamOptions,
  toUIMessageStreamResponse,
  uiMessageStreamResponse,
} from './ui-message-stream.js';

/** The default `maxBodyBytes` of `handleChatRequest`: 32 MiB, twice the agent's default input limit. */
export const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;

/** Options of `handleChatRequest`: whose conversation, and how the stream is sent. */
export interface HandleChatRequestOptions extends ToUIMessageStreamOptions {
  /** The agent, with a `sessionStore`: the run is hosted (loaded, run and saved by the agent). */
  agent: Agent;
  /**
   * The conversation's id (the session id), from the route (`/api/chat/:id`). An id the store does
   * not hold starts a conversation owned by `userId`. Let the server make new ids (`generateId()`).
   */
  sessionId: string;
  /** The signed-in user, from your authentication (never from the request). */
  userId: string;
  /**
   * The largest request body read, in bytes: a larger one is a 413 (`limit: 'maxBodyBytes'`), read
   * no further than the limit. Default 32 MiB (`DEFAULT_MAX_BODY_BYTES`). The agent's `limits`
   * apply to the message itself.
   */
  maxBodyBytes?: number;
  /** The largest number of UI messages in the body (`runInputFromUIMessages`). Default 10000. */
  maxMessages?: number;
  /** More options of the run: model options, the run's providers, a signal that aborts it. */
  run?: Pick<AgentRunOptions, 'options' | 'contextProviders' | 'signal'>;
  /** More headers of the stream's response (they win over the protocol's of the same name). */
  headers?: Record<string, string>;
  /**
   * Called with every failure answered with a JSON error instead of a stream, and its status: log
   * the 5xx here (their body says nothing of the cause). A throw here is ignored.
   */
  onErrorResponse?: (error: unknown, status: number) => void;
  /**
   * Where each streamed turn's UI chunks are kept (`InMemoryStreamStore`, or `RedisStreamStore` from
   * `@ctx/redis` so any instance can serve a resume): a reload resumes the reply
   * (`handleResumeRequest`), a stop request ends it (`handleStopRequest`), and a page that goes away
   * no longer aborts the run. The same message sent again while its turn runs joins that turn's
   * stream (the model is called once); a message of another turn while one runs is a 409. Default:
   * none (a page that goes away aborts the run, and nothing can resume it).
   */
  streams?: StreamStore;
  /**
   * Called with each failure of `streams` while a turn streams (the store unreachable, a stream
   * over its limits): the reply goes on to the page that asked, and is stored as usual; only
   * resuming it may miss chunks. Log it here. A throw here is ignored.
   */
  onStreamStoreError?: (error: unknown) => void;
}

const OPTION_NAMES = optionNames<HandleChatRequestOptions>()({
  agent: true,
  sessionId: true,
  userId: true,
  maxBodyBytes: true,
  maxMessages: true,
  run: true,
  headers: true,
  onErrorResponse: true,
  streams: true,
  onStreamStoreError: true,
  approvals: true,
  onError: true,
  messageMetadata: true,
});

/**
 * Answers a `useChat` POST request with a ctx run, or refuses it with a plain 4xx before the first
 * byte: `return handleChatRequest(request, { agent, sessionId, userId })` in any route with web
 * `Request` and `Response` (Next.js route handlers, Hono, Remix, Bun, Deno, workers).
 *
 * In order: the body is read (at most `maxBodyBytes`, else 413) and parsed (not JSON, or not an
 * object: 400); the session is read and a conversation of another user (or of no user) is a 404,
 * as if it did not exist; the body's last UI message is read (`runInputFromUIMessages`: a new user
 * message, or answers to approvals; malformed: 400); then the run starts hosted
 * (`agent.runStream(input, { sessionId, userId, approvals })`, `approvals` only when the page sent
 * some, so a message sent twice at once is one turn, run once, whose reply both requests stream)
 * and the response waits for its first update. Every check the run makes before the model is called fails it before that update, and is
 * answered with `httpStatusOf` and `errorBody` (JSON `{ error: { type, message, ... } }`): a message
 * over the agent's `limits` (413), an input reusing the id of another stored message (400), an
 * approval for a call that does not wait (400), a turn running in another request (409 with
 * `Retry-After`), a backend down (503). Once the first update is there, the run streams as
 * `toUIMessageStreamResponse` sends it (with this call's stream options); a failure after that is
 * the stream's `error` chunk.
 *
 * With `streams`, the turn's chunks are kept in that store as they stream (see `streams`): the
 * same message sent again while its turn runs joins its stream, a message of another turn while one
 * runs is a 409 (`ConcurrencyError`, `turnRunning`), and a page that goes away leaves the run going
 * for `handleResumeRequest`; only `handleStopRequest` stops it.
 *
 * The page's `useChat` gets a refusal as its `error`: `error.message` is the JSON body's text
 * (`ai` 7 also sets `error.statusCode`). Never rejects for what a request holds: every such failure is a
 * response. @throws ConfigurationError (rejects) for an option it does not know, naming it.
 */
export async function handleChatRequest(request: Request, options: HandleChatRequestOptions): Promise<Response> {
  checkOptionNames('handleChatRequest', options, OPTION_NAMES);
  const {
    agent,
    sessionId,
    userId,
    maxBodyBytes = DEFAULT_MAX_BODY_BYTES,
    maxMessages,
    run,
    headers,
    onErrorResponse,
    streams,
    onStreamStoreError,
    ...streamOptions
  } = options;
  let stream: AgentRunStream | undefined;
  try {
    if (typeof sessionId !== 'string' || sessionId.trim() === '') {
      throw new InvalidInputError('The conversation id of a chat request must be a non-blank string (the route names it).');
    }
    const body = await readJsonBody(request, maxBodyBytes);
    const stored = await agent.getSession(sessionId);
    if (stored && stored.metadata.userId !== userId) return notFound(onErrorResponse);
    const { input, approvals } = runInputFromUIMessages(body.messages, {
      pendingApprovals: stored?.pending?.approvals ?? [],
      ...(maxMessages !== undefined ? { maxMessages } : {}),
    });
    if (streams) {
      const turnId = input[0]?.id ?? (body.messages as Array<{ id: string }>).at(-1)!.id;
      const page = input.length > 0 ? ((body.messages as unknown[]).at(-1) as UIMessage) : undefined;
      return await streamedTurn({ ...options, streams }, { sessionId, turnId }, { input, approvals, page });
    }
    // Approvals only when there are some: a new message is then a turn the agent runs once, however often it is sent.
    stream = agent.runStream(input, { ...run, sessionId, userId, ...(approvals.length > 0 ? { approvals } : {}) });
    const updates = stream[Symbol.asyncIterator]();
    // The run's own refusals (limits, message ids, approvals, a running turn) come before its first update.
    const first = await updates.next();
    return toUIMessageStreamResponse(replayed(stream, updates, first), { ...streamOptions, ...(headers ? { headers } : {}) });
  } catch (error) {
    stream?.response.catch(() => {});
    const status = httpStatusOf(error);
    report(onErrorResponse, error, status);
    return jsonResponse(status, errorBody(error));
  }
}

/** How many times a double submit opens the turn's stream again when the stream it joined ended before its first chunk. */
const JOIN_ATTEMPTS = 3;

/**
 * The turn with a stream store: joins the turn's running stream (a double submit), or opens it and
 * runs the turn, streaming its chunks to this request and into the store.
 */
async function streamedTurn(
  options: HandleChatRequestOptions & { streams: StreamStore },
  ref: { sessionId: string; turnId: string },
  turn: { input: Message[]; approvals: ToolApproval[]; page: UIMessage | undefined },
): Promise<Response> {
  const { input, approvals } = turn;
  const { agent, userId, run, headers, streams, onStreamStoreError } = options;
  const { approvals: approvalMode, onError, messageMetadata } = options;
  const streamOptions: ToUIMessageStreamOptions = {
    ...(approvalMode !== undefined ? { approvals: approvalMode } : {}),
    ...(onError !== undefined ? { onError } : {}),
    ...(messageMetadata !== undefined ? { messageMetadata } : {}),
  };
  for (let attempt = 0; attempt < JOIN_ATTEMPTS; attempt++) {
    const opened = await streams.open(ref);
    if (!opened.created) {
      const read = await readStoredTurn(streams, ref, onError);
      // A stream that ended before its first chunk was refused (or replaced): open the turn again.
      if (read.first === undefined || read.first.type === 'end') {
        read.cancel();
        continue;
      }
      return chunkStreamResponse(read.chunks(), 200, headers);
    }
    const { writer } = opened;
    let stream: AgentRunStream | undefined;
    try {
      const reply = new ReplySoFar();
      stream = agent.runStream(input, { ...run, sessionId: ref.sessionId, userId, ...(approvals.length > 0 ? { approvals } : {}) });
      const updates = stream[Symbol.asyncIterator]();
      // A stop ends the run's stream, which aborts the run's own signal: the model call and a tool
      // running now end at once (the tool's signal aborts), with no signal of this request's own
      // to make and combine with the caller's. Once the model's last answer is in (the turn is being
      // stored), a stop changes nothing and the turn ends finished.
      const stop = () => {
        if (reply.answered) return;
        void updates.return?.()?.catch(() => {});
      };
      if (writer.stopSignal.aborted) stop();
      else {
        writer.stopSignal.addEventListener('abort', stop, { once: true });
        const off = () => writer.stopSignal.removeEventListener('abort', stop);
        stream.response.then(off, off);
      }
      let first: IteratorResult<ChatResponseUpdate>;
      try {
        first = await updates.next();
      } catch (error) {
        // Stopped before its first update: the reply is empty and stored as any stopped one, not an error.
        if (!writer.stopSignal.aborted) throw error;
        first = { done: true, value: undefined };
      }
      const storeStopped = () =>
        storeStoppedReply({ agent, sessionId: ref.sessionId, userId, input, approvals, run, messages: reply.stopped() });
      const chunks = produceTurn({
        stream,
        updates,
        first,
        writer,
        reply,
        storeStopped,
        streamOptions,
        onStoreError: onStreamStoreError,
        input: turn.page,
      });
      return uiMessageStreamResponse(chunks, 200, headers);
    } catch (error) {
      stream?.response.catch(() => {});
      await writer.close(writer.stopSignal.aborted ? 'stopped' : 'failed').catch(() => writer.release());
      throw error;
    }
  }
  throw new ConcurrencyError(
    ref.sessionId,
    `The turn "${ref.turnId}" of conversation "${ref.sessionId}" kept ending before its first chunk in other requests; send the message again.`,
    { turnRunning: true },
  );
}

/**
 * The request's body as a JSON object, read up to `max` bytes.
 * @throws InvalidInputError (`limit: 'maxBodyBytes'`) for a larger body, and for one that is not a
 *   UTF-8 JSON object.
 */
async function readJsonBody(request: Request, max: number): Promise<Record<string, unknown>> {
  const tooLarge = (size: string) =>
    new InvalidInputError(
      `The request body is ${size}, over maxBodyBytes (${max} bytes). Send only the new message (prepareSendMessagesRequest), or raise maxBodyBytes.`,
      { limit: 'maxBodyBytes' },
    );
  const declared = Number(request.headers.get('content-length') ?? Number.NaN);
  if (declared > max) throw tooLarge(`${declared} bytes`);
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (request.body) {
    const reader = request.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > max) {
        await reader.cancel().catch(() => {});
        throw tooLarge(`at least ${size} bytes`);
      }
      chunks.push(value);
    }
  }
  const notJson = (why: string) =>
    new InvalidInputError(`The request body ${why}; a useChat request is JSON { "messages": [UIMessage, ...] }.`);
  let body: unknown;
  try {
    const decoder = new TextDecoder('utf-8', { fatal: true });
    body = JSON.parse(chunks.map((chunk) => decoder.decode(chunk, { stream: true })).join('') + decoder.decode());
  } catch {
    throw notJson(size === 0 ? 'is empty' : 'is not JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw notJson('is not a JSON object');
  return body as Record<string, unknown>;
}

/** The run as a stream again, its first update (already read) first. */
function replayed(
  stream: AgentRunStream,
  updates: AsyncIterator<ChatResponseUpdate>,
  first: IteratorResult<ChatResponseUpdate>,
): AgentRunStream {
  let held: IteratorResult<ChatResponseUpdate> | undefined = first;
  // Not an async function: a read returns the run's own promise, with no promise of its own around it.
  const iterator: AsyncIterator<ChatResponseUpdate> = {
    next: () => {
      if (held === undefined) return updates.next();
      const next = held;
      held = undefined;
      return Promise.resolve(next);
    },
    return: async (value?: unknown) => {
      held = undefined;
      return (await updates.return?.(value)) ?? { done: true, value: undefined };
    },
  };
  return { response: stream.response, [Symbol.asyncIterator]: () => iterator };
}
