import { type ErrorBody, InvalidInputError } from '@ctx/core';

/** Told of every failure answered with a JSON error, and its status. */
export type OnErrorResponse = ((error: unknown, status: number) => void) | undefined;

/** The 404 of a conversation the user does not own: the same answer as for one that does not exist. */
export function notFound(onErrorResponse: OnErrorResponse): Response {
  const error = new InvalidInputError('No such conversation: the user has none with this id.');
  report(onErrorResponse, error, 404);
  return jsonResponse(404, { error: { type: 'NotFound', message: error.message } });
}

/** Calls `onErrorResponse`, whose failure changes no answer. */
export function report(onErrorResponse: OnErrorResponse, error: unknown, status: number): void {
  try {
    onErrorResponse?.(error, status);
  } catch {
    // the answer does not depend on the callback
  }
}

/** A JSON answer that is never cached, with `Retry-After` when the error body gives one. */
export function jsonResponse(status: number, body: ErrorBody | Record<string, unknown>): Response {
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' };
  const retryAfter = (body as ErrorBody).error?.retryAfter;
  if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
  return new Response(JSON.stringify(body), { status, headers });
}
