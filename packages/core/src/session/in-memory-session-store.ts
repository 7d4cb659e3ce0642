import { checkIfMatch } from '../backend/check-if-match.js';
import { checkSessionId } from '../backend/checks.js';
import type { SessionStore, SetSessionOptions, StoredSession } from '../spec/session-store.js';
import type { SessionJson } from '../spec/session.js';
import { checkSessionForWrite, parseSessionJson, serializeSessionJson } from './agent-session.js';

/**
 * A `SessionStore` in process memory. Holds serialized copies, so later changes to a session never
 * leak in. Refuses empty or whitespace-only session ids (`ConfigurationError`) and sessions that
 * are not plain session JSON (`SessionStateError`, nothing stored).
 */
export class InMemorySessionStore implements SessionStore {
  readonly specificationVersion = 'v1';
  readonly #items = new Map<string, { json: string; etag: string }>();
  #version = 0;

  async get(sessionId: string): Promise<StoredSession | undefined> {
    const item = this.#items.get(checkSessionId(sessionId));
    return item && { session: parseSessionJson(item.json), etag: item.etag };
  }

  async set(session: SessionJson, options: SetSessionOptions = {}): Promise<string> {
    const checked = checkSessionForWrite(session);
    const current = this.#items.get(checked.sessionId);
    checkIfMatch(checked.sessionId, current?.etag, options.ifMatch);
    const json = serializeSessionJson(checked);
    const etag = String(++this.#version);
    this.#items.set(checked.sessionId, { json, etag });
    return etag;
  }

  async delete(sessionId: string): Promise<boolean> {
    return this.#items.delete(checkSessionId(sessionId));
  }
}
