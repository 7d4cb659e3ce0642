import { historiesIn } from '../policies/wrap-provider.js';
import { InMemoryHistoryProvider } from '../history/in-memory-history-provider.js';
import type { AgentSession } from '../session/agent-session.js';
import { recordTurn } from '../session/session-merge.js';
import type { ContextProvider, SessionContext } from '../spec/run-view.js';

/**
 * Whether the run with `context` stored its whole turn outside the session: a history provider of
 * the run that keeps its messages in a backend (Redis, Cosmos DB), not in the session's state as the
 * in-memory history does, stored its input and its response (a skipped or store-only-inputs
 * history does not count). Such a turn survives a failed save of the session.
 */
export function storedTurnOutsideSession(providers: readonly ContextProvider[], context: SessionContext): boolean {
  return historiesIn(providers).some((p) => !(p instanceof InMemoryHistoryProvider) && p.storedWholeTurn?.(context) === true);
}

/** Notes on `session` that the run with `context` succeeded, for the `turnStored` of its next failed save. */
export function noteTurn(session: AgentSession, providers: readonly ContextProvider[], context: SessionContext): void {
  recordTurn(session, storedTurnOutsideSession(providers, context));
}
