import { randomBytes } from 'node:crypto';

/** A random id in the service's style, e.g. `newId('chatcmpl')` → `'chatcmpl-3f9a...'`. */
export function newId(prefix: string, separator: '-' | '_' = '_'): string {
  return `${prefix}${separator}${randomBytes(16).toString('hex')}`;
}

/** Seconds since the epoch, as the service's `created` / `created_at` fields. */
export function unixSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
