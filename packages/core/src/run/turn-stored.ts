import { HistoryProvider } from '../history/history-provider.js';
import { InMemoryHistoryProvider } from '../history/in-memory-history-provider.js';
import type { AgentSession } from '../session/agent-session.js';
import { recordTurn } from '../session/session-merge.js';
import type { ContextProvider } from '../spec/run-view.js';

/**
 * Whether a run of `providers` stores its turn outside the session: a history provider of the run
 * that stores and keeps its messages in a backend (Redis, Cosmos DB), not in the session's state as
 * the in-memory history does. Such a turn survives a failed save of the session.
 */
export function storesTurnOutsideSession(providers: readonly ContextProvider[]): boolean {
  return providers.some(
    (p) => HistoryProvider.isInstance(p) && !(p instanceof InMemoryHistoryProvider) && (p.storeInputs || p.storeOutputs),
  );
}

/** Notes on `session` that a run of `providers` succeeded, for the `turnStored` of its next failed save. */
export function noteTurn(session: AgentSession, providers: readonly ContextProvider[]): void {
  recordTurn(session, storesTurnOutsideSession(providers));
}
