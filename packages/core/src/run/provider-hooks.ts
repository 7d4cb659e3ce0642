import { abortable } from '../backend/deadline.js';
import { ProviderError } from '../errors.js';
import type { ProviderPhase } from '../contracts/events.js';
import type { ContextProvider } from '../contracts/run-view.js';
import { boundHook } from './pipeline.js';

/**
 * Runs one hook of every provider at once, each bounded by its `timeoutMs` (else `timeoutMs`) and
 * `signal`; a hook that overruns sees its own signal abort. Resolves to the values in provider order
 * once every hook has settled. `onError` does not apply: a hook that fails fails the operation.
 * With `bounded: false` each hook runs under `signal` only, never a `timeoutMs`: for work that grows
 * with the history (`onSessionForked` copies what a provider derived from a whole conversation).
 * @throws the abort reason when `signal` aborted; else a `ProviderError` for the first provider (in
 *   list order) whose hook failed.
 */
export async function runHooks<P extends ContextProvider, T>(
  providers: readonly P[],
  phase: ProviderPhase,
  signal: AbortSignal,
  timeoutMs: number | undefined,
  hook: (provider: P, signal: AbortSignal) => T | Promise<T>,
  bounded = true,
): Promise<T[]> {
  const outcomes = await Promise.allSettled(
    providers.map(async (provider) => {
      // A signal of its own per hook (no listener on the caller's, which many hooks share at once).
      const own = new AbortController();
      const hookSignal = AbortSignal.any([signal, own.signal]);
      let value: T | undefined;
      try {
        const run = async () => {
          value = await hook(provider, hookSignal);
        };
        await (bounded ? boundHook(provider, phase, hookSignal, timeoutMs, run) : abortable(run(), hookSignal));
      } catch (error) {
        own.abort(error);
        throw error;
      }
      return value as T;
    }),
  );
  signal.throwIfAborted();
  const values: T[] = [];
  outcomes.forEach((outcome, i) => {
    if (outcome.status === 'fulfilled') values.push(outcome.value);
    else throw new ProviderError(providers[i]!.sourceId, phase, outcome.reason);
  });
  return values;
}
