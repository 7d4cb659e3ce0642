import { ConfigurationError, InvalidInputError, truncate } from '../errors.js';
import { isPlainObject } from '../messages/json.js';
import type { ListSessionsOptions, SessionPage, SessionSummary } from '../contracts/session-store.js';

/** Where a listing goes on from: the last entry of the previous page. */
export interface SessionCursor {
  /** That entry's `metadata.updatedAt`. */
  updatedAt: string;
  /** Its milliseconds since the epoch (the sort key). */
  updatedAtMs: number;
  /** That entry's `sessionId` (the tie-break). */
  sessionId: string;
}

/** `SessionStore.list` options, checked, with the defaults filled in. */
export interface CheckedListOptions {
  /** The user listed, or undefined for every session. */
  userId: string | undefined;
  /** The page size, 1 to 100. */
  limit: number;
  /** Where to go on from, or undefined for the first page. */
  cursor: SessionCursor | undefined;
}

/** The one time format of session metadata: what `Date.prototype.toISOString` gives for years 0-9999. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * Whether `value` is a time as session metadata holds it: exactly what `Date.prototype.toISOString`
 * gives (UTC, milliseconds, years 0000-9999), so the text sorts as the time does. Impossible
 * dates that `Date.parse` would roll over (February 30, 24:00) are not.
 */
export function isSessionTime(value: unknown): value is string {
  if (typeof value !== 'string' || !ISO_TIME.test(value)) return false;
  const ms = Date.parse(value);
  return !Number.isNaN(ms) && new Date(ms).toISOString() === value;
}

/**
 * The longest cursor `decodeSessionCursor` reads. A cursor holds a session id, which has no length
 * limit of its own: this bound only keeps garbage from being decoded, and leaves room for ids of
 * 100,000 characters even when every one is escaped in JSON.
 */
const MAX_CURSOR_LENGTH = 1_000_000;

/** The default page size of `SessionStore.list`. */
export const DEFAULT_LIST_LIMIT = 20;
/** The largest page size of `SessionStore.list`. */
export const MAX_LIST_LIMIT = 100;

/**
 * Checks `SessionStore.list` options: `limit` (default 20, 1 to 100), `userId` and the cursor,
 * which must come from a listing of the same `userId`.
 * @throws ConfigurationError for a `limit` or `userId` the app got wrong.
 * @throws InvalidInputError for a cursor that is malformed or belongs to another listing (a cursor
 *   usually comes from the client, who sent it wrong).
 */
export function checkListOptions(options: ListSessionsOptions = {}): CheckedListOptions {
  const { userId, limit = DEFAULT_LIST_LIMIT, cursor } = options;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw new ConfigurationError(`list: limit must be an integer from 1 to ${MAX_LIST_LIMIT}, got ${String(limit)}.`);
  }
  if (userId !== undefined && (typeof userId !== 'string' || userId.trim().length === 0)) {
    throw new ConfigurationError(`list: userId must be a non-blank string, got ${JSON.stringify(userId)}.`);
  }
  return { userId, limit, cursor: cursor === undefined ? undefined : decodeSessionCursor(cursor, userId) };
}

/** The cursor that goes on after `last` in a listing of `userId` (undefined: every session). */
export function encodeSessionCursor(last: SessionSummary, userId: string | undefined): string {
  const json = JSON.stringify({ v: 1, u: userId ?? null, t: last.metadata.updatedAt, s: last.sessionId });
  return base64UrlEncode(json);
}

/**
 * Reads a cursor `encodeSessionCursor` made for a listing of `userId`.
 * @throws InvalidInputError when it is malformed or was made for another listing.
 */
export function decodeSessionCursor(cursor: string, userId: string | undefined): SessionCursor {
  const bad = (why: string) => new InvalidInputError(`list: cursor ${JSON.stringify(truncate(String(cursor)))} ${why}.`);
  if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > MAX_CURSOR_LENGTH) throw bad('is not a cursor from list');
  let value: unknown;
  try {
    value = JSON.parse(base64UrlDecode(cursor));
  } catch {
    throw bad('is not a cursor from list');
  }
  if (!isPlainObject(value) || value.v !== 1 || typeof value.t !== 'string' || typeof value.s !== 'string') {
    throw bad('is not a cursor from list');
  }
  if (!isSessionTime(value.t) || (value.u !== null && typeof value.u !== 'string')) throw bad('is not a cursor from list');
  if ((value.u ?? undefined) !== userId) throw bad('belongs to another listing (another userId)');
  return { updatedAt: value.t, updatedAtMs: Date.parse(value.t), sessionId: value.s };
}

/** The listing order: newest `updatedAt` first, then `sessionId` descending (UTF-16 code unit order). */
export function compareSessions(a: SessionSummary, b: SessionSummary): number {
  const byTime = Date.parse(b.metadata.updatedAt) - Date.parse(a.metadata.updatedAt);
  if (byTime !== 0) return byTime;
  return a.sessionId < b.sessionId ? 1 : a.sessionId > b.sessionId ? -1 : 0;
}

/** Whether `entry` comes after `cursor` in the listing order (so belongs to the next pages). */
export function isAfterCursor(entry: SessionSummary, cursor: SessionCursor): boolean {
  const time = Date.parse(entry.metadata.updatedAt);
  return time < cursor.updatedAtMs || (time === cursor.updatedAtMs && entry.sessionId < cursor.sessionId);
}

/**
 * One page of a listing held in process (every entry at hand): filters by user, sorts, applies
 * the cursor and the limit, and counts the total. For stores that keep few sessions (memory, files).
 */
export function pageOfSessions(entries: Iterable<SessionSummary>, options: CheckedListOptions): SessionPage {
  const { userId, limit, cursor } = options;
  const all: SessionSummary[] = [];
  for (const entry of entries) if (userId === undefined || entry.metadata.userId === userId) all.push(entry);
  all.sort(compareSessions);
  const rest = cursor ? all.filter((entry) => isAfterCursor(entry, cursor)) : all;
  const sessions = rest.slice(0, limit);
  const page: SessionPage = { sessions, total: all.length };
  if (rest.length > limit) page.nextCursor = encodeSessionCursor(sessions[sessions.length - 1]!, userId);
  return page;
}

function base64UrlEncode(text: string): string {
  let binary = '';
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function base64UrlDecode(text: string): string {
  if (!/^[A-Za-z0-9_-]+$/.test(text)) throw new Error('not base64url');
  const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
}
