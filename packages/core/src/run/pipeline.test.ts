import { describe, expect, it } from 'vitest';
import { ConfigurationError, ProviderError } from '../errors.js';
import type { AgentEvent } from '../spec/events.js';
import type { ContextProvider } from '../spec/run-view.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { defineTool } from '../tools/define-tool.js';
import { createAgent } from './create-agent.js';

/** A promise that never settles: a provider, tool or client that ignores its signal. */
const never = () => new Promise<never>(() => {});

/** Settles with how the run ended, or 'still running' when it outlives `ms`. */
async function within<T>(ms: number, run: Promise<T>): Promise<T | 'still running'> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<'still running'>((resolve) => {
    timer = setTimeout(() => resolve('still running'), ms);
  });
  try {
    return await Promise.race([run, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('a run is bounded in time', () => {
  const hung = (hook: 'beforeRun' | 'afterRun' | 'wrap', extra: Partial<ContextProvider> = {}): ContextProvider => ({
    sourceId: `hung-${hook}`,
    [hook]: never,
    ...extra,
  });

  for (const hook of ['beforeRun', 'afterRun', 'wrap'] as const) {
    it(`ends at once when aborted, though a provider's ${hook} ignores the signal`, async () => {
      const agent = createAgent({ client: new ScriptedChatClient({ replies: ['hi'] }), contextProviders: [hung(hook)] });
      const controller = new AbortController();
      const run = agent.run('x', { session: agent.createSession(), signal: controller.signal });
      setTimeout(() => controller.abort(new Error('user left')), 20);
      await expect(within(2_000, run)).rejects.toThrow('user left');
    });

    it(`fails a ${hook} that overruns its timeoutMs with a ProviderError, or skips it under onError: 'skip'`, async () => {
      const events: AgentEvent[] = [];
      const failing = createAgent({
        client: new ScriptedChatClient({ replies: ['hi'] }),
        contextProviders: [hung(hook, { timeoutMs: 30 })],
      });
      const error = await within(2_000, failing.run('x', { session: failing.createSession() })).catch((e: unknown) => e);
      expect(ProviderError.isInstance(error)).toBe(true);
      expect((error as ProviderError).message).toMatch(new RegExp(`did not finish ${hook} within 30 ms`));

      const skipping = createAgent({
        client: new ScriptedChatClient({ replies: ['hi'] }),
        onEvent: (e) => events.push(e),
        providerTimeoutMs: 30, // the agent's default bounds providers without their own
        contextProviders: [hung(hook, { onError: 'skip' })],
      });
      const response = await within(2_000, skipping.run('x', { session: skipping.createSession() }));
      expect(response).toMatchObject({ text: 'hi' });
      expect(events.find((e) => e.type === 'provider-skipped')).toMatchObject({ sourceId: `hung-${hook}`, phase: hook });
    });
  }

  it('does not count the time a wrap spends in next() against its timeout, and refuses a late next()', async () => {
    const slowModel = new ScriptedChatClient({ replies: [{ text: 'slow answer', delayMs: 120 }] });
    const wrapper: ContextProvider = { sourceId: 'wrapper', timeoutMs: 60, wrap: async (_args, next) => next() };
    const agent = createAgent({ client: slowModel, contextProviders: [wrapper] });
    expect(await agent.run('x', { session: agent.createSession() })).toMatchObject({ text: 'slow answer' });

    let lateNext: Promise<void> | undefined;
    const late: ContextProvider = {
      sourceId: 'late',
      timeoutMs: 20,
      onError: 'skip',
      wrap: async (_args, next) => {
        await new Promise((resolve) => setTimeout(resolve, 80));
        lateNext = next();
        await lateNext.catch(() => {});
      },
    };
    const client = new ScriptedChatClient({ replies: ['once'] });
    const skipping = createAgent({ client, contextProviders: [late] });
    expect(await skipping.run('x', { session: skipping.createSession() })).toMatchObject({ text: 'once' });
    await new Promise((resolve) => setTimeout(resolve, 120));
    await expect(lateNext).rejects.toThrow(/called next\(\) after its wrap had ended/);
    expect(client.calls).toHaveLength(1); // the model was not called a second time
  });

  it('ends at once when aborted, though a tool or the model ignores the signal', async () => {
    const stuck = defineTool({ name: 'stuck', parameters: { type: 'object' }, execute: never });
    const toolAgent = createAgent({ client: new ScriptedChatClient({ replies: [{ toolCalls: [{ name: 'stuck' }] }] }), tools: [stuck] });
    const deafModel = {
      specificationVersion: 'v1' as const,
      provider: 'deaf',
      modelId: 'deaf',
      getResponse: never,
      getStreamingResponse: never,
    };
    const modelAgent = createAgent({ client: deafModel as never });
    for (const agent of [toolAgent, modelAgent]) {
      const run = agent.run('x', { signal: AbortSignal.timeout(30) });
      await expect(within(2_000, run)).rejects.toThrow(/timeout|abort/i);
    }
  });

  it('rejects timeouts that are not positive numbers', () => {
    const client = new ScriptedChatClient({ replies: [] });
    expect(() => createAgent({ client, providerTimeoutMs: 0 })).toThrow(ConfigurationError);
    expect(() => createAgent({ client, contextProviders: [{ sourceId: 'p', timeoutMs: -5 }] })).toThrow(
      /timeoutMs must be a positive number/,
    );
  });
});
