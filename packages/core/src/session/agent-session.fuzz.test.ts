/**
 * Fuzz: whatever reaches a session reader (restoreSession, parseSessionJson, a store's get or set),
 * the only failures are `CtxError`s, `Object.prototype` stays clean, and nothing hangs.
 * `FUZZ_RUNS` sets the runs per property (default 2,000; the nightly run uses 100,000).
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigurationError, CtxError, SessionStateError } from '../errors.js';
import { createAgent } from '../run/create-agent.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { AgentSession, parseSessionJson } from './agent-session.js';
import { FileSessionStore, sessionFileName } from './file-session-store.js';
import { InMemorySessionStore } from './in-memory-session-store.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 2000);
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error(`FUZZ_RUNS must be a positive integer, got ${process.env.FUZZ_RUNS}.`);
/** Per property: generous for slow CI machines, so only a real hang fails it. */
const TEST_TIMEOUT = 60_000 + RUNS * 20;
/** One run of a property taking longer than this is a hang. */
const RUN_TIMEOUT = 10_000;

const agent = createAgent({ client: new ScriptedChatClient({ replies: [] }) });

const HOSTILE_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty', 'toJSON', 'then'];
const key = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 8 }) },
  fc.constantFrom(...HOSTILE_KEYS, 'memory', 'messages', 'state', 'type', 'sessionId', 'contents', 'role', 'metadata', 'result'),
);

/** Values no JSON holds: class instances, bigints, symbols, functions, non-finite numbers, boxed values... */
const anything = fc.anything({
  key,
  maxDepth: 4,
  withBigInt: true,
  withMap: true,
  withSet: true,
  withDate: true,
  withTypedArray: true,
  withSparseArray: true,
  withNullPrototype: true,
  withBoxedValues: true,
  withObjectString: true,
});

const throwing = () => {
  throw new Error('hostile');
};

/**
 * A value built only when a run starts (`materialize`): fast-check itself inspects what it
 * generates, and would trip over a hostile Proxy or a 2 MB string in a report.
 */
class Lazy {
  constructor(
    readonly name: string,
    readonly make: () => unknown,
  ) {}
  [fc.toStringMethod](): string {
    return `<${this.name}>`;
  }
}

/** A copy of `value` with every `Lazy` in it (in plain objects and arrays) built. */
function materialize(value: unknown): unknown {
  if (value instanceof Lazy) return value.make();
  if (Array.isArray(value)) return value.map(materialize);
  if (typeof value !== 'object' || value === null) return value;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  const out = Object.create(proto) as object;
  for (const k of Reflect.ownKeys(value)) {
    const descriptor = Object.getOwnPropertyDescriptor(value, k)!;
    Object.defineProperty(out, k, 'value' in descriptor ? { ...descriptor, value: materialize(descriptor.value) } : descriptor);
  }
  return out;
}

/** Values that throw when a careless reader looks at them. */
const hostile = fc.constantFrom(
  new Lazy(
    'Proxy whose traps throw',
    () => new Proxy({}, { get: throwing, ownKeys: throwing, getPrototypeOf: throwing, has: throwing, getOwnPropertyDescriptor: throwing }),
  ),
  new Lazy(
    'session Proxy whose get throws',
    () => new Proxy({ type: 'ctx.session', version: 1, sessionId: 'p', state: {} }, { get: throwing }),
  ),
  new Lazy('array Proxy whose get throws', () => new Proxy([], { get: throwing })),
  new Lazy('revoked Proxy', () => {
    const r = Proxy.revocable({}, {});
    r.revoke();
    return r.proxy;
  }),
  new Lazy('session with a throwing state getter', () => ({
    get state(): unknown {
      throw new Error('getter');
    },
    type: 'ctx.session',
    version: 1,
    sessionId: 'g',
  })),
  new Lazy('object whose conversions throw', () => ({
    [Symbol.toPrimitive]: throwing,
    toString: throwing,
    valueOf: throwing,
    toJSON: throwing,
  })),
  new Lazy('cyclic session', () => {
    const cyclic: Record<string, unknown> = { type: 'ctx.session', version: 1, sessionId: 'c' };
    cyclic.state = { app: { back: cyclic } };
    return cyclic;
  }),
);

