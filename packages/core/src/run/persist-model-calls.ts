import { historiesIn } from '../policies/wrap-provider.js';
import { isAbortError, ProviderError } from '../errors.js';
import { InMemoryHistoryProvider } from '../history/in-memory-history-provider.js';
import type { Message } from '../messages/message.js';
import type { AgentSession } from '../session/agent-session.js';
import { saveMerging } from '../session/session-merge.js';
import type { AgentEvent } from '../contracts/events.js';
import type { ContextProvider, ProviderRunArgs } from '../contracts/run-view.js';
import type { SessionStore } from '../contracts/session-store.js';
import { boundHook } from './pipeline.js';

/** What `persistModelCalls` needs of the run. */
export interface ModelCallPersistence {
  runId: string;
  /** The providers taking part in the run, outermost first. */
  inside: readonly ContextProvider[];
  args: (provider: ContextProvider) => ProviderRunArgs;
  /** The run's signal when something can abort the run. */
  signal: AbortSignal | undefined;
  /** The agent's `providerTimeoutMs`. */
  timeoutMs: number | undefined;
  /** Where events go; undefined when nobody listens (no `onEvent`), so `emit?.({ ... })` builds none. */
  emit: ((event: AgentEvent) => void) | undefined;
  /** The run's session and the agent's store, when both exist: the session is saved after a write of history kept in it. */
  session: AgentSession | undefined;
  store: SessionStore | undefined;
}

/**
 * The tool loop's `onModelCall` for `persistence: 'model-call'` (after each model call and after
 * each batch of tool results): every history provider of the run stores what is new (`HistoryProvider.storeProgress`), innermost first as `afterRun` runs, each
 * bounded like its hooks; then, when a history that lives in the session stored something, the
 * session is saved to the agent's store, merging what other runs saved meanwhile (as `agent.saveSession`
 * does). A failed save fails the run with a `ProviderError`; under
 * `onError: 'skip'` that provider stores nothing more during the run (a `provider-skipped` event
 * says so) and its `afterRun` stores what is left.
 */
export function persistModelCalls(run: ModelCallPersistence): (produced: readonly Message[]) => Promise<void> {
  const histories = historiesIn(run.inside).reverse();
  const skipped = new Set<ContextProvider>();
  return async (produced) => {
    let inSession = false;
    for (const provider of histories) {
      if (skipped.has(provider)) continue;
      try {
        await boundHook(provider, 'afterRun', run.signal, run.timeoutMs, async () => {
          const saved = await provider.storeProgress(run.args(provider), produced);
          if (saved && provider instanceof InMemoryHistoryProvider) inSession = true;
        });
      } catch (error) {
        if (isAbortError(error, run.signal)) throw error;
        if (provider.onError !== 'skip') throw new ProviderError(provider.sourceId, 'afterRun', error);
        skipped.add(provider);
        run.emit?.({ type: 'provider-skipped', runId: run.runId, sourceId: provider.sourceId, phase: 'afterRun', error });
      }
    }
    const { session, store } = run;
    // Merged like agent.saveSession, so concurrent runs on the session do not fail each other.
    if (inSession && session && store) await saveMerging(store, session, { providers: run.inside, signal: run.signal });
  };
}
