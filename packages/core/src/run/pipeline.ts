import { CtxError, InvalidInputError, isAbortError, ProviderError } from '../errors.js';
import type { AgentEvent, ProviderPhase } from '../contracts/events.js';
import type { ContextProvider, ProviderRunArgs } from '../contracts/run-view.js';

type Outcome = 'ok' | 'skipped' | 'failed';

/** What `runPipeline` needs besides the providers. */
export interface PipelineRun {
  runId: string;
  /** The run's signal when something can abort the run: hooks are abandoned when it aborts. */
  signal: AbortSignal | undefined;
  args: (provider: ContextProvider) => ProviderRunArgs;
  /**
   * The innermost step: the model call and the tool loop. Must not throw; failures go to
   * `context.error`. Gets the providers taking part in the run, outermost first (not those skipped).
   */
  invoke: (inside: readonly ContextProvider[]) => Promise<void>;
  /** Where events go; undefined when nobody listens (no `onEvent`), so `emit?.({ ... })` builds none. */
  emit: ((event: AgentEvent) => void) | undefined;
  /** Bounds the hooks of providers without their own `timeoutMs`. Default: no limit. */
  timeoutMs?: number | undefined;
  /**
   * Whether the session is new to `provider` (its state slot did not exist before the run): its
   * `onSessionCreated` then runs before its first hook, guarded like `beforeRun`. Default: never.
   */
  isNewTo?: (provider: ContextProvider) => boolean;
  /** Told of each provider whose `onSessionCreated` succeeded in this run. */
  created?: (provider: ContextProvider) => void;
}

/**
 * Runs providers as one onion around `invoke`: `beforeRun` in list order, `afterRun` in reverse,
 * `wrap` around everything inside it; `onSessionCreated` first for a provider the session is new to
 * (failed: the run fails; skipped: the provider is left out). Never throws: the first failure lands in `context.error`.
 * A hook that outlives its timeout or the run's signal is abandoned, so the run never waits for it.
 */
export function runPipeline(providers: readonly ContextProvider[], run: PipelineRun): Promise<void> {
  return providers.length === 0 ? run.invoke([]) : runOnion(providers, run);
}

async function runOnion(providers: readonly ContextProvider[], run: PipelineRun): Promise<void> {
  const inside: ContextProvider[] = [];
  const enter = async (provider: ContextProvider, index: number) => {
    inside.push(provider);
    try {
      await step(index + 1);
    } finally {
      inside.pop();
    }
  };
  const step = async (index: number): Promise<void> => {
    const provider = providers[index];
    if (!provider) {
      await run.invoke([...inside]); // awaited, not returned: an async function returning a promise takes two more ticks
      return;
    }
    const args = run.args(provider);
    if (run.signal?.aborted) {
      args.context.error ??= run.signal.reason;
      return;
    }
    if (provider.onSessionCreated && run.isNewTo?.(provider)) {
      const outcome = await guard(provider, 'onSessionCreated', args, run, () => provider.onSessionCreated!(args));
      if (outcome === 'failed') return;
      if (outcome === 'skipped') return step(index + 1);
      run.created?.(provider);
    }
    if (provider.wrap) {
      let entered = false;
      let done = false;
      const clock = new HookClock(provider.timeoutMs ?? run.timeoutMs);
      const next = async () => {
        if (entered || done)
          throw new CtxError(
            `Context provider "${provider.sourceId}" called next() ${entered ? 'twice' : 'after its wrap had ended'}; call it once per run.`,
          );
        entered = true;
        clock.pause(); // the rest of the pipeline and the model are not this provider's time
        try {
          await enter(provider, index);
        } finally {
          clock.resume();
        }
      };
      const outcome = await guard(provider, 'wrap', args, run, () => provider.wrap!(args, next), clock);
      done = true;
      if (outcome === 'skipped' && !entered) await step(index + 1);
      return;
    }
    if (provider.beforeRun) {
      const outcome = await guard(provider, 'beforeRun', args, run, () => provider.beforeRun!(args));
      if (outcome === 'failed') return;
      if (outcome === 'skipped') return step(index + 1);
    }
    await enter(provider, index);
    if (provider.afterRun) await guard(provider, 'afterRun', args, run, () => provider.afterRun!(args));
  };
  await step(0);
}

