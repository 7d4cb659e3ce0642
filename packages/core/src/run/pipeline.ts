import { CtxError, isAbortError, ProviderError } from '../errors.js';
import type { AgentEvent, ProviderPhase } from '../spec/events.js';
import type { ContextProvider, ProviderRunArgs } from '../spec/run-view.js';

type Outcome = 'ok' | 'skipped' | 'failed';

/** What `runPipeline` needs besides the providers. */
export interface PipelineRun {
  runId: string;
  args: (provider: ContextProvider) => ProviderRunArgs;
  /** The innermost step: the model call and the tool loop. Must not throw; failures go to `context.error`. */
  invoke: () => Promise<void>;
  emit: (event: AgentEvent) => void;
}

/**
 * Runs providers as one onion around `invoke`: `beforeRun` in list order, `afterRun` in reverse,
 * `wrap` around everything inside it. Never throws: the first failure lands in `context.error`.
 */
export async function runPipeline(providers: readonly ContextProvider[], run: PipelineRun): Promise<void> {
  const step = async (index: number): Promise<void> => {
    const provider = providers[index];
    if (!provider) return run.invoke();
    const args = run.args(provider);
    if (args.signal.aborted) {
      args.context.error ??= args.signal.reason;
      return;
    }
    if (provider.wrap) {
      let entered = false;
      const next = async () => {
        if (entered) throw new CtxError(`Context provider "${provider.sourceId}" called next() twice; call it once per run.`);
        entered = true;
        await step(index + 1);
      };
      const outcome = await guard(provider, 'wrap', args, run, () => provider.wrap!(args, next));
      if (outcome === 'skipped' && !entered) await step(index + 1);
      return;
    }
    if (provider.beforeRun) {
      const outcome = await guard(provider, 'beforeRun', args, run, () => provider.beforeRun!(args));
      if (outcome === 'failed') return;
      if (outcome === 'skipped') return step(index + 1);
    }
    await step(index + 1);
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
): Promise<Outcome> {
  const { context } = args;
  const started = performance.now();
  const before = context.contributionOf(provider.sourceId);
  try {
    await body();
    const after = context.contributionOf(provider.sourceId);
    run.emit({
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
    if (isAbortError(error, args.signal)) {
      context.error ??= error;
      return 'failed';
    }
    if (provider.onError === 'skip') {
      context.removeSource(provider.sourceId);
      run.emit({ type: 'provider-skipped', runId: run.runId, sourceId: provider.sourceId, phase, error });
      return 'skipped';
    }
    context.error ??= new ProviderError(provider.sourceId, phase, error);
    return 'failed';
  }
}