/** Nesting from a few levels to far past any stack, as objects or arrays, around any leaf. */
const deep = fc.tuple(fc.integer({ min: 1, max: 3000 }), fc.boolean(), fc.jsonValue({ maxDepth: 1 })).map(
  ([levels, asArray, leaf]) =>
    new Lazy(`${levels} nested ${asArray ? 'arrays' : 'objects'}`, () => {
      let value: unknown = leaf;
      for (let i = 0; i < levels; i++) value = asArray ? [value] : { d: value };
      return value;
    }),
);

/** A long string: big enough to matter, rare enough to keep a run fast. */
const huge = fc.integer({ min: 10_000, max: 2_000_000 }).map((n) => new Lazy(`string of ${n} characters`, () => 'x'.repeat(n)));

const value = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
  { weight: 4, arbitrary: anything },
  { weight: 2, arbitrary: hostile },
  { weight: 1, arbitrary: deep },
  { weight: 1, arbitrary: huge },
);

/** Session-shaped objects with any field (and any state slot) replaced by garbage. */
const sessionish = fc.record(
  {
    type: fc.oneof(fc.constant('ctx.session'), value),
    version: fc.oneof(fc.constantFrom(1, 2), value),
    sessionId: fc.oneof(fc.string({ minLength: 1 }), value),
    metadata: fc.oneof(
      fc.constant({ createdAt: '2026-01-31T12:00:00.000Z', updatedAt: '2026-02-01T08:30:15.123Z' }),
      fc.record(
        {
          createdAt: fc.oneof(
            fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
            value,
          ),
          updatedAt: fc.oneof(
            fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
            value,
          ),
          title: fc.oneof(fc.string({ maxLength: 210 }), value),
          userId: fc.oneof(fc.string(), value),
          custom: fc.oneof(fc.dictionary(key, value, { maxKeys: 4 }), value),
          forkedFrom: fc.oneof(fc.record({ sessionId: fc.string(), messageId: fc.string() }, { requiredKeys: ['sessionId'] }), value),
        },
        { requiredKeys: [] },
      ),
      value,
    ),
    serviceSessionId: fc.oneof(fc.string(), value),
    state: fc.oneof(
      fc.dictionary(key, fc.oneof(fc.dictionary(key, value, { maxKeys: 4 }), value), { maxKeys: 4 }),
      fc.record({ memory: fc.record({ messages: fc.oneof(fc.array(value, { maxLength: 3 }), value) }) }),
      value,
    ),
  },
  { requiredKeys: ['type', 'version', 'sessionId', 'state'] },
);

/** JSON text: valid sessions with hostile keys spliced in, broken JSON, deep text. */
const text = fc.oneof(
  fc.string(),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc
    .tuple(fc.constantFrom(...HOSTILE_KEYS), fc.jsonValue({ maxDepth: 3 }), fc.constantFrom(...HOSTILE_KEYS), fc.jsonValue({ maxDepth: 3 }))
    .map(
      ([k1, v1, k2, v2]) =>
        `{"type":"ctx.session","version":1,"sessionId":"a","state":{${JSON.stringify(k1)}:{${JSON.stringify(k2)}:${JSON.stringify(v2)}},"app":{${JSON.stringify(k1)}:${JSON.stringify(v1)}}},${JSON.stringify(k2)}:${JSON.stringify(v1)}}`,
    ),
  fc
    .integer({ min: 1, max: 20_000 })
    .map((n) => `{"type":"ctx.session","version":1,"sessionId":"a","state":{"app":${'['.repeat(n)}${']'.repeat(n)}}}`),
  fc.integer({ min: 1, max: 20_000 }).map((n) => `{"type":"ctx.session","version":1,"sessionId":"a","state":{"app":${'{"a":'.repeat(n)}1`),
);

const input = fc.oneof(value, sessionish, text);

/** Own property names of the built-in prototypes, to catch pollution. */
function prototypeSnapshot(): string {
  return JSON.stringify([Object.prototype, Array.prototype, Function.prototype].map((p) => Reflect.ownKeys(p).map(String).sort()));
}
const clean = prototypeSnapshot();

/** Runs `fn`: it may return, or throw a `CtxError` (of this copy of core) that `expected` accepts; nothing else. */
async function onlyCtxErrors(fn: () => unknown, expected: (e: unknown) => boolean = CtxError.isInstance): Promise<void> {
  try {
    await fn();
  } catch (error) {
    if (!(error instanceof CtxError) || !expected(error)) throw new Error(`Expected a CtxError, got ${String(error)}`, { cause: error });
  }
  expect(prototypeSnapshot()).toBe(clean);
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
}

