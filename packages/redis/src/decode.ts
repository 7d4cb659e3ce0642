import { Message, SessionStateError } from '@ctx/core';

/**
 * Decodes list entries into messages, in place: `raw` (a reply nothing else holds) becomes the
 * array of messages. Entry `i` is named `redis:<key>[i + offset]` when it is not a message.
 * @throws SessionStateError for an entry that is not JSON or not a valid message.
 */
export function decodeAll(raw: string[], key: string, offset: number): Message[] {
  const messages = raw as unknown as Message[];
  for (let i = 0; i < raw.length; i++) messages[i] = decode(raw[i]!, key, i + offset);
  return messages;
}

function decode(text: string, key: string, index: number): Message {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new SessionStateError(
      `redis:${key}[${index}]`,
      `is not valid JSON: ${(error as Error).message}. Delete the entry or clear the session.`,
      { cause: error },
    );
  }
  // Message.parse also refuses nesting deeper than ctx stores: a message read can be saved again.
  // The path is only built for an entry that fails.
  return isCommonMessage(value) || Message.isMessage(value) ? (value as Message) : Message.parse(value, `redis:${key}[${index}]`);
}

const ROLES = new Set(['system', 'user', 'assistant', 'tool']);
/**
 * Whether `value`, parsed from JSON, is a message of the common shape (text contents only, metadata
 * at most two levels deep, no field ctx does not know), which `Message.parse` accepts as it is:
 * checking that shape costs a fraction of the full check, which every other value still gets.
 */
export function isCommonMessage(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const m = value as Record<string, unknown>;
  for (const key in m) {
    const v = m[key];
    switch (key) {
      case 'id':
        if (typeof v !== 'string') return false;
        break;
      case 'role':
        if (typeof v !== 'string' || !ROLES.has(v)) return false;
        break;
      case 'createdAt':
      case 'authorName':
        if (typeof v !== 'string') return false;
        break;
      case 'contents':
        if (!Array.isArray(v)) return false;
        for (let i = 0; i < v.length; i++) if (!isTextContent(v[i])) return false;
        break;
      case 'metadata':
        if (!isShallowObject(v, 2)) return false;
        break;
      default:
        return false;
    }
  }
  return typeof m.id === 'string' && typeof m.role === 'string' && Array.isArray(m.contents);
}
/** A `{ type: 'text', text }` content and nothing more. */
function isTextContent(c: unknown): boolean {
  if (typeof c !== 'object' || c === null || Array.isArray(c)) return false;
  let text = false;
  for (const key in c as object) {
    const v = (c as Record<string, unknown>)[key];
    if (key === 'type') {
      if (v !== 'text') return false;
    } else if (key === 'text') {
      if (typeof v !== 'string') return false;
      text = true;
    } else return false;
  }
  return text;
}
/** A plain object whose values are JSON scalars or, `levels` > 1, such objects again. */
function isShallowObject(v: unknown, levels: number): boolean {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  for (const key in v as object) {
    const x = (v as Record<string, unknown>)[key];
    if (typeof x === 'object' && x !== null && !(levels > 1 && isShallowObject(x, levels - 1))) return false;
  }
  return true;
}

/** A hash table of message indexes (0 = empty), reused by every load: the loads that use it never overlap (no await inside). */
let idTable = new Int32Array(64);

/**
 * The indexes of the messages whose id an earlier message of `messages` has, or undefined when
 * every id is distinct. An open-addressing table of indexes keyed by a hash of each id's first and
 * last 16 characters, every candidate compared in full, costs several times less than a `Set` of
 * strings just parsed (whose hash V8 has not computed yet).
 */
export function repeatedIds(messages: readonly Message[]): number[] | undefined {
  const n = messages.length;
  if (n < 2) return undefined;
  let size = 64;
  while (size < n * 2) size *= 2;
  let table = idTable;
  if (table.length < size) {
    table = new Int32Array(size);
    // A table for a very long history is not kept past the call.
    if (size <= 1 << 16) idTable = table;
  } else table.fill(0, 0, size);
  const mask = size - 1;
  let repeats: number[] | undefined;
  for (let i = 0; i < n; i++) {
    const id = messages[i]!.id;
    const length = id.length;
    const edge = Math.min(length, 16);
    let h = length;
    for (let k = 0; k < edge; k++) h = Math.imul(h ^ id.charCodeAt(k), 0x9e3779b1);
    for (let k = length - edge; k < length; k++) h = Math.imul(h ^ id.charCodeAt(k), 0x85ebca6b);
    let slot = (h ^ (h >>> 15)) & mask;
    for (;;) {
      const at = table[slot]!;
      if (at === 0) {
        table[slot] = i + 1;
        break;
      }
      if (messages[at - 1]!.id === id) {
        (repeats ??= []).push(i);
        break;
      }
      slot = (slot + 1) & mask;
    }
  }
  return repeats;
}
