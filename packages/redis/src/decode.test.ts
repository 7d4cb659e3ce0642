import { Message, SessionStateError } from '@ctx/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeAll, isCommonMessage, repeatedIds } from './decode.js';

/** What `repeatedIds` must answer: the indexes whose id an earlier message has, by a `Set`. */
function reference(ids: readonly string[]): number[] | undefined {
  const seen = new Set<string>();
  const out: number[] = [];
  ids.forEach((id, i) => (seen.has(id) ? out.push(i) : seen.add(id)));
  return out.length > 0 ? out : undefined;
}

const asMessages = (ids: readonly string[]) => ids.map((id) => ({ id }) as Message);

describe('repeatedIds', () => {
  it('finds exactly the entries whose id an earlier entry has, whatever the ids and however long the list', () => {
    // Ids from a small alphabet repeat often; long ids share their first and last 16 characters,
    // so they land in the same slot and only the full comparison tells them apart.
    const shared = 'p'.repeat(16);
    const id = fc.oneof(
      fc.string({ maxLength: 3, unit: fc.constantFrom('a', 'b', '\u00e9', '\ud800') }),
      fc.string({ maxLength: 4 }).map((middle) => `${shared}${middle}${shared}`),
      fc.uuid(),
    );
    fc.assert(
      fc.property(fc.array(fc.array(id, { maxLength: 300 }), { minLength: 1, maxLength: 4 }), (lists) => {
        // Several loads in a row: the table one load leaves behind must not leak into the next.
        for (const ids of lists) expect(repeatedIds(asMessages(ids))).toEqual(reference(ids));
      }),
      { numRuns: 300 },
    );
  });

  it('handles a history longer than the table it keeps, and a short one after it', () => {
    const ids = Array.from({ length: 70_000 }, (_, i) => `m${i % 69_990}`);
    expect(repeatedIds(asMessages(ids))).toEqual(reference(ids));
    expect(repeatedIds(asMessages(['x', 'y', 'x']))).toEqual([2]);
  });
});

describe('decodeAll', () => {
  it('names the entry that is not a message by its key and index, counted from the given offset', () => {
    const ok = JSON.stringify(Message.user('hi', { id: 'a' }));
    expect(() => decodeAll([ok, '{"id":"b","role":"user","contents":[{"type":"nope"}]}'], 'k', -2)).toThrow(
      expect.objectContaining({ path: 'redis:k[-1].contents[0].type' }),
    );
    expect(() => decodeAll(['not json'], 'k', 5)).toThrow(SessionStateError);
    expect(() => decodeAll(['not json'], 'k', 5)).toThrow(expect.objectContaining({ path: 'redis:k[5]' }));
  });
});

describe('isCommonMessage', () => {
  const roundTrip = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

  it('takes the messages ctx stores most, as read back from JSON', () => {
    const plain = Message.user('hi', { authorName: 'ann' });
    const attributed = Message.withSource(Message.assistant(['a', 'b'].join('')), 'redis', 'response');
    for (const m of [plain, attributed, { ...plain, metadata: { tag: 'x', n: 1, ok: true, nothing: null } }]) {
      expect(isCommonMessage(roundTrip(m))).toBe(true);
    }
  });

  it('takes nothing that Message.parse would refuse, whatever the JSON', () => {
    // Near-messages: every field of a valid message replaced, dropped or joined by any JSON value.
    const base = Message.withSource(Message.user('q'), 'redis', 'input');
    const field = fc.constantFrom('id', 'role', 'contents', 'createdAt', 'authorName', 'metadata', 'extra', '__proto__');
    const nearMessage = fc
      .tuple(fc.array(fc.tuple(field, fc.option(fc.jsonValue({ maxDepth: 4 }), { nil: undefined }))), fc.boolean())
      .map(([edits, textContent]) => {
        const m: Record<string, unknown> = roundTrip(base) as Record<string, unknown>;
        if (textContent) m.contents = [{ type: 'text', text: 'x' }, ...(Array.isArray(m.contents) ? m.contents : [])];
        for (const [key, value] of edits) {
          if (value === undefined) delete m[key];
          else Object.defineProperty(m, key, { value, enumerable: true, configurable: true, writable: true });
        }
        return JSON.stringify(m);
      });
    fc.assert(
      fc.property(
        fc.oneof(
          nearMessage,
          fc.jsonValue().map((v) => JSON.stringify(v)),
        ),
        (text) => {
          const value: unknown = JSON.parse(text);
          if (isCommonMessage(value)) expect(Message.isMessage(value)).toBe(true);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('leaves deep metadata, other contents and unknown fields to the full check', () => {
    const m = roundTrip(Message.user('q')) as Record<string, unknown>;
    expect(isCommonMessage({ ...m, metadata: { a: { b: { c: 1 } } } })).toBe(false);
    expect(isCommonMessage({ ...m, contents: [{ type: 'text', text: 'x', phase: 'commentary' }] })).toBe(false);
    expect(isCommonMessage({ ...m, contents: [{ type: 'refusal', refusal: 'no' }] })).toBe(false);
    expect(isCommonMessage({ ...m, extra: 1 })).toBe(false);
    expect(isCommonMessage({ ...m, role: 'robot' })).toBe(false);
    expect(isCommonMessage({ ...m, id: undefined })).toBe(false);
  });
});
