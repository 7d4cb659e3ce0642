import { generateId, type JsonObject, type Message } from '@ctx/core';
import { expect } from 'vitest';

/**
 * 4096 characters that do not compress (a fixed pseudo-random sequence of printable ASCII and
 * two-byte and three-byte characters, about 5.8 KB of UTF-8): an index that only holds a 4 KB id
 * because it compresses `x` repeated fails on it.
 */
function incompressibleId(length: number): string {
  const pool = [
    ...'!#$&()+,-.0123456789;=@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]^_`abcdefghijklmnopqrstuvwxyz~',
    ...'äöüßéèçñøåæœ',
    ...'αβγδλπσωжзщяשאע',
    ...'中文字符会话編號한국어',
  ];
  let seed = 0x2545f491;
  let out = '';
  for (let i = 0; i < length; i++) {
    // xorshift32: the same id on every run, with no pattern a compressor finds.
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    out += pool[(seed >>> 0) % pool.length];
  }
  return out;
}

/**
 * Session ids that break naive backends: glob and key-separator characters (`*`, `:`), Redis Cluster
 * hash tags (`{}`, `a{b}c`), line breaks (a leading one, a CRLF), a 4 KB id and its 4095-character prefix (catches
 * truncation), 4096 incompressible characters (catches an index that only fits compressible ids),
 * NUL (catches C strings: `nul\0` next to `nul`, and `\0` alone), lone surrogates (catch a lossy
 * UTF-8 conversion: `\uD800` and `\uDBFF` both become U+FFFD), emoji, right-to-left text and a bidi
 * override, path traversal, `/` next to its URL-encoded form, `%` and quotes, letter case, padding
 * spaces and the two Unicode spellings of `é` (catches normalization). Every id is distinct from
 * every other, so a store must keep all of them apart. None is blank: those are
 * `BLANK_SESSION_IDS`, which every backend refuses.
 */
export const HOSTILE_SESSION_IDS: readonly string[] = Object.freeze([
  '*',
  ':',
  '{}',
  'a{b}c',
  '\nx',
  'line one\r\nline two',
  'x'.repeat(4096),
  'x'.repeat(4095),
  incompressibleId(4096),
  '\u0000',
  'nul\u0000',
  'nul',
  '\uD800',
  '\uDBFF',
  'x\uDC00y',
  '🦜💬 session',
  'محادثة-עברית',
  '\u202Egnp.exe',
  '../../etc/passwd',
  '..\\..\\windows\\win.ini',
  'a/b',
  'a%2Fb',
  `100% "double" 'single' \`back\``,
  '%s%n%d',
  'CaseSensitive',
  'casesensitive',
  ' padded ',
  'padded',
  '\u00e9',
  'e\u0301',
]);

/**
 * Session ids every backend must refuse with a `ConfigurationError`: empty, and whitespace only
 * (spaces, a tab and a line break, a no-break space).
 */
export const BLANK_SESSION_IDS: readonly string[] = Object.freeze(['', ' ', '\t\n', '\u00a0']);

/**
 * Awaits `promise` and checks that it rejected with an error `is` accepts (e.g.
 * `SessionStateError.isInstance`); returns that error. `what` names the call in the failure message.
 */
export async function expectRejection(promise: Promise<unknown>, is: (error: unknown) => boolean, what: string): Promise<unknown> {
  const outcome = await promise.then(
    (value) => ({ resolved: true as const, value }),
    (error: unknown) => ({ resolved: false as const, error }),
  );
  if (outcome.resolved) throw new Error(`Expected ${what} to throw, but it resolved to ${safeJson(outcome.value)}.`);
  expect(is(outcome.error), `${what} threw ${String(outcome.error)}`).toBe(true);
  return outcome.error;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return typeof value;
  }
}

/** A short, printable form of a session id for assertion messages. */
export function describeId(id: string): string {
  const shown = JSON.stringify(id);
  return shown.length <= 40 ? shown : `${shown.slice(0, 30)}…" (${id.length} chars)`;
}

/** A base64 string of 16 bytes (0x00..0x0f), for data content. */
const SAMPLE_BASE64 = 'AAECAwQFBgcICQoLDA0ODw==';

/** Opaque compaction content in the service's style (base64url, 8 KB), for a `compaction` hosted item. */
const SAMPLE_COMPACTION = `gAAAAAB${Array.from({ length: 8192 }, (_, i) => 'AZaz09-_'[(i * 7 + (i >> 3)) % 8]).join('')}`;

