import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigurationError, InvalidInputError } from '../errors.js';
import type { SessionSummary } from '../contracts/session-store.js';
import {
  checkListOptions,
  compareSessions,
  decodeSessionCursor,
  encodeSessionCursor,
  isAfterCursor,
  isSessionTime,
  pageOfSessions,
} from './session-cursor.js';

const T = Date.UTC(2030, 0, 1);
const summary = (sessionId: string, ms = T, userId?: string): SessionSummary => {
  const time = new Date(ms).toISOString();
  return { sessionId, metadata: { createdAt: time, updatedAt: time, ...(userId === undefined ? {} : { userId }) } };
};
const base64Url = (text: string) => Buffer.from(text).toString('base64url');

/** The ConfigurationError `fn` throws (the app's own mistake: a limit, a user id). */
function configurationError(fn: () => unknown): ConfigurationError {
  try {
    fn();
  } catch (error) {
    expect(ConfigurationError.isInstance(error), String(error)).toBe(true);
    return error as ConfigurationError;
  }
  throw new Error('expected a ConfigurationError, nothing was thrown');
}

/** The InvalidInputError `fn` throws (a cursor the client sent wrong). */
function invalidInput(fn: () => unknown): InvalidInputError {
  try {
    fn();
  } catch (error) {
    expect(InvalidInputError.isInstance(error), String(error)).toBe(true);
    return error as InvalidInputError;
  }
  throw new Error('expected an InvalidInputError, nothing was thrown');
}

describe('encodeSessionCursor and decodeSessionCursor', () => {
  const ids = ['a', 'session 🦜', 'محادثة', 'x\uD800', '\uDC00lone', '"quoted" \\ back', 'line\nbreak', 'x'.repeat(100_000)];
  const users = [undefined, 'u', 'tenant/42:user "q"', '🦜', 'y\uDBFF', 'é'];

  it('round-trip every session id and user id, unicode and lone surrogates included, in URL-safe text', () => {
    for (const sessionId of ids) {
      for (const userId of users) {
        const entry = summary(sessionId, T + 123, userId);
        const cursor = encodeSessionCursor(entry, userId);
        expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(decodeSessionCursor(cursor, userId)).toEqual({
          updatedAt: entry.metadata.updatedAt,
          updatedAtMs: T + 123,
          sessionId,
        });
      }
    }
  });

  it('refuses a cursor of another listing, naming why', () => {
    const entry = summary('a');
    for (const [made, used] of [
      ['u', 'v'],
      ['u', undefined],
      [undefined, 'u'],
      ['é', 'e\u0301'],
    ] as const) {
      const error = invalidInput(() => decodeSessionCursor(encodeSessionCursor(entry, made), used));
      expect(error.message).toContain('belongs to another listing');
    }
  });

  it.each([
    ['empty', ''],
    ['too long', 'A'.repeat(1_000_001)],
    ['not base64url', 'abc+/=='],
    ['spaces', 'eyJ2IjoxfQ '],
    ['one character too many for base64', 'A'],
    ['base64 of text that is not JSON', base64Url('hello')],
    ['base64 of invalid UTF-8', Buffer.from([0xff, 0xfe, 0x7b]).toString('base64url')],
    ['a JSON array', base64Url('[1]')],
    ['a JSON string', base64Url('"x"')],
    ['another version', base64Url(JSON.stringify({ v: 2, u: null, t: '2030-01-01T00:00:00.000Z', s: 'a' }))],
    ['no version', base64Url(JSON.stringify({ u: null, t: '2030-01-01T00:00:00.000Z', s: 'a' }))],
    ['a time that is not a time', base64Url(JSON.stringify({ v: 1, u: null, t: 'not a time', s: 'a' }))],
    ['a time Date.parse rolls over', base64Url(JSON.stringify({ v: 1, u: null, t: '2030-02-30T00:00:00.000Z', s: 'a' }))],
    ['a time without milliseconds', base64Url(JSON.stringify({ v: 1, u: null, t: '2030-01-01T00:00:00Z', s: 'a' }))],
    ['a numeric time', base64Url(JSON.stringify({ v: 1, u: null, t: 1893456000000, s: 'a' }))],
    ['a numeric session id', base64Url(JSON.stringify({ v: 1, u: null, t: '2030-01-01T00:00:00.000Z', s: 5 }))],
    ['a numeric user id', base64Url(JSON.stringify({ v: 1, u: 5, t: '2030-01-01T00:00:00.000Z', s: 'a' }))],
  ])('refuses %s as an InvalidInputError that shows the cursor cut short', (_, cursor) => {
    const error = invalidInput(() => decodeSessionCursor(cursor, undefined));
    expect(error.message).toContain('is not a cursor from list');
    expect(error.message.length).toBeLessThan(300);
  });

  it('refuses a cursor that is not a string', () => {
    for (const cursor of [undefined, null, 5, {}, ['a']]) invalidInput(() => decodeSessionCursor(cursor as never, undefined));
  });

  it('property: any string is a cursor of that listing or an InvalidInputError, never another error', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string().map(base64Url),
          fc.jsonValue().map((v) => base64Url(JSON.stringify(v))),
        ),
        (cursor) => {
          try {
            decodeSessionCursor(cursor, undefined);
          } catch (error) {
            expect(InvalidInputError.isInstance(error), String(error)).toBe(true);
          }
        },
      ),
    );
  });
});

