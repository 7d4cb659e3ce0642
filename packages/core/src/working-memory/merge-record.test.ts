import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JsonObject, JsonValue } from '../contracts/json.js';
import { changeSchema, mergeRecord } from './merge-record.js';

const key = fc.constantFrom('a', 'b', 'c', 'd', '__proto__', 'constructor');
const leaf = fc.oneof(fc.string({ maxLength: 5 }), fc.integer(), fc.boolean(), fc.array(fc.integer(), { maxLength: 3 }));
const { record } = fc.letrec<{ record: JsonObject; value: JsonValue }>((tie) => ({
  record: fc.dictionary(key, tie('value'), { maxKeys: 4 }) as fc.Arbitrary<JsonObject>,
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, tie('record')) as fc.Arbitrary<JsonValue>,
}));
const change = fc.dictionary(key, fc.oneof(leaf, fc.constant(null), record), { maxKeys: 4 }) as fc.Arbitrary<JsonObject>;

describe('mergeRecord', () => {
  it('changes neither argument, applies every key of the change, keeps every other key, and is idempotent', () => {
    fc.assert(
      fc.property(record, change, (before, update) => {
        const [b, u] = [JSON.stringify(before), JSON.stringify(update)];
        const merged = mergeRecord(before, update);
        expect([JSON.stringify(before), JSON.stringify(update)]).toEqual([b, u]);
        for (const [k, v] of Object.entries(update)) {
          if (v === null) expect(Object.hasOwn(merged, k)).toBe(false);
          else if (typeof v !== 'object' || Array.isArray(v)) expect(merged[k]).toEqual(v);
        }
        for (const k of Object.keys(before)) if (!Object.hasOwn(update, k)) expect(merged[k]).toEqual(before[k]);
        expect(mergeRecord(merged, update)).toEqual(merged);
        expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
      }),
    );
  });

  it('merges objects at depth, replaces arrays, and keeps key order (new keys last)', () => {
    const merged = mergeRecord({ a: 1, p: { x: [1, 2], y: 'keep' }, z: true }, { p: { x: [3] }, n: 'new', a: null });
    expect(merged).toEqual({ p: { x: [3], y: 'keep' }, z: true, n: 'new' });
    expect(Object.keys(merged)).toEqual(['p', 'z', 'n']);
  });
});

describe('changeSchema', () => {
  it('drops required and lets every property, at every object depth, be null', () => {
    const schema: JsonObject = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      required: ['name'],
      properties: {
        name: { type: 'string' },
        prefs: { type: 'object', required: ['diet'], properties: { diet: { type: 'string' } } },
        tags: { type: 'array', items: { type: 'object', required: ['id'] } },
      },
    };
    expect(changeSchema(schema)).toEqual({
      type: 'object',
      properties: {
        name: { anyOf: [{ type: 'string' }, { type: 'null' }] },
        prefs: { anyOf: [{ type: 'object', properties: { diet: { anyOf: [{ type: 'string' }, { type: 'null' }] } } }, { type: 'null' }] },
        tags: { anyOf: [{ type: 'array', items: { type: 'object', required: ['id'] } }, { type: 'null' }] },
      },
    });
  });
});