async function guard(
  provider: ContextProvider,
  phase: ProviderPhase,
  args: ProviderRunArgs,
  run: PipelineRun,
  body: () => void | Promise<void>,
  clock = new HookClock(provider.timeoutMs ?? run.timeoutMs),
): Promise<Outcome> {
  const { context } = args;
  const started = run.emit ? performance.now() : 0;
  const before = run.emit ? context.contributionOf(provider.sourceId) : undefined;
  try {
    await clock.bound(body, run.signal, provider.sourceId, phase);
    if (!before) return 'ok';
    const after = context.contributionOf(provider.sourceId);
    run.emit?.({
      type: 'provider-end',
      runId: run.runId,
      sourceId: provider.sourceId,
      phase,
      durationMs: performance.now() - started,
      added: {
        messages: after.messages - before.messages,
        instructions: after.instructions - before.instructions,
        tools: after.tools - before.tools,
      },
    });
    return 'ok';
  } catch (error) {
    if (isAbortError(error, run.signal)) {
      context.error ??= error;
      return 'failed';
    }
    // The caller's mistake, found by a provider (an input reusing a stored message's id): the run
    // fails with it as it is, whatever the provider's onError.
    if (InvalidInputError.isInstance(error)) {
      context.error ??= error;
      return 'failed';
    }
    if (provider.onError === 'skip') {
      context.removeSource(provider.sourceId);
      run.emit?.({ type: 'provider-skipped', runId: run.runId, sourceId: provider.sourceId, phase, error });
      return 'skipped';
    }
    context.error ??= new ProviderError(provider.sourceId, phase, error);
    return 'failed';
  }
}

/**
 * Runs one hook of `provider` outside the onion (a history save inside the tool loop), bounded
 * like its other hooks: by its `timeoutMs` (else `timeoutMs`) and the run's signal.
 */
export function boundHook(
  provider: ContextProvider,
  phase: ProviderPhase,
  signal: AbortSignal | undefined,
  timeoutMs: number | undefined,
  body: () => void | Promise<void>,
): Promise<void> {
  return new HookClock(provider.timeoutMs ?? timeoutMs).bound(body, signal, provider.sourceId, phase);
}

/**
 * One hook's time limit: settles with the hook, the run's abort reason, or a timeout, whichever
 * comes first. `pause` and `resume` stop the clock while a `wrap` waits in `next()`.
 */
class HookClock {
  #left: number | undefined;
  #startedAt = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #onTimeout: (() => void) | undefined;

  constructor(timeoutMs: number | undefined) {
    this.#left = timeoutMs;
  }

  bound(body: () => void | Promise<void>, signal: AbortSignal | undefined, sourceId: string, phase: ProviderPhase): Promise<void> {
    // Nothing to race: no limit, and nothing can abort the run.
    if (this.#left === undefined && !signal) return new Promise<void>((resolve) => resolve(body()));
    return new Promise<void>((resolve, reject) => {
      const finish = (settle: () => void) => {
        this.pause();
        this.#onTimeout = undefined;
        signal?.removeEventListener('abort', onAbort);
        settle();
      };
      const onAbort = () => finish(() => reject(signal?.reason));
      signal?.addEventListener('abort', onAbort, { once: true });
      const limit = this.#left;
      this.#onTimeout = () =>
        finish(() => reject(new CtxError(`Context provider "${sourceId}" did not finish ${phase} within ${limit} ms (timeoutMs).`)));
      this.resume();
      new Promise<void>((run) => run(body())).then(
        () => finish(resolve),
        (error: unknown) => finish(() => reject(error)),
      );
    });
  }

  pause(): void {
    if (this.#timer === undefined) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#left = Math.max(0, this.#left! - (performance.now() - this.#startedAt));
  }

  resume(): void {
    if (this.#left === undefined || this.#onTimeout === undefined || this.#timer !== undefined) return;
    this.#startedAt = performance.now();
    this.#timer = setTimeout(this.#onTimeout, this.#left);
  }
}
