import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson as sendJsonReply, type ErrorFormat } from '@ctx/http-test-kit';
import type { RecordedRequest, ScriptedReplay } from './types.js';

/** One request being answered: the node objects, its log entry and a signal for client disconnects. */
export interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  recorded: RecordedRequest;
  /** Aborted when the client goes away before the reply is complete. */
  signal: AbortSignal;
  requestId: string;
  /**
   * The id of the completion or response this exchange answers with: a fresh one in the service's
   * style (`newId(prefix, separator)`), or the same one every time with the server's `reuseIds`.
   */
  serviceId: (prefix: 'chatcmpl' | 'resp', separator?: '-' | '_') => string;
}

/** The OpenAI error body fields. */
export interface ErrorFields {
  message: string;
  type?: string;
  param?: string | null;
  code?: string | null;
}

/** The error `type` the service uses for a status when the script does not give one. */
export function defaultErrorType(status: number): string {
  if (status === 429) return 'requests';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** The error `code` the service uses for a status when the script does not give one. */
export function defaultErrorCode(status: number): string | null {
  if (status === 401) return 'invalid_api_key';
  if (status === 429) return 'rate_limit_exceeded';
  return null;
}

/** Headers the service sends on every reply. */
function commonHeaders(ex: Exchange): Record<string, string> {
  return { 'x-request-id': ex.requestId, 'openai-version': '2020-10-01', 'openai-processing-ms': '1' };
}

/** The service's error body: `{ error: { message, type, param, code } }` with defaults taken from the status. */
export function openAIErrorBody(status: number, fields: ErrorFields): { error: Required<ErrorFields> } {
  return {
    error: {
      message: fields.message,
      type: fields.type ?? (fields.code === 'insufficient_quota' ? 'insufficient_quota' : defaultErrorType(status)),
      param: fields.param ?? null,
      code: fields.code === undefined ? defaultErrorCode(status) : fields.code,
    },
  };
}

/** `openAIErrorBody` for a status and message only, for the replies `@ctx/http-test-kit` sends itself. */
export const openAIErrorFormat: ErrorFormat = (status, message) => openAIErrorBody(status, { message });

/** Sends a JSON body with the given status and the service's common headers. */
export function sendJson(ex: Exchange, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (isGone(ex)) return;
  sendJsonReply(ex.res, status, body, { ...commonHeaders(ex), ...headers });
}

/** Sends `{ error: { message, type, param, code } }` with defaults taken from the status. */
export function sendError(ex: Exchange, status: number, fields: ErrorFields, headers: Record<string, string> = {}): void {
  sendJson(ex, status, openAIErrorBody(status, fields), headers);
}

/** Starts a `text/event-stream` reply. */
export function startEventStream(ex: Exchange): void {
  ex.res.writeHead(200, {
    ...commonHeaders(ex),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  ex.res.flushHeaders();
}

/** Writes one SSE message (`event:` line only when `event` is given). */
export function writeEvent(ex: Exchange, data: string, event?: string): void {
  if (isGone(ex)) return;
  ex.res.write(`${event === undefined ? '' : `event: ${event}\n`}data: ${data}\n\n`);
}

/** Writes what was queued so far, then drops the connection without finishing the reply. */
export function dropConnection(ex: Exchange): void {
  if (isGone(ex)) return;
  ex.res.write('', () => ex.res.socket?.destroy());
}

/** Whether the client has gone or the reply was already finished. */
export function isGone(ex: Exchange): boolean {
  return ex.signal.aborted || ex.res.writableEnded || ex.res.destroyed;
}

/** Resolves after `ms`, or early (with `false`) when `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** A non-streaming broken reply: a body cut off mid-way (`'truncated'`) or a 200 that is not JSON (`'garbage'`). */
export function sendMalformedJson(ex: Exchange, mode: 'truncated' | 'garbage'): void {
  if (isGone(ex)) return;
  const partial = '{"id":"broken","object":"broken","output":[{"type":"message","role":"assis';
  ex.res.writeHead(200, {
    ...commonHeaders(ex),
    'content-type': 'application/json',
    'content-length': String(mode === 'truncated' ? partial.length + 200 : partial.length),
  });
  if (mode === 'truncated') {
    ex.res.write(partial);
    dropConnection(ex);
  } else {
    ex.res.end(partial);
  }
}

/**
 * Sends recorded traffic as is: a JSON body with its status, or the recorded events framed as the
 * service frames `api`'s stream (Chat Completions: `data:` frames and `data: [DONE]`; Responses:
 * `event: <type>` + `data:` frames, no `[DONE]`).
 */
export function sendReplay(ex: Exchange, replay: ScriptedReplay['replay'], api: 'chat' | 'responses'): void {
  if ('body' in replay) {
    sendJson(ex, replay.status, replay.body, replay.headers);
    return;
  }
  startEventStream(ex);
  if ('sse' in replay) {
    if (!isGone(ex)) ex.res.end(replay.sse);
    return;
  }
  for (const event of replay.events) {
    writeEvent(ex, JSON.stringify(event), api === 'responses' ? String(event.type) : undefined);
  }
  if (api === 'chat') writeEvent(ex, '[DONE]');
  if (!isGone(ex)) ex.res.end();
}
