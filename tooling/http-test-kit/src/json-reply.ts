import type { ServerResponse } from 'node:http';

/**
 * A service's error body for a status and a message, e.g. Azure AI Search's
 * `(status, message) => ({ error: { code: '', message } })`. Each server keeps its own.
 */
export type ErrorFormat = (status: number, message: string) => unknown;

/**
 * Sends `body` as JSON with `status`: `headers` first, then `content-type: application/json` (unless
 * `headers` names another content type) and the `content-length`. Returns `false` and sends nothing
 * when the reply was already finished or the connection is gone. Throws a `TypeError` when `body`
 * has no JSON form (`undefined`, a function).
 */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): boolean {
  const text = JSON.stringify(body) as string | undefined;
  if (text === undefined) throw new TypeError(`sendJson: the ${status} reply body has no JSON form (${typeof body}).`);
  if (res.writableEnded || res.destroyed) return false;
  res.writeHead(status, {
    ...headers,
    'content-type': headers['content-type'] ?? 'application/json',
    'content-length': String(Buffer.byteLength(text)),
  });
  res.end(text);
  return true;
}

/** Sends `format(status, message)` as JSON with `status` (see `sendJson`). */
export function sendJsonError(
  res: ServerResponse,
  status: number,
  message: string,
  format: ErrorFormat,
  headers: Record<string, string> = {},
): boolean {
  return sendJson(res, status, format(status, message), headers);
}
