import { CtxError } from '@ctx/core';
import fc from 'fast-check';

/** Runs per fuzz property: 300 by default (CI); `FUZZ_RUNS` sets it (the nightly run uses 20,000). */
export const FUZZ_RUNS = Number(process.env.FUZZ_RUNS ?? 300);
if (!Number.isInteger(FUZZ_RUNS) || FUZZ_RUNS < 1) throw new Error(`FUZZ_RUNS must be a positive integer, got ${process.env.FUZZ_RUNS}.`);
/** Per property: generous for a slow CI machine, so only a real hang fails it. */
export const FUZZ_TEST_TIMEOUT = 60_000 + FUZZ_RUNS * 30;
/** One call taking longer than this is a hang. */
const CALL_TIMEOUT = 10_000;

const HOSTILE_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty', 'toJSON', 'then'];
const key = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 8 }) },
  fc.constantFrom(...HOSTILE_KEYS, 'type', 'version', 'sessionId', 'state', 'id', 'role', 'contents', 'metadata', 'text', 'result'),
);

/** Any JSON value, with hostile keys (`__proto__` as an own key, `constructor`, ...). */
export const json: fc.Arbitrary<unknown> = fc
  .jsonValue({ maxDepth: 4 })
  .chain((value) => fc.oneof(fc.constant(value), fc.dictionary(key, fc.constant(value), { maxKeys: 3 })));

const content = fc.record(
  {
    type: fc.oneof(fc.constantFrom('text', 'function-call', 'function-result', 'data', 'reasoning', 'image'), json),
    text: fc.oneof(fc.string(), json),
    callId: fc.oneof(fc.string(), json),
    name: fc.oneof(fc.string(), json),
    arguments: fc.oneof(fc.string(), json),
    result: json,
    isError: fc.oneof(fc.boolean(), json),
    mediaType: fc.oneof(fc.string(), json),
    uri: fc.oneof(fc.string(), json),
    data: fc.oneof(fc.string(), json),
  },
  { requiredKeys: [] },
);

/** Objects shaped more or less like a ctx message: every field optional, any field of any type. */
export const messageLike = fc.record(
  {
    id: fc.oneof(fc.string({ maxLength: 4 }), json),
    role: fc.oneof(fc.constantFrom('system', 'user', 'assistant', 'tool'), json),
    contents: fc.oneof({ weight: 3, arbitrary: fc.array(fc.oneof(content, json), { maxLength: 3 }) }, json),
    authorName: fc.oneof(fc.string(), json),
    createdAt: fc.oneof(fc.string(), json),
    metadata: json,
    [HOSTILE_KEYS[0]!]: json,
  },
  { requiredKeys: [] },
);

/** Well-formed messages, with hostile keys (`__proto__` included) inside their metadata. */
export const validMessage = fc.record(
  {
    id: fc.string({ minLength: 1, maxLength: 3 }),
    role: fc.constantFrom('system', 'user', 'assistant', 'tool'),
    contents: fc.array(fc.record({ type: fc.constant('text'), text: fc.string({ maxLength: 8 }) }), { maxLength: 2 }),
    metadata: fc.dictionary(key, json, { maxKeys: 3 }),
  },
  { requiredKeys: ['id', 'role', 'contents'] },
);

/** Objects shaped more or less like ctx session JSON (for `sessionId`), any field of any type. */
export function sessionLike(sessionId: string): fc.Arbitrary<Record<string, unknown>> {
  return fc.record(
    {
      type: fc.oneof(fc.constant('ctx.session'), json),
      version: fc.oneof(fc.constant(1), json),
      sessionId: fc.oneof({ weight: 3, arbitrary: fc.constant(sessionId) }, json),
      serviceSessionId: fc.oneof(fc.string(), json),
      state: fc.oneof({ weight: 3, arbitrary: fc.dictionary(key, fc.oneof(fc.dictionary(key, json, { maxKeys: 3 }), json)) }, json),
      [HOSTILE_KEYS[0]!]: json,
    },
    { requiredKeys: [] },
  );
}

/**
 * JSON text nested `levels` deep, described rather than held (a report stays short): objects,
 * arrays, or both; built by `deepText`.
 */
export interface Deep {
  deep: number;
  shape: 'object' | 'array' | 'mixed';
  /** Put it where a message or session field would be, instead of at the top. */
  under?: string;
}

export const deep: fc.Arbitrary<Deep> = fc.record(
  {
    deep: fc.oneof(fc.integer({ min: 120, max: 140 }), fc.integer({ min: 1000, max: 100_000 })),
    shape: fc.constantFrom('object', 'array', 'mixed'),
    under: fc.constantFrom('metadata', 'contents', 'extra', 'state', 'type', 'role', 'version'),
  },
  { requiredKeys: ['deep', 'shape'] },
);

