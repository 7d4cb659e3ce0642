import { historiesIn } from '../policies/wrap-provider.js';
import { InMemoryHistoryProvider } from '../history/in-memory-history-provider.js';
import type { AgentSession } from '../session/agent-session.js';
import { recordTurn } from '../session/session-merge.js';
import { describe } from '../errors.js';
import type { AgentResponse } from '../contracts/agent-response.js';
import type { AgentEvent } from '../contracts/events.js';
import type { ContextProvider, ProviderRunArgs, SessionContext } from '../contracts/run-view.js';
import { boundHook } from './pipeline.js';

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

/** The `onTurnStored` calls a successful run owes until its turn is stored, by its response. */
const owed = new WeakMap<AgentResponse, () => Promise<void>>();

/** What `oweTurnStored` needs of the run. */
export interface TurnStoredRun {
  runId: string;
  providers: readonly ContextProvider[];
  args: (provider: ContextProvider) => ProviderRunArgs;
  /** The caller's signal: aborting it stops waiting for the hooks. */
  signal: AbortSignal | undefined;
  timeoutMs: number | undefined;
  emit: ((event: AgentEvent) => void) | undefined;
}

/**
 * Records the `onTurnStored` hooks of a run that succeeded with `response`; `settleTurnStored`
 * calls them once the turn is stored. A response never settled (its save failed) calls none.
 */
export function oweTurnStored(response: AgentResponse, run: TurnStoredRun): void {
  const hooks = run.providers.filter((p) => p.onTurnStored);
  if (!hooks.length) return;
  owed.set(response, async () => {
    for (const provider of [...hooks].reverse()) {
      try {
        await boundHook(provider, 'onTurnStored', run.signal, run.timeoutMs, () => provider.onTurnStored!(run.args(provider)));
      } catch (error) {
        run.emit?.({
          type: 'provider-diagnostic',
          runId: run.runId,
          sourceId: provider.sourceId,
          code: 'turn-stored-failed',
          message: `onTurnStored of "${provider.sourceId}" failed after the turn was stored (the run succeeded; what it derives from the turn is missing): ${describe(error)}`,
          error,
        });
      }
    }
  });
}

/** Whether the run of `response` owes `onTurnStored` calls that `settleTurnStored` has not made yet. */
export function owesTurnStored(response: AgentResponse): boolean {
  return owed.has(response);
}

/**
 * Calls the `onTurnStored` hooks the run of `response` owes, once: after a run, or after a hosted
 * run's save. A hook's failure is a `turn-stored-failed` diagnostic, never a rejection.
 */
export async function settleTurnStored(response: AgentResponse): Promise<AgentResponse> {
  const call = owed.get(response);
  if (call) {
    owed.delete(response);
    await call();
  }
  return response;
}
