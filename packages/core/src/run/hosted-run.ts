import { checkId, checkSessionId, shortId } from '../backend/checks.js';
import { ConcurrencyError, ConfigurationError, InvalidInputError } from '../errors.js';
import { AgentSession } from '../session/agent-session.js';
import { markSaved, type SaveQueue, saveMerging, setSessionBase } from '../session/session-merge.js';
import { sessionMethods } from '../session/session-methods.js';
import type { AgentResponse } from '../spec/agent-response.js';
import type { SessionStore, StoredSession } from '../spec/session-store.js';
import { checkContextProviders } from './agent-options.js';
import type { AgentRunOptions } from './agent.js';
import { defaultHistory } from './default-history.js';
import type { AgentRuntime } from './execute-run.js';

/**
 * A run, hosted when it names a `sessionId`: the session is loaded from the agent's `sessionStore`
 * (a new one, owned by `userId`, when the store does not hold the id: stored before the run, so no
 * other user can take the id meanwhile), `execute` runs it, and the session is saved, merging what
 * other runs saved meanwhile (`agent.saveSession`). Without `sessionId`, `execute` runs as given.
 * `checkInput` checks the run's input (`InvalidInputError`) before a new session is stored, so a
 * refused input leaves nothing behind.
 * @throws ConfigurationError for `sessionId` with `session`, `sessionId` without a `sessionStore`,
 *   `userId` without `sessionId`, or a blank `sessionId` or `userId`; before anything runs.
 * @throws InvalidInputError when `userId` is given and the session belongs to another user (or to
 *   none); before anything runs or is stored.
 * @throws ConcurrencyError when the save met a change it cannot merge; `turnStored` says whether
 *   the turn is stored anyway.
 */
export async function hostedRun(
  runtime: AgentRuntime,
  runOptions: AgentRunOptions,
  queue: SaveQueue,
  execute: (options: AgentRunOptions) => Promise<AgentResponse>,
  checkInput: () => void,
): Promise<AgentResponse> {
  const { sessionId, userId, ...rest } = runOptions;
  const { name, client, sessionStore: store } = runtime.options;
  if (sessionId === undefined) {
    if (userId !== undefined) {
      throw new ConfigurationError(
        `Agent "${name}": a run's userId names the owner of its sessionId; pass sessionId with it (for a session you pass yourself, set its metadata.userId).`,
      );
    }
    return execute(runOptions);
  }
  checkSessionId(sessionId);
  if (userId !== undefined) checkId(userId, 'userId of a hosted run');
  if (rest.session) {
    throw new ConfigurationError(
      `Agent "${name}": a run takes either a session or a sessionId (got both, session ${shortId(rest.session.sessionId)} and sessionId ${shortId(sessionId)}). Pass sessionId to have the agent load and save the session, or session to do it yourself.`,
    );
  }
  if (!store) {
    throw new ConfigurationError(
      `Agent "${name}" has no sessionStore, so it cannot load session ${shortId(sessionId)}; pass one to createAgent, or pass the session itself (session).`,
    );
  }
  const { signal } = rest;
  const signalOption = signal ? { signal } : {};
  const providers = (rest.contextProviders ? defaultHistory(client, checkContextProviders(rest.contextProviders)) : runtime.history)
    .validators;
  const { restoreSession } = sessionMethods(name, providers, store, queue);
  const adopt = (stored: StoredSession): AgentSession => {
    if (userId !== undefined && stored.session.metadata.userId !== userId) {
      throw new InvalidInputError(
        `Session ${shortId(sessionId)} cannot be used by user ${shortId(userId)}: it belongs to ${stored.session.metadata.userId === undefined ? 'no user (it was saved without a userId)' : 'another user'}. Nothing was run or stored. Give each new conversation an id the server generates (generateId()) and hands to the client, so ids of other users are never guessed or reused.`,
      );
    }
    const session = restoreSession(stored.session);
    session.etag = stored.etag;
    setSessionBase(session, stored.session);
    return session;
  };
  const session = await load(store, sessionId, userId, signalOption, adopt, checkInput);
  const response = await execute({ ...rest, session });
  await queue(sessionId, signal, () => saveMerging(store, session, { providers, signal }));
  return response;
}

/**
 * The stored session `sessionId` (`adopt` checks its owner), or a new one owned by `userId`, stored
 * at once (`ifMatch: null`) so that the id is taken; when another writer stored it first, theirs.
 */
async function load(
  store: SessionStore,
  sessionId: string,
  userId: string | undefined,
  signalOption: { signal?: AbortSignal },
  adopt: (stored: StoredSession) => AgentSession,
  checkInput: () => void,
): Promise<AgentSession> {
  // Read without `userId`, so a session of another user is told apart from none (and not re-created).
  const stored = await store.get(sessionId, signalOption);
  if (stored) return adopt(stored);
  checkInput();
  const session = new AgentSession(userId === undefined ? { sessionId } : { sessionId, userId });
  try {
    markSaved(session, session.toJSON(), await store.set(session.toJSON(), { ifMatch: null, ...signalOption }));
    return session;
  } catch (error) {
    if (!ConcurrencyError.isInstance(error)) throw error;
  }
  const created = await store.get(sessionId, signalOption);
  if (!created) {
    throw new ConcurrencyError(
      sessionId,
      `Session ${shortId(sessionId)} was created and deleted by other writers while this run started; nothing was run or stored. Run it again.`,
      { turnStored: false },
    );
  }
  return adopt(created);
}