describe('isSessionTime', () => {
  it('accepts exactly what toISOString gives for years 0000-9999', () => {
    for (const ms of [0, T, T + 999, Date.parse('0000-01-01T00:00:00.000Z'), Date.UTC(9999, 11, 31, 23, 59, 59, 999)])
      expect(isSessionTime(new Date(ms).toISOString()), new Date(ms).toISOString()).toBe(true);
    for (const value of [
      '2030-01-01T00:00:00Z',
      '2030-01-01T00:00:00.000+00:00',
      '2030-01-01',
      '2030-02-29T00:00:00.000Z',
      '2030-01-01T24:00:00.000Z',
      '2030-13-01T00:00:00.000Z',
      '+012030-01-01T00:00:00.000Z',
      ' 2030-01-01T00:00:00.000Z',
      T,
      null,
    ])
      expect(isSessionTime(value), String(value)).toBe(false);
  });
});

describe('checkListOptions', () => {
  it('fills in the defaults: 20 per page, every user, from the start', () => {
    expect(checkListOptions()).toEqual({ userId: undefined, limit: 20, cursor: undefined });
    expect(checkListOptions({ limit: 1 }).limit).toBe(1);
    expect(checkListOptions({ limit: 100 }).limit).toBe(100);
  });

  it('refuses limits other than whole numbers from 1 to 100, and blank user ids', () => {
    for (const limit of [0, 101, 1.5, -1, Number.NaN, Number.POSITIVE_INFINITY, '5', null])
      expect(configurationError(() => checkListOptions({ limit: limit as never })).message).toContain(
        'limit must be an integer from 1 to 100',
      );
    for (const userId of ['', ' ', '\t\n', 5, null])
      expect(configurationError(() => checkListOptions({ userId: userId as never })).message).toContain(
        'userId must be a non-blank string',
      );
  });

  it('decodes the cursor for the listing of its userId', () => {
    const cursor = encodeSessionCursor(summary('b', T, 'u'), 'u');
    expect(checkListOptions({ userId: 'u', cursor }).cursor).toEqual({
      updatedAt: new Date(T).toISOString(),
      updatedAtMs: T,
      sessionId: 'b',
    });
    invalidInput(() => checkListOptions({ cursor }));
  });
});

