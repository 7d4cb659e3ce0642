import { randomBytes } from 'node:crypto';

/** A random id in the service's style, e.g. `newId('chatcmpl')` → `'chatcmpl-3f9a...'`. */
export function newId(prefix: string, separator: '-' | '_' = '_'): string {
  return `${prefix}${separator}${randomBytes(16).toString('hex')}`;
}

/** Seconds since the epoch, as the service's `created` / `created_at` fields. */
export function unixSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

const OBFUSCATION_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Random padding as the service puts in `obfuscation` on streamed events (so payload sizes do not reveal the tokens). */
export function obfuscation(): string {
  const bytes = randomBytes(4 + (randomBytes(1)[0]! % 12));
  return Array.from(bytes, (b) => OBFUSCATION_CHARS[b % OBFUSCATION_CHARS.length]).join('');
}
