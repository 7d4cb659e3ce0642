import { checkIfMatch } from '../backend/check-if-match.js';
import { checkId, checkSessionId } from '../backend/checks.js';
import { checkListOptions, pageOfSessions } from '../backend/session-cursor.js';
import type {
  GetSessionOptions,
  ListSessionsOptions,
  SessionPage,
  SessionStore,
  SessionSummary,
  SetSessionOptions,
  StoredSession,
} from '../spec/session-store.js';
import type { SessionJson } from '../spec/session.js';
import { checkSessionForWrite, parseSessionJson, serializeSessionJson } from './agent-session.js';

/**
 * A `SessionStore` in process memory. Holds serialized copies, so later changes to a session never
 * leak in. Refuses empty or whitespace-only session ids (`ConfigurationError`) and sessions that
 * are not plain session JSON (`SessionStateError`, nothing stored).
 */
export class InMemorySessionStore implements SessionStore {
  readonly specificationVersion = 'v1';
  readonly #items = new Map<string, { json: string; etag: string; summary: SessionSummary }>();
  #version = 0;

  /**
   * The stored session and its etag, or undefined; with `userId`, undefined too for a session of
   * another user or of none.
   * @throws ConfigurationError for a blank id or `userId`.
   */
  async get(sessionId: string, options: GetSessionOptions = {}): Promise<StoredSession | undefined> {
    const item = this.#items.get(checkSessionId(sessionId));
    if (options.userId !== undefined) checkId(options.userId, 'userId of a session read');
    if (!item || (options.userId !== undefined && item.summary.metadata.userId !== options.userId)) return undefined;
    return { session: parseSessionJson(item.json, { sessionId }), etag: item.etag };
  }

  /**
   * Stores a copy of the session and resolves to its new etag.
   * @throws ConfigurationError for a blank id, SessionStateError for a session that is not plain
   *   session JSON, ConcurrencyError when `ifMatch` does not hold (nothing is stored).
   */
  async set(session: SessionJson, options: SetSessionOptions = {}): Promise<string> {
    const checked = checkSessionForWrite(session);
    const current = this.#items.get(checked.sessionId);
    checkIfMatch(checked.sessionId, current?.etag, options.ifMatch);
    const json = serializeSessionJson(checked);
    const etag = String(++this.#version);
    const summary = { sessionId: checked.sessionId, metadata: checked.metadata };
    this.#items.set(checked.sessionId, { json, etag, summary: structuredClone(summary) });
    return etag;
  }

  /** Deletes a session; resolves to whether one was stored. @throws ConfigurationError for a blank id. */
  async delete(sessionId: string): Promise<boolean> {
    return this.#items.delete(checkSessionId(sessionId));
  }

  /**
   * Lists sessions newest first, a page at a time, with `total` (see `SessionStore.list`). Sorts
   * every session of the listing on each call.
   * @throws ConfigurationError for a bad `limit` or `userId`; InvalidInputError for a bad cursor.
   */
  async list(options?: ListSessionsOptions): Promise<SessionPage> {
    const checked = checkListOptions(options);
    const page = pageOfSessions(
      Array.from(this.#items.values(), (item) => item.summary),
      checked,
    );
    return { ...page, sessions: structuredClone(page.sessions) };
  }
}
