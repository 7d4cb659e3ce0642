import type { CtxError } from '@ctx/core';
import {
  fuzzTestTimeout,
  outcome as checkedOutcome,
  json,
  materialize as build,
  messageLike,
  sessionLike,
  validMessage,
  validSession,
} from '@ctx/fuzz-kit';
import fc from 'fast-check';

/** Per property: generous for a slow CI machine, so only a real hang fails it. */
export const FUZZ_TEST_TIMEOUT = fuzzTestTimeout(30);

/** `outcome` from `@ctx/fuzz-kit` with a call taking longer than 10 s as a hang. */
export function outcome<T>(name: string, call: () => Promise<T>): Promise<{ value: T } | { error: CtxError }> {
  return checkedOutcome(name, call, { callTimeoutMs: 10_000 });
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
  if ('json' in garbage) return JSON.stringify(build(garbage.json)) ?? 'null';
  return deepText(garbage, sessionId);
}
