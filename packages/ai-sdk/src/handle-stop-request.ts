import { type Agent, errorBody, httpStatusOf, InvalidInputError, type StreamStatus, type StreamStore } from '@ctx/core';
import { checkOptionNames, optionNames } from '@ctx/core/backend';
import { noContent } from './handle-resume-request.js';
import { jsonResponse, notFound, report } from './route-responses.js';

/** The default `waitMs` of `handleStopRequest`: how long it waits for the stopped reply to be stored. */
export const DEFAULT_STOP_WAIT_MS = 10_000;

/** Options of `handleStopRequest`. */
export interface HandleStopRequestOptions {
  /** The agent of the POST route (`handleChatRequest`), with its `sessionStore`. */
  agent: Agent;
  /** The conversation's id, from the route (`/api/chat/:id/stop`). */
  sessionId: string;
  /** The signed-in user, from your authentication (never from the request). */
  userId: string;
  /** The stream store the POST route writes (`handleChatRequest`'s `streams`). */
  streams: StreamStore;
  /**
   * How long the answer waits for the stopped turn to end (its reply stored), in ms. Default
   * 10000 (`DEFAULT_STOP_WAIT_MS`); past it the answer is a 202 and the turn still ends.
   */
  waitMs?: number;
  /** Called with every failure answered with a JSON error, and its status. A throw here is ignored. */
  onErrorResponse?: (error: unknown, status: number) => void;
}

/** The JSON body of `handleStopRequest`'s 200 and 202. */
export interface StopAnswer {
  /** The turn asked to stop (the id of its input message). */
  turnId: string;
  /**
   * Where its stream is now: `stopped` (what was said is stored, marked `metadata.stopped`),
   * `finished` (it ended before the stop reached it), `failed`, `abandoned`, or `running` when it
   * did not end within `waitMs` (202).
   */
  status: StreamStatus;
}

const OPTION_NAMES = optionNames<HandleStopRequestOptions>()({
  agent: true,
  sessionId: true,
  userId: true,
  streams: true,
  waitMs: true,
  onErrorResponse: true,
});

/**
 * Stops the conversation's running turn, on whichever instance runs it (through `streams`):
 * `return handleStopRequest(request, { agent, sessionId, userId, streams })` in a `POST
 * .../:id/stop` route, called by the page's stop button. The run is aborted, what was said so far is
 * stored as the reply (the last assistant message with `metadata.stopped: true`), and the pages
 * reading the turn get its `finish`; a reload then shows the same text. Needed because closing the
 * request is no stop once turns are resumable (and in `ai` 7 a client abort is a disconnect).
 *
 * The conversation is checked as the POST route checks it (another user's: 404). Answers 204 when
 * no turn runs, else waits (at most `waitMs`) for the turn to end and answers 200 with a
 * `StopAnswer` (202 when it did not end in time). Never rejects for what a request holds.
 * @throws ConfigurationError (rejects) for an option it does not know.
 */
export async function handleStopRequest(request: Request, options: HandleStopRequestOptions): Promise<Response> {
  checkOptionNames('handleStopRequest', options, OPTION_NAMES);
  const { agent, sessionId, userId, streams, waitMs = DEFAULT_STOP_WAIT_MS, onErrorResponse } = options;
  try {
    if (typeof sessionId !== 'string' || sessionId.trim() === '') {
      throw new InvalidInputError('The conversation id of a stop request must be a non-blank string (the route names it).');
    }
    const stored = await agent.getSession(sessionId);
    if (stored && stored.metadata.userId !== userId) return notFound(onErrorResponse);
    if (!stored) return noContent();
    const info = await streams.find(sessionId);
    if (info?.status !== 'running') return noContent();
    if (!(await streams.requestStop({ sessionId, turnId: info.turnId }))) return noContent();
    const signal = AbortSignal.any([AbortSignal.timeout(waitMs), request.signal]);
    let status: StreamStatus = 'running';
    for await (const item of streams.read(info, { fromIndex: info.chunkCount, signal })) {
      if (item.type === 'end') status = item.status;
    }
    const answer: StopAnswer = { turnId: info.turnId, status };
    return jsonResponse(status === 'running' ? 202 : 200, answer as unknown as Record<string, unknown>);
  } catch (error) {
    const status = httpStatusOf(error);
    report(onErrorResponse, error, status);
    return jsonResponse(status, errorBody(error));
  }
}
