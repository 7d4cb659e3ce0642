import type { SessionJson } from './agent-session.js';
import { parseSessionJson } from './agent-session.js';
import { ConcurrencyError, truncate } from './errors.js';
import type { SessionStore, SetSessionOptions, StoredSession } from './session-store.js';

/** A `SessionStore` in process memory. Holds serialized copies, so later changes to a session never leak in. */
export class InMemorySessionStore implements SessionStore {
  readonly #items = new Map<string, { json: string; etag: string }>();
  #version = 0;

  async get(sessionId: string): Promise<StoredSession | undefined> {
    const item = this.#items.get(sessionId);
    return item && { session: parseSessionJson(item.json), etag: item.etag };
  }

  async set(session: SessionJson, options: SetSessionOptions = {}): Promise<string> {
    const current = this.#items.get(session.sessionId);
    checkIfMatch(session.sessionId, current?.etag, options.ifMatch);
    const etag = String(++this.#version);
    this.#items.set(session.sessionId, { json: JSON.stringify(session), etag });
    return etag;
  }

  async delete(sessionId: string): Promise<boolean> {
    return this.#items.delete(sessionId);
  }
}

/**
 * Applies `ifMatch` semantics for store implementations.
 * @throws ConcurrencyError when `ifMatch` does not hold for the current etag.
 */
export function checkIfMatch(sessionId: string, currentEtag: string | undefined, ifMatch: string | null | undefined): void {
  if (ifMatch === undefined) return;
  if (ifMatch === null ? currentEtag !== undefined : currentEtag !== ifMatch) {
    throw new ConcurrencyError(
      sessionId,
      ifMatch === null
        ? `Session "${truncate(sessionId)}" already exists in the store; load it before saving over it.`
        : undefined,
    );
  }
}
