import { ConfigurationError } from '../errors.js';

const HEX = '0123456789ABCDEF';
const encoder = new TextEncoder();

/** Options of `encodeIdSegment`. */
export interface IdSegmentOptions {
  /** Characters kept as they are (one character per test). Default: ASCII letters, digits, `.`, `_`, `-`. */
  keep?: RegExp;
  /** The escape character; must not be kept. Default `%`. */
  escape?: string;
}

/**
 * Encodes an id (a session, source or message id) for use inside a storage key or item id,
 * injectively: kept characters stay, every other one becomes `<escape>XX` per UTF-8 byte, and a
 * lone UTF-16 surrogate becomes `<escape>uXXXX`. So no id can reach another id's key, a separator,
 * a hash tag or a glob pattern, whatever it contains. For backend authors; bound the length
 * yourself (e.g. hash encodings past your store's limit).
 */
export function encodeIdSegment(id: string, options: IdSegmentOptions = {}): string {
  const keep = options.keep ?? /[A-Za-z0-9._-]/;
  const marker = options.escape ?? '%';
  if (keep.test(marker))
    throw new ConfigurationError(`encodeIdSegment: the escape character "${marker}" must not be a kept character; choose another escape.`);
  let out = '';
  for (let i = 0; i < id.length; i++) {
    const ch = id[i]!;
    if (keep.test(ch)) {
      out += ch;
      continue;
    }
    const code = id.charCodeAt(i);
    const next = id.charCodeAt(i + 1);
    if (code >= 0xd800 && code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      out += escapeBytes(id.slice(i, i + 2), marker);
      i++;
    } else if (code >= 0xd800 && code <= 0xdfff) {
      out += `${marker}u${code.toString(16).toUpperCase().padStart(4, '0')}`;
    } else {
      out += escapeBytes(ch, marker);
    }
  }
  return out;
}

function escapeBytes(text: string, marker: string): string {
  let out = '';
  for (const byte of encoder.encode(text)) out += `${marker}${HEX[byte >> 4]}${HEX[byte & 15]}`;
  return out;
}
