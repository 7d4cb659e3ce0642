import { HOSTILE_SESSION_IDS } from '@ctx/provider-tests';
import { describe, expect, it } from 'vitest';
import { encodeKeyPart, indexKeys, MAX_ENCODED_ID_LENGTH } from './keys.js';

describe('encodeKeyPart', () => {
  const ids = [
    ...HOSTILE_SESSION_IDS,
    '}{',
    '{',
    '}',
    '%',
    '%25',
    '~',
    '\uD800',
    '\uDC00',
    '\uFFFD',
    '\uD83E\uDD9C',
    'a\u0000b',
    '',
    'x'.repeat(MAX_ENCODED_ID_LENGTH),
    'x'.repeat(MAX_ENCODED_ID_LENGTH + 1),
  ];

  it('maps distinct ids to distinct parts made only of [A-Za-z0-9._%~-]', () => {
    const encoded = ids.map(encodeKeyPart);
    expect(new Set(encoded).size).toBe(new Set(ids).size);
    for (const part of encoded) expect(part).toMatch(/^[A-Za-z0-9._%~-]*$/);
  });

  it('keeps short ids readable and hashes long ones to a fixed size', () => {
    expect(encodeKeyPart('user-42.chat_1')).toBe('user-42.chat_1');
    expect(encodeKeyPart('a:b{c}*')).toBe('a%3Ab%7Bc%7D%2A');
    expect(encodeKeyPart('é')).toBe('%C3%A9');
    expect(encodeKeyPart('\uD800x')).toBe('%uD800x');
    expect(encodeKeyPart('x'.repeat(MAX_ENCODED_ID_LENGTH))).toHaveLength(MAX_ENCODED_ID_LENGTH);
    for (const long of ['x'.repeat(4096), 'x'.repeat(4095), '🦜'.repeat(60)]) expect(encodeKeyPart(long)).toMatch(/^~[A-Za-z0-9_-]{43}$/);
  });
});

describe('indexKeys', () => {
  it('gives every listing three keys under one hash tag of its own: every session, and one per user, never the same', () => {
    const users = [...HOSTILE_SESSION_IDS, 'all', '{all}', 'user:all', 'a}b', 'x'.repeat(512)];
    const tags = new Set<string>();
    for (const keys of [indexKeys('ctx'), ...users.map((u) => indexKeys('ctx', u))]) {
      const parts = Object.values(keys).map((k) => k.match(/^ctx:sessions:(\{[^{}]+\}):(order|meta|expires)$/));
      expect(parts.every(Boolean), JSON.stringify(keys)).toBe(true);
      expect(new Set(parts.map((m) => m![1])).size).toBe(1);
      tags.add(parts[0]![1]!);
    }
    expect(tags.size).toBe(users.length + 1);
    expect(indexKeys('ctx')).toEqual({
      order: 'ctx:sessions:{all}:order',
      meta: 'ctx:sessions:{all}:meta',
      expires: 'ctx:sessions:{all}:expires',
    });
    expect(indexKeys('app', 'ada@example.com').order).toBe('app:sessions:{user:ada%40example.com}:order');
  });
});
