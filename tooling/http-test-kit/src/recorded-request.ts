import type { IncomingMessage } from 'node:http';

/** A JSON object as a request body is parsed into. */
export type JsonObject = Record<string, unknown>;

/** Whether `value` is a JSON object (not `null`, not an array). */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** One HTTP request a test server received, recorded for tests to inspect. */
export interface RecordedHttpRequest {
  /** Upper-case method, e.g. `'POST'`. */
  method: string;
  /** The path without the query string, as sent (not percent-decoded), e.g. `'/v1/chat/completions'`. */
  path: string;
  /** Query parameters, names and values decoded (the last value wins when a name repeats). */
  query: Record<string, string>;
  /** Request headers with lower-case names; repeated headers are joined with `', '`. */
  headers: Record<string, string>;
  /** The parsed JSON body when it is a JSON object, else `undefined`. */
  body: JsonObject | undefined;
}

/** The headers of `req` as one string per lower-case name (repeated headers joined with `', '`). */
export function headerRecord(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

/**
 * Records `req` with its parsed body (kept only when it is a JSON object). Servers add their own
 * fields (route, operation, status) by spreading the result into their record type.
 */
export function recordRequest(req: IncomingMessage, body: unknown): RecordedHttpRequest {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  return {
    method: (req.method ?? 'GET').toUpperCase(),
    path: url.pathname,
    query: Object.fromEntries(url.searchParams),
    headers: headerRecord(req),
    body: isJsonObject(body) ? body : undefined,
  };
}
