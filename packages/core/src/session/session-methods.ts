import { ConfigurationError, describe, SessionStateError } from '../errors.js';
import { pathJoin } from '../messages/json.js';
import type { ContextProvider } from '../spec/run-view.js';
import type { SessionStore } from '../spec/session-store.js';
import type { SessionJson } from '../spec/session.js';
import { AgentSession, type AgentSessionInit } from './agent-session.js';

/** The session methods of an agent: create, restore, and load and save through its store. */
export interface SessionMethods {
  createSession(init?: AgentSessionInit): AgentSession;
  getSessionById(sessionId: string): AgentSession;
  serializeSession(session: AgentSession): SessionJson;
  restoreSession(json: unknown): AgentSession;
  getSession(sessionId: string, options?: { signal?: AbortSignal }): Promise<AgentSession>;
  saveSession(session: AgentSession, options?: { signal?: AbortSignal }): Promise<void>;
}

/**
 * The session methods of agent `name`: restored sessions are checked by each of `validators`
 * (`validateState` on its own slot); `store` backs `getSession` and `saveSession`.
 */
export function sessionMethods(name: string, validators: readonly ContextProvider[], store: SessionStore | undefined): SessionMethods {
  const storeOf = (): SessionStore => {
    if (!store) throw new ConfigurationError(`Agent "${name}" has no sessionStore; pass one to createAgent to use getSession/saveSession.`);
    return store;
  };
  const restoreSession = (json: unknown): AgentSession => {
    const session = AgentSession.fromJSON(json);
    for (const provider of validators) {
      const slot = session.state[provider.sourceId];
      if (slot === undefined || !provider.validateState) continue;
      const path = pathJoin('$.state', provider.sourceId);
      try {
        provider.validateState(slot, path);
      } catch (error) {
        if (SessionStateError.isInstance(error)) throw error;
        throw new SessionStateError(path, `rejected by provider "${provider.sourceId}": ${describe(error)}`, { cause: error });
      }
    }
    return session;
  };
  return {
    createSession: (init) => new AgentSession(init),
    getSessionById: (sessionId) => new AgentSession({ sessionId }),
    serializeSession: (session) => session.toJSON(),
    restoreSession,
    async getSession(sessionId, options) {
      const stored = await storeOf().get(sessionId, options);
      if (!stored) return new AgentSession({ sessionId });
      const session = restoreSession(stored.session);
      session.etag = stored.etag;
      return session;
    },
    async saveSession(session, options) {
      session.etag = await storeOf().set(session.toJSON(), { ifMatch: session.etag ?? null, ...options });
    },
  };
}