const settings = { numRuns: RUNS, timeout: RUN_TIMEOUT } as const;

describe(`session readers on garbage (${RUNS} runs per property)`, () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ctx-fuzz-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it(
    'restoreSession, parseSessionJson and AgentSession.fromJSON give a session or a SessionStateError',
    async () => {
      await fc.assert(
        fc.asyncProperty(input, async (recipe) => {
          const garbage = materialize(recipe);
          await onlyCtxErrors(() => agent.restoreSession(garbage), SessionStateError.isInstance);
          await onlyCtxErrors(() => parseSessionJson(garbage), SessionStateError.isInstance);
          await onlyCtxErrors(() => AgentSession.fromJSON(garbage), SessionStateError.isInstance);
        }),
        settings,
      );
    },
    TEST_TIMEOUT,
  );

  it(
    'InMemorySessionStore set and get on garbage give only CtxErrors, and get gives back exactly what set accepted',
    async () => {
      const store = new InMemorySessionStore();
      await fc.assert(
        fc.asyncProperty(input, value, async (recipe, idRecipe) => {
          const garbage = materialize(recipe);
          const id = materialize(idRecipe);
          let accepted: string | undefined;
          await onlyCtxErrors(async () => {
            await store.set(garbage as never);
            accepted = (garbage as { sessionId: string }).sessionId;
          });
          if (accepted !== undefined) {
            const stored = (await store.get(accepted))?.session;
            // A version-1 session had no metadata (whatever is there is ignored, even a hostile Proxy):
            // it migrated when it was written, with the time of that write.
            const { metadata: _, ...withoutMetadata } = garbage as Record<string, unknown>;
            const v1 = (garbage as { version?: unknown }).version === 1;
            const expected = parseSessionJson(JSON.stringify(v1 ? withoutMetadata : garbage));
            if (v1) expected.metadata = stored!.metadata;
            expect(stored).toEqual(expected);
          }
          await onlyCtxErrors(() => store.get(id as never));
          await onlyCtxErrors(() => store.delete(id as never));
        }),
        settings,
      );
    },
    TEST_TIMEOUT,
  );

  it(
    'FileSessionStore get of garbage files (bytes, text, envelopes of any session) gives a session, undefined or a CtxError; list skips them',
    async () => {
      const throwing = new FileSessionStore({ directory: dir });
      const quarantining = new FileSessionStore({ directory: dir, onCorrupt: 'quarantine' });
      const sha256Hex = (t: string, encoding: 'utf8' | 'latin1' = 'latin1') => createHash('sha256').update(t, encoding).digest('hex');
      const content = fc.oneof(
        fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
        text.map((t) => Buffer.from(t)),
        fc
          .oneof(
            text,
            input.map((v) => new Lazy('JSON of a value', () => safeJson(materialize(v)))),
          )
          .map((session) => new Lazy('an envelope', () => Buffer.from(`{"etag":"e","session":${materialize(session)}}`))),
      );
      await fc.assert(
        fc.asyncProperty(fc.constantFrom('a', 'user:7', '\uD800', 'Z'.repeat(300)), fc.boolean(), content, async (id, legacy, bytes) => {
          const file = legacy ? join(dir, `${sha256Hex(id, 'utf8')}.json`) : join(dir, sessionFileName(id, sha256Hex));
          await writeFile(file, materialize(bytes) as Buffer);
          // A listing skips what it cannot read: it never throws, and lists only sessions under their own names.
          for (const entry of (await throwing.list({ limit: 100 })).sessions) expect(entry.sessionId).toBe(id);
          await onlyCtxErrors(() => throwing.get(id));
          await onlyCtxErrors(async () => {
            const stored = await quarantining.get(id);
            if (stored) expect(stored.session.sessionId).toBe(id);
          });
          await onlyCtxErrors(() => throwing.delete(id));
        }),
        settings,
      );
      await onlyCtxErrors(() => throwing.get(undefined as never), ConfigurationError.isInstance);
    },
    TEST_TIMEOUT,
  );
});

/** JSON text of `value`, or of a string when it has none (a cycle, a bigint). */
function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? 'null';
  } catch {
    return '"unserializable"';
  }
}
