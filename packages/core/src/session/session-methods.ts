import { checkOptionNames, optionNames } from '../backend/checks.js';
import { ConfigurationError, describe, SessionStateError } from '../errors.js';
import { pathJoin } from '../messages/json.js';
import type { ContextProvider } from '../contracts/run-view.js';
import type { GetSessionOptions, SessionStore } from '../contracts/session-store.js';
import { sessionOfUser } from '../backend/session-owner.js';
import type { SessionJson } from '../contracts/session.js';
import { AgentSession, type AgentSessionInit } from './agent-session.js';
import { type SaveQueue, saveMerging, saveQueue, setSessionBase } from './session-merge.js';

/** The session methods of an agent: create, restore, and load and save through its store. */
export interface SessionMethods {
  createSession(init?: AgentSessionInit): AgentSession;
  getSessionById(sessionId: string): AgentSession;
  serializeSession(session: AgentSession): SessionJson;
  restoreSession(json: unknown): AgentSession;
  getSession(sessionId: string, options?: GetSessionOptions): Promise<AgentSession | undefined>;
  saveSession(session: AgentSession, options?: { signal?: AbortSignal }): Promise<void>;
}

const SESSION_INIT = optionNames<AgentSessionInit>()({
  sessionId: true,
  serviceSessionId: true,
  state: true,
  userId: true,
  title: true,
  custom: true,
});
const GET_OPTIONS = optionNames<GetSessionOptions>()({ userId: true, signal: true });

/**
 * The session methods of agent `name`: restored sessions are checked by each of `validators`
 * (`validateState` on its own slot), whose `mergeState` merges a save that conflicts; `store` backs
 * `getSession` and `saveSession`, whose saves of one session wait in `queue`.
 */
export function sessionMethods(
  name: string,
  validators: readonly ContextProvider[],
  store: SessionStore | undefined,
  queue: SaveQueue = saveQueue(),
): SessionMethods {
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
    createSession: (init) => {
      checkOptionNames('agent.createSession', init, SESSION_INIT);
      return new AgentSession(init);
    },
    getSessionById: (sessionId) => new AgentSession({ sessionId }),
    serializeSession: (session) => session.toJSON(),
    restoreSession,
    async getSession(sessionId, options = {}) {
      checkOptionNames('agent.getSession', options, GET_OPTIONS);
      const { userId } = options;
      // The owner is checked here too, so a store that does not know `userId` is still safe.
      const stored = sessionOfUser(await storeOf().get(sessionId, options), userId);
      if (!stored) return undefined;
      const session = restoreSession(stored.session);
      session.etag = stored.etag;
      setSessionBase(session, stored.session);
      return session;
    },
    async saveSession(session, options = {}) {
      const target = storeOf();
      const { signal } = options;
      await queue(session.sessionId, signal, () => saveMerging(target, session, { providers: validators, signal }));
    },
  };
}
