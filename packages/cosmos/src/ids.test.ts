import { HOSTILE_SESSION_IDS } from '@ctx/provider-tests';
import { describe, expect, it } from 'vitest';
import { encodeIdPart, encodeItemId, MAX_ID_PART_LENGTH, sessionPartitionValue } from './ids.js';

describe('encodeIdPart', () => {
  const ids = [
    ...HOSTILE_SESSION_IDS,
    '_',
    '_5F',
    '~',
    'a/b',
    'a\\b',
    'a?b',
    'a#b',
    'a%b',
    'a:b',
    '\uD800',
    '\uDC00',
    '\uFFFD',
    '\uD83E\uDD9C',
    'a\u0000b',
    '',
    'x'.repeat(MAX_ID_PART_LENGTH),
    'x'.repeat(MAX_ID_PART_LENGTH + 1),
  ];

  it('maps distinct ids to distinct parts made only of [A-Za-z0-9._~-] and no separator', () => {
    const encoded = ids.map(encodeIdPart);
    expect(new Set(encoded).size).toBe(new Set(ids).size);
    for (const part of encoded) expect(part).toMatch(/^[A-Za-z0-9._~-]*$/);
  });

  it('keeps short ids readable and hashes long ones to a fixed size', () => {
    expect(encodeIdPart('user-42.chat')).toBe('user-42.chat');
    expect(encodeIdPart('a/b?c#d_e')).toBe('a_2Fb_3Fc_23d_5Fe');
    expect(encodeIdPart('é')).toBe('_C3_A9');
    expect(encodeIdPart('\uD800x')).toBe('_uD800x');
    expect(encodeIdPart('x'.repeat(MAX_ID_PART_LENGTH))).toHaveLength(MAX_ID_PART_LENGTH);
    for (const long of ['x'.repeat(4096), 'x'.repeat(4095), '🦜'.repeat(30)]) expect(encodeIdPart(long)).toMatch(/^~[A-Za-z0-9_-]{43}$/);
  });

  it('partition values are injective over the hostile ids and never longer than 100 bytes', () => {
    const values = HOSTILE_SESSION_IDS.map(sessionPartitionValue);
    expect(new Set(values).size).toBe(HOSTILE_SESSION_IDS.length);
    for (const v of values) expect(Buffer.byteLength(v)).toBeLessThanOrEqual(100);
  });
});

describe('encodeItemId', () => {
  const dots = ['.', '..', '...', '.'.repeat(26), '.'.repeat(27), '.'.repeat(MAX_ID_PART_LENGTH), '.'.repeat(MAX_ID_PART_LENGTH + 1)];

  it('never makes an id that is only dots (a URL path segment the SDK resolves away): their dots become _2E', () => {
    expect(['.', '..', '...'].map((id) => encodeItemId(id))).toEqual(['_2E', '_2E_2E', '_2E_2E_2E']);
    expect(encodeItemId('.'.repeat(26))).toBe('_2E'.repeat(26));
    expect(encodeItemId('.'.repeat(27))).toMatch(/^~[A-Za-z0-9_-]{43}$/);
    for (const id of [...dots, '..', 'a/..', '%2e%2e', '.%2e', '%2E.', ' .. ']) {
      expect(encodeItemId(id)).not.toMatch(/^\.*$/);
      expect(encodeItemId(id)).toMatch(/^[A-Za-z0-9._~-]{1,80}$/);
    }
  });

  it('keeps every other id exactly as encodeIdPart made it, so stored items stay readable', () => {
    for (const id of [...HOSTILE_SESSION_IDS, 'a.', '.a', 'a..b', '.'.repeat(MAX_ID_PART_LENGTH + 1), '_2E', '_2E_2E']) {
      if (!/^\.+$/.test(id) || id.length > MAX_ID_PART_LENGTH) expect(encodeItemId(id)).toBe(encodeIdPart(id));
    }
    expect(encodeItemId('..', 'cosmos')).toBe('..:cosmos');
    expect(encodeItemId('.', '.', '..')).toBe('.:.:..');
    expect(encodeItemId('t', 'u', 'a/b', 'src', 'm:1')).toBe('t:u:a_2Fb:src:m_3A1');
  });

  it('maps distinct ids to distinct item ids, dot-only ones included', () => {
    const ids = [...new Set([...HOSTILE_SESSION_IDS, ...dots, '_2E', '_2E_2E', '_', '_5F', '~', 'a.', '.a'])];
    expect(new Set(ids.map((id) => encodeItemId(id))).size).toBe(ids.length);
  });
});
