import { checkIfMatch } from '../backend/check-if-match.js';
import { checkId, checkSessionId } from '../backend/checks.js';
import { checkListOptions, pageOfSessions } from '../backend/session-cursor.js';
import { checkTurnLease } from '../backend/turn-lease.js';
import type {
  GetSessionOptions,
  ListSessionsOptions,
  SessionPage,
  SessionStore,
  SessionSummary,
  SetSessionOptions,
  StoredSession,
  TurnLease,
} from '../contracts/session-store.js';
import type { SessionJson } from '../contracts/session.js';
import { checkSessionForWrite, parseSessionJson, serializeSessionJson } from './agent-session.js';

/** How many leases the store keeps before it drops the expired ones. */
const LEASES_BEFORE_SWEEP = 1000;

/**
 * A `SessionStore` in process memory. Holds serialized copies, so later changes to a session never
 * leak in. Refuses empty or whitespace-only session ids (`ConfigurationError`) and sessions that
 * are not plain session JSON (`SessionStateError`, nothing stored). Turn leases (`leaseTurn`) are
 * kept beside the sessions, on the process's monotonic clock: agents sharing one instance run a
 * turn once.
 */
export class InMemorySessionStore implements SessionStore {
  readonly specificationVersion = 'v1';
  readonly #items = new Map<string, { json: string; etag: string; summary: SessionSummary }>();
  /** Turn leases by session id and turn, with when they expire (`performance.now()`). */
  readonly #leases = new Map<string, { holder: string; expiresAt: number }>();
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
   * Takes or renews the lease `lease.turn` of a session for `lease.holder` (see
   * `SessionStore.leaseTurn`); resolves to false while another holder's lease is live.
   * @throws ConfigurationError for a blank session id or a malformed lease.
   */
  async leaseTurn(sessionId: string, lease: TurnLease): Promise<boolean> {
    checkTurnLease('InMemorySessionStore.leaseTurn', sessionId, lease);
    lease.signal?.throwIfAborted();
    const key = JSON.stringify([sessionId, lease.turn]);
    const now = performance.now();
    const held = this.#leases.get(key);
    if (held && held.holder !== lease.holder && held.expiresAt > now) return false;
    if (!held && this.#leases.size >= LEASES_BEFORE_SWEEP) {
      for (const [k, v] of this.#leases) if (v.expiresAt <= now) this.#leases.delete(k);
    }
    this.#leases.set(key, { holder: lease.holder, expiresAt: now + lease.ttlMs });
    return true;
  }

  /**
   * Ends the lease `lease.turn` of a session if `lease.holder` holds it; resolves to whether it did.
   * @throws ConfigurationError for a blank session id or a malformed lease.
   */
  async releaseTurn(sessionId: string, lease: Omit<TurnLease, 'ttlMs'>): Promise<boolean> {
    checkTurnLease('InMemorySessionStore.releaseTurn', sessionId, lease, false);
    const key = JSON.stringify([sessionId, lease.turn]);
    const held = this.#leases.get(key);
    if (held?.holder !== lease.holder) return false;
    this.#leases.delete(key);
    return held.expiresAt > performance.now();
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
