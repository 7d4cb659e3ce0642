import fc from 'fast-check';

/** Keys that break naive object handling: prototype members, `toJSON`, `then`. */
export const HOSTILE_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty', 'toJSON', 'then'];
/** An object key: a short string, a hostile key, or a field name of messages and sessions. */
export const key = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 8 }) },
  fc.constantFrom(...HOSTILE_KEYS, 'type', 'version', 'sessionId', 'state', 'id', 'role', 'contents', 'metadata', 'text', 'result'),
);

/**
 * A value nested `deep` levels (objects, arrays or both), described rather than held so a report
 * stays short; `materialize` builds it. Past about 3,000 levels JSON.stringify (the Cosmos SDK's
 * own, for one) overflows the stack, so what is generated stays below that.
 */
export class Deep {
  constructor(
    readonly deep: number,
    readonly shape: 'object' | 'array' | 'mixed',
  ) {}
  [fc.toStringMethod](): string {
    return `<${this.shape} nested ${this.deep} levels>`;
  }
}

export const deepValue: fc.Arbitrary<Deep> = fc
  .record({
    deep: fc.oneof(fc.integer({ min: 120, max: 140 }), fc.integer({ min: 500, max: 1500 })),
    shape: fc.constantFrom('object', 'array', 'mixed'),
  })
  .map(({ deep, shape }) => new Deep(deep, shape as Deep['shape']));

/** Any JSON value, with hostile keys (`__proto__` as an own key, `constructor`, ...). */
export const json: fc.Arbitrary<unknown> = fc
  .jsonValue({ maxDepth: 4 })
  .chain((value) => fc.oneof(fc.constant(value), fc.dictionary(key, fc.constant(value), { maxKeys: 3 })));

/** JSON, or deep nesting (materialized when written). */
export const jsonOrDeep: fc.Arbitrary<unknown> = fc.oneof({ weight: 5, arbitrary: json }, deepValue);

/** Objects shaped more or less like a content part: every field optional, any field of any type. */
export const content = fc.record(
  {
    type: fc.oneof(fc.constantFrom('text', 'function-call', 'function-result', 'data', 'reasoning', 'image'), json),
    text: fc.oneof(fc.string(), json),
    callId: fc.oneof(fc.string(), json),
    name: fc.oneof(fc.string(), json),
    arguments: fc.oneof(fc.string(), json),
    result: jsonOrDeep,
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
    role: fc.oneof(fc.constantFrom('system', 'user', 'assistant', 'tool'), jsonOrDeep),
    contents: fc.oneof({ weight: 3, arbitrary: fc.array(fc.oneof(content, json), { maxLength: 3 }) }, json),
    authorName: fc.oneof(fc.string(), json),
    createdAt: fc.oneof(fc.string(), json),
    metadata: jsonOrDeep,
    extra: jsonOrDeep,
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
    extra: jsonOrDeep,
  },
  { requiredKeys: ['id', 'role', 'contents'] },
);

/** Objects shaped more or less like ctx session JSON (for `sessionId`), any field of any type. */
export function sessionLike(sessionId: string): fc.Arbitrary<Record<string, unknown>> {
  return fc.record(
    {
      type: fc.oneof(fc.constant('ctx.session'), jsonOrDeep),
      version: fc.oneof(fc.constant(1), jsonOrDeep),
      sessionId: fc.oneof({ weight: 3, arbitrary: fc.constant(sessionId) }, json),
      serviceSessionId: fc.oneof(fc.string(), json),
      state: fc.oneof(
        { weight: 3, arbitrary: fc.dictionary(key, fc.oneof(fc.dictionary(key, jsonOrDeep, { maxKeys: 3 }), json)) },
        jsonOrDeep,
      ),
      [HOSTILE_KEYS[0]!]: json,
    },
    { requiredKeys: [] },
  );
}

/** Well-formed session JSON of `sessionId`, with hostile keys (`__proto__` included) as slot names and inside slots. */
export function validSession(sessionId: string): fc.Arbitrary<Record<string, unknown>> {
  return fc.record({
    type: fc.constant('ctx.session'),
    version: fc.constant(1),
    sessionId: fc.constant(sessionId),
    state: fc.dictionary(key, fc.dictionary(key, json, { maxKeys: 3 }), { maxKeys: 3 }),
  });
}

/** A copy of `value` with every `Deep` in it built (in plain objects and arrays; own `__proto__` keys kept as own keys). */
export function materialize(value: unknown): unknown {
  if (value instanceof Deep) {
    let out: unknown = 1;
    for (let i = 0; i < value.deep; i++) out = value.shape === 'array' || (value.shape === 'mixed' && i % 2 === 0) ? [out] : { a: out };
    return out;
  }
  if (Array.isArray(value)) return value.map(materialize);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value))
    Object.defineProperty(out, k, { value: materialize(v), enumerable: true, writable: true, configurable: true });
  return out;
}
