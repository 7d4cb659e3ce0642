import { checkIfMatch } from '../backend/check-if-match.js';
import type { SessionStore, SetSessionOptions, StoredSession } from '../spec/session-store.js';
import type { SessionJson } from '../spec/session.js';
import { parseSessionJson } from './agent-session.js';

/** A `SessionStore` in process memory. Holds serialized copies, so later changes to a session never leak in. */
export class InMemorySessionStore implements SessionStore {
  readonly specificationVersion = 'v1';
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
