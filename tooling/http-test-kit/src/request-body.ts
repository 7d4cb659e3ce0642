import type { IncomingMessage } from 'node:http';
import { HttpError } from './http-error.js';

/** The body size `readBody` accepts when no `maxBytes` is given: 32 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;

/** Options of `readBody` and `readJsonBody`. */
export interface ReadBodyOptions {
  /** Largest body accepted, in bytes. Default `DEFAULT_MAX_BODY_BYTES` (32 MiB). */
  maxBytes?: number;
}

/**
 * Reads the whole request body as UTF-8 text (`''` when there is none).
 * Rejects with a 413 `HttpError` as soon as the body grows past `maxBytes`; the rest of the body is
 * read and discarded, so the server can still send its reply on the same connection.
 */
export function readBody(req: IncomingMessage, options: ReadBodyOptions = {}): Promise<string> {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BODY_BYTES;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      if (tooLarge) return;
      size += chunk.length;
      if (size > maxBytes) {
        tooLarge = true;
        chunks.length = 0;
        reject(new HttpError(413, `The request body is larger than ${maxBytes} bytes, the most this test server accepts.`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!tooLarge) resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', reject);
  });
}

/** A request body after JSON parsing. */
export interface JsonBody {
  /** The parsed value; `undefined` when the body was empty or was not valid JSON. */
  value: unknown;
  /** Set when the body was not valid JSON: a 400 whose message names the parse error. */
  invalid?: HttpError;
}

/**
 * Parses a request body as JSON. An empty body (zero bytes) gives `{ value: undefined }`; anything
 * else that is not valid JSON (whitespace only included) gives `invalid`, a 400 `HttpError` the
 * server can send as it is or replace with its service's own wording.
 */
export function parseJsonBody(raw: string): JsonBody {
  if (raw.length === 0) return { value: undefined };
  try {
    return { value: JSON.parse(raw) as unknown };
  } catch (error) {
    return {
      value: undefined,
      invalid: new HttpError(400, `The request body is not valid JSON: ${(error as Error).message}`),
    };
  }
}

/** `readBody` then `parseJsonBody`. Rejects with a 413 `HttpError` when the body is too large. */
export async function readJsonBody(req: IncomingMessage, options: ReadBodyOptions = {}): Promise<JsonBody> {
  return parseJsonBody(await readBody(req, options));
}