describe('the listing order', () => {
  it('compareSessions: newest updatedAt first, ties by sessionId descending in UTF-16 code unit order', () => {
    const entries = [
      summary('a', T),
      summary('b', T + 1),
      summary('😀', T),
      summary('\uFFFF', T),
      summary('ab', T),
      summary('B', T),
      summary('c', T - 1),
    ];
    // '\uFFFF' > '😀' (U+D83D as its first code unit) > 'ab' > 'a' > 'B' in code units.
    expect(entries.sort(compareSessions).map((e) => e.sessionId)).toEqual(['b', '\uFFFF', '😀', 'ab', 'a', 'B', 'c']);
    // createdAt plays no part.
    const older = { ...summary('z', T), metadata: { ...summary('z', T).metadata, createdAt: new Date(0).toISOString() } };
    expect(compareSessions(older, summary('z', T))).toBe(0);
  });

  it('isAfterCursor: strictly after the cursor entry in the listing order', () => {
    const cursor = decodeSessionCursor(encodeSessionCursor(summary('m', T), undefined), undefined);
    expect(isAfterCursor(summary('m', T), cursor)).toBe(false);
    expect(isAfterCursor(summary('n', T), cursor)).toBe(false);
    expect(isAfterCursor(summary('l', T), cursor)).toBe(true);
    expect(isAfterCursor(summary('z', T - 1), cursor)).toBe(true);
    expect(isAfterCursor(summary('a', T + 1), cursor)).toBe(false);
  });
});

describe('pageOfSessions', () => {
  const entries = [summary('a', T, 'u'), summary('b', T + 2, 'v'), summary('c', T + 1, 'u'), summary('d', T + 1)];

  it('filters by user, sorts, cuts at the limit with a cursor only when more follow, and counts the total', () => {
    expect(pageOfSessions(entries, checkListOptions())).toEqual({ sessions: [entries[1], entries[3], entries[2], entries[0]], total: 4 });
    const first = pageOfSessions(entries, checkListOptions({ userId: 'u', limit: 1 }));
    expect(first.sessions).toEqual([entries[2]]);
    expect(first.total).toBe(2);
    const second = pageOfSessions(entries, checkListOptions({ userId: 'u', limit: 1, cursor: first.nextCursor! }));
    expect(second).toEqual({ sessions: [entries[0]], total: 2 });
    expect(pageOfSessions(entries, checkListOptions({ userId: 'u', limit: 2 })).nextCursor).toBeUndefined();
    expect(pageOfSessions([], checkListOptions())).toEqual({ sessions: [], total: 0 });
  });

  it('property: paging with any limit visits every session of the listing once, in order, full pages until the last', () => {
    const arbitrary = fc.uniqueArray(
      fc.record({
        sessionId: fc.string({ minLength: 1, maxLength: 4 }),
        minute: fc.integer({ min: 0, max: 5 }),
        user: fc.constantFrom('u', 'v', undefined),
      }),
      { selector: (e) => e.sessionId, maxLength: 40 },
    );
    fc.assert(
      fc.property(arbitrary, fc.integer({ min: 1, max: 100 }), fc.constantFrom('u', undefined), (specs, limit, userId) => {
        const all = specs.map((s) => summary(s.sessionId, T + s.minute * 60_000, s.user));
        const expected = all.filter((e) => userId === undefined || e.metadata.userId === userId).sort(compareSessions);
        const seen: SessionSummary[] = [];
        let cursor: string | undefined;
        for (let pages = 0; pages <= expected.length + 1; pages++) {
          const page = pageOfSessions(all, checkListOptions({ limit, ...(userId ? { userId } : {}), ...(cursor ? { cursor } : {}) }));
          expect(page.total).toBe(expected.length);
          seen.push(...page.sessions);
          if (page.nextCursor === undefined) break;
          expect(page.sessions).toHaveLength(limit);
          cursor = page.nextCursor;
        }
        expect(seen).toEqual(expected);
      }),
    );
  });
});