/**
 * Fresh messages (new ids on every call) covering every content kind and every optional field:
 * text (including empty text), data by `uri` and by base64 `data`, reasoning with `id` and
 * `encrypted`, hosted tool items (a web search, and a service compaction item with 8 KB of opaque
 * content, as kept with `store: false`), function calls (including empty arguments), function results with nested JSON,
 * string, number, null and array results and `isError` true and false, an empty `contents` list,
 * `authorName`, `createdAt` present and absent, and `metadata` with nested JSON and unicode.
 * The list starts with a system message, so a history window never begins with a tool result.
 */
export function messagesOfEveryKind(): Message[] {
  const nested: JsonObject = {
    numbers: [0, -1, 2.5, 1e21, -0.000125, 9007199254740991],
    flags: [true, false, null],
    text: ['', 'plain', '🦜 مرحبا "quoted" \\ back\\slash\nnew line\ttab'],
    deep: { a: { b: { c: [{ d: [[], {}] }] } } },
  };
  return [
    { id: generateId(), role: 'system', contents: [{ type: 'text', text: 'You answer tersely.' }], createdAt: '2024-02-29T23:59:59.999Z' },
    {
      id: generateId(),
      role: 'user',
      authorName: 'Zoë',
      createdAt: '2025-01-01T00:00:00.000Z',
      metadata: { nested, client: 'web', emptyObject: {}, emptyList: [] },
      contents: [
        { type: 'text', text: 'Look at these, please.' },
        { type: 'data', mediaType: 'image/png', uri: 'https://example.com/a%20cat.png?size=large&lang=fr#top', name: 'cat.png' },
        { type: 'data', mediaType: 'application/octet-stream', data: SAMPLE_BASE64 },
      ],
    },
    {
      id: generateId(),
      role: 'assistant',
      authorName: 'planner',
      contents: [
        { type: 'reasoning', text: 'I need the weather first.', id: 'rs_001', encrypted: 'gAAAAABl-opaque+/=' },
        { type: 'reasoning', text: '' },
        { type: 'text', text: 'Let me check.' },
        { type: 'function-call', callId: 'call_weather', name: 'get_weather', arguments: '{"city":"Zürich","days":[1,2]}' },
        { type: 'function-call', callId: 'call_noop', name: 'noop', arguments: '' },
      ],
    },
    {
      id: generateId(),
      role: 'tool',
      createdAt: '2025-01-01T00:00:01.000Z',
      contents: [
        {
          type: 'function-result',
          callId: 'call_weather',
          name: 'get_weather',
          result: { temperature: -3.5, tags: ['snow', null], nested },
        },
        { type: 'function-result', callId: 'call_noop', name: 'noop', result: null, isError: false },
      ],
    },
    {
      id: generateId(),
      role: 'tool',
      contents: [
        { type: 'function-result', callId: 'call_fail', name: 'lookup', result: { error: 'upstream timed out', code: 504 }, isError: true },
        { type: 'function-result', callId: 'call_text', result: 'a plain string result' },
        { type: 'function-result', callId: 'call_number', result: 42 },
        { type: 'function-result', callId: 'call_list', result: [1, 'two', { three: 3 }, [4]] },
      ],
    },
    { id: generateId(), role: 'assistant', contents: [] },
    {
      id: generateId(),
      role: 'assistant',
      contents: [
        {
          type: 'hosted-tool',
          item: { id: 'ws_001', type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'Zürich weather' } },
        },
        { type: 'text', text: 'It snows in Zürich.' },
        { type: 'hosted-tool', item: { id: 'cmp_001', type: 'compaction', encrypted_content: SAMPLE_COMPACTION } },
      ],
      metadata: { serviceMessageId: 'resp_001' },
    },
    {
      id: generateId(),
      role: 'assistant',
      contents: [{ type: 'text', text: '' }],
      metadata: { ctx: { sourceId: 'response', sourceType: 'response' }, score: 0.5 },
    },
    {
      id: generateId(),
      role: 'user',
      contents: [{ type: 'text', text: 'Thanks! 👍' }],
      metadata: { ctx: { sourceId: 'input', sourceType: 'input' } },
    },
  ];
}

/** A deep copy through JSON: what a faithful store gives back. */
export function jsonCopy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