/** The JSON text a `Deep` describes. */
export function deepText({ deep: levels, shape, under }: Deep, sessionId = 's'): string {
  const opens = { object: '{"a":', array: '[', mixed: '[{"a":' } as const;
  const closes = { object: '}', array: ']', mixed: '}]' } as const;
  const times = shape === 'mixed' ? Math.ceil(levels / 2) : levels;
  const text = `${opens[shape].repeat(times)}1${closes[shape].repeat(times)}`;
  switch (under) {
    case undefined:
      return text;
    case 'metadata':
      return `{"id":"d","role":"user","contents":[],"metadata":{"x":${text}}}`;
    case 'contents':
      return `{"id":"d","role":"user","contents":[{"type":"function-result","callId":"c","result":${text}}]}`;
    case 'extra':
      return `{"id":"d","role":"user","contents":[{"type":"text","text":"x"}],"extra":${text}}`;
    case 'role':
      return `{"id":"d","role":${text},"contents":[]}`;
    case 'state':
      return `{"type":"ctx.session","version":1,"sessionId":${JSON.stringify(sessionId)},"state":{"s":${text}}}`;
    default:
      return `{"type":${under === 'type' ? text : '"ctx.session"'},"version":${under === 'version' ? text : '1'},"sessionId":${JSON.stringify(sessionId)},"state":{}}`;
  }
}

/** One stored value: text, raw bytes, JSON of some shape, or deep nesting. */
export type Garbage = { text: string } | { bytes: Uint8Array } | { json: unknown } | Deep;

/** Garbage for where a message is stored (and some well-formed messages among it). */
export const messageGarbage: fc.Arbitrary<Garbage> = fc.oneof(
  fc.record({ text: fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.constantFrom('', '{', 'null', '[]', '"x"', 'NaN', '1e999')) }),
  fc.record({ bytes: fc.uint8Array({ maxLength: 32 }) }),
  { weight: 4, arbitrary: fc.record({ json: messageLike }) },
  { weight: 4, arbitrary: fc.record({ json: validMessage }) },
  fc.record({ json }),
  deep,
);

/** Well-formed session JSON of `sessionId`, with hostile keys (`__proto__` included) as slot names and inside slots. */
export function validSession(sessionId: string): fc.Arbitrary<Record<string, unknown>> {
  return fc.record({
    type: fc.constant('ctx.session'),
    version: fc.constant(1),
    sessionId: fc.constant(sessionId),
    state: fc.dictionary(key, fc.dictionary(key, json, { maxKeys: 3 }), { maxKeys: 3 }),
  });
}

/** Garbage for where a session's JSON is stored (and some well-formed sessions among it). */
export function sessionGarbage(sessionId: string): fc.Arbitrary<Garbage> {
  return fc.oneof(
    fc.record({ text: fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.constantFrom('', '{', 'null', '[]', '"x"', 'NaN')) }),
    fc.record({ bytes: fc.uint8Array({ maxLength: 32 }) }),
    { weight: 4, arbitrary: fc.record({ json: sessionLike(sessionId) }) },
    { weight: 3, arbitrary: fc.record({ json: validSession(sessionId) }) },
    fc.record({ json }),
    deep,
  );
}

/** What to write for a `Garbage`: a string, or a Buffer of raw bytes. */
export function materialize(garbage: Garbage, sessionId?: string): string | Buffer {
  if ('text' in garbage) return garbage.text;
  if ('bytes' in garbage) return Buffer.from(garbage.bytes);
  if ('json' in garbage) return JSON.stringify(garbage.json) ?? 'null';
  return deepText(garbage, sessionId);
}

const prototypeKeys = () => Reflect.ownKeys(Object.prototype).map(String).sort();
const cleanPrototype = prototypeKeys();

/**
 * Runs `call` and checks its outcome: a value, or a `CtxError` subclass (anything else is thrown
 * again, failing the property); a call that does not settle within 10 s is a hang. Afterwards
 * `Object.prototype` must be exactly what it was.
 */
export async function outcome<T>(name: string, call: () => Promise<T>): Promise<{ value: T } | { error: CtxError }> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${name} did not settle within ${CALL_TIMEOUT} ms`)), CALL_TIMEOUT);
  });
  const result = await Promise.race([call(), hang]).then(
    (value) => ({ value }),
    (error: unknown) => ({ thrown: error }),
  );
  clearTimeout(timer);
  const keys = prototypeKeys();
  if (keys.join() !== cleanPrototype.join() || ({} as Record<string, unknown>).a !== undefined) {
    throw new Error(`${name} polluted Object.prototype: ${keys.join(', ')}`);
  }
  if ('value' in result) return result;
  if (CtxError.isInstance(result.thrown)) return { error: result.thrown };
  throw new Error(`${name} failed with something other than a CtxError: ${String((result.thrown as Error)?.stack ?? result.thrown)}`, {
    cause: result.thrown,
  });
}
