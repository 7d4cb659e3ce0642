import type { AgentInputItem } from '@openai/agents-core';
import fc from 'fast-check';

/** Plain JSON (no -0, which JSON cannot keep), with hostile keys such as `__proto__`, `$bytes` and `$object` now and then. */
const json: fc.Arbitrary<unknown> = fc
  .jsonValue({ maxDepth: 3 })
  .map((v) => JSON.parse(JSON.stringify(v)) as unknown)
  .chain((v) =>
    fc.oneof(
      { weight: 5, arbitrary: fc.constant(v) },
      fc.constantFrom({ $bytes: 'x' }, { $object: { $bytes: 'y' } }, JSON.parse('{"__proto__":{"a":1}}'), { $bytes: 1 }),
    ),
  );

/** A record with the usual object prototype (fast-check makes some with none, which JSON never gives). */
function rec<T>(model: { [K in keyof T]: fc.Arbitrary<T[K]> }, options: { requiredKeys?: [] } = {}): fc.Arbitrary<T> {
  return fc.record(model, { ...options, noNullPrototype: true }) as fc.Arbitrary<T>;
}

const bytes = fc.uint8Array({ maxLength: 8 }).map((b) => new Uint8Array(b));
const providerData = fc.dictionary(fc.string({ maxLength: 6 }), fc.oneof({ weight: 4, arbitrary: json }, bytes), {
  maxKeys: 3,
  noNullPrototype: true,
});
const text = fc.string({ maxLength: 12 });
const id = fc.string({ minLength: 1, maxLength: 8 });

/** Optional fields: each present or absent (never `undefined`). */
function withOptional<T extends object>(base: fc.Arbitrary<T>, optional: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<T> {
  return fc.tuple(base, rec(optional, { requiredKeys: [] })).map(([b, extra]) => Object.assign({}, b, extra) as T);
}

const inputText = withOptional(rec({ type: fc.constant('input_text'), text }), { providerData });
const outputText = withOptional(rec({ type: fc.constant('output_text'), text }), { providerData });
const inputImage = withOptional(rec({ type: fc.constant('input_image') }), {
  image: fc.oneof(text, rec({ id })),
  detail: fc.constantFrom('low', 'high', 'auto'),
});
const refusal = rec({ type: fc.constant('refusal'), refusal: text });

const user = withOptional(
  rec({ role: fc.constant('user'), content: fc.oneof(text, fc.array(fc.oneof(inputText, inputImage), { maxLength: 3 })) }),
  { type: fc.constant('message'), id, providerData },
);
const system = withOptional(rec({ role: fc.constant('system'), content: text }), { type: fc.constant('message'), id, providerData });
const assistant = withOptional(
  rec({
    type: fc.constant('message'),
    role: fc.constant('assistant'),
    status: fc.constantFrom('in_progress', 'completed', 'incomplete'),
    content: fc.array(fc.oneof(outputText, refusal), { maxLength: 3 }),
  }),
  { id, providerData },
);
const functionCall = withOptional(rec({ type: fc.constant('function_call'), callId: id, name: id, arguments: fc.json() }), {
  id,
  status: fc.constantFrom('in_progress', 'completed', 'incomplete'),
  providerData,
  namespace: id,
});
const output = fc.oneof(
  text,
  rec({ type: fc.constant('text'), text }),
  rec({ type: fc.constant('image'), image: fc.oneof(text, rec({ data: fc.oneof(text, bytes), mediaType: fc.constant('image/png') })) }),
  fc.array(rec({ type: fc.constant('text'), text }), { maxLength: 2 }),
);
const functionResult = withOptional(
  rec({
    type: fc.constant('function_call_result'),
    callId: id,
    name: id,
    status: fc.constantFrom('in_progress', 'completed', 'incomplete'),
    output,
  }),
  { id, providerData },
);
const reasoning = withOptional(rec({ type: fc.constant('reasoning'), content: fc.array(inputText, { maxLength: 3 }) }), {
  id,
  providerData,
  rawContent: fc.array(rec({ type: fc.constant('reasoning_text'), text }), { maxLength: 2 }),
});
const hosted = withOptional(rec({ type: fc.constant('hosted_tool_call'), name: id }), {
  id,
  status: text,
  arguments: text,
  output: text,
  providerData,
});
const computerCall = withOptional(
  rec({
    type: fc.constant('computer_call'),
    callId: id,
    status: fc.constantFrom('in_progress', 'completed', 'incomplete'),
    action: rec({ type: fc.constant('click'), x: fc.integer(), y: fc.integer(), button: fc.constantFrom('left', 'right') }),
  }),
  { id, providerData },
);
const shellOutput = rec({
  type: fc.constant('shell_call_output'),
  callId: id,
  output: fc.array(rec({ stdout: text, stderr: text, outcome: rec({ type: fc.constant('exit'), exitCode: fc.integer() }) }), {
    maxLength: 2,
  }),
});
const compaction = withOptional(rec({ type: fc.constant('compaction'), encrypted_content: text }), { id, created_by: text });
const unknown = withOptional(rec({ type: fc.constant('unknown') }), { id, providerData });

/** Lists of Agents SDK input items of every kind, with random optional fields, provider data and bytes. */
export const itemsArbitrary = fc.array(
  fc.oneof(user, system, assistant, functionCall, functionResult, reasoning, hosted, computerCall, shellOutput, compaction, unknown),
  { maxLength: 8 },
) as unknown as fc.Arbitrary<AgentInputItem[]>;
