import { describe, expect, it } from 'vitest';
import { ConfigurationError, ProviderError } from '../errors.js';
import type { AgentEvent } from '../contracts/events.js';
import type { ContextProvider } from '../contracts/run-view.js';
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

    // The wrap calls next() only once the run has ended without it (its 20 ms timeout skipped it).
    let runEnded!: () => void;
    const ended = new Promise<void>((resolve) => {
      runEnded = resolve;
    });
    let lateNext!: (value: { result: Promise<void> }) => void;
    const called = new Promise<{ result: Promise<void> }>((resolve) => {
      lateNext = resolve;
    });
    const late: ContextProvider = {
      sourceId: 'late',
      timeoutMs: 20,
      onError: 'skip',
      wrap: async (_args, next) => {
        await ended;
        const result = next();
        lateNext({ result });
        await result.catch(() => {});
      },
    };
    const client = new ScriptedChatClient({ replies: ['once'] });
    const skipping = createAgent({ client, contextProviders: [late] });
    expect(await skipping.run('x', { session: skipping.createSession() })).toMatchObject({ text: 'once' });
    runEnded();
    await expect((await called).result).rejects.toThrow(/called next\(\) after its wrap had ended/);
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

describe('onSessionCreated', () => {
  /** A provider that logs its hooks, with `created` as its onSessionCreated. */
  const logging = (log: string[], created: ContextProvider['onSessionCreated'], extra: Partial<ContextProvider> = {}): ContextProvider => ({
    sourceId: 'p',
    onSessionCreated: created,
    beforeRun: () => {
      log.push('beforeRun');
    },
    afterRun: () => {
      log.push('afterRun');
    },
    ...extra,
  });

  it('runs once per session, before the first hook, and keeps the slot (even empty) across runs and a save and restore', async () => {
    const log: string[] = [];
    const events: AgentEvent[] = [];
    const provider = logging(log, ({ session, state }) => {
      log.push(`created ${session.sessionId} ${JSON.stringify(state)}`);
    });
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: () => 'ok' }),
      contextProviders: [provider],
      onEvent: (e) => events.push(e),
    });
    const session = agent.createSession({ sessionId: 's1' });
    await agent.run('one', { session });
    await agent.run('two', { session });
    expect(log).toEqual(['created s1 {}', 'beforeRun', 'afterRun', 'beforeRun', 'afterRun']);
    expect(session.state.p).toEqual({});
    expect(events.filter((e) => e.type === 'provider-end' && e.phase === 'onSessionCreated')).toHaveLength(1);

    const restored = agent.restoreSession(JSON.parse(JSON.stringify(session)));
    await agent.run('three', { session: restored });
    expect(log.filter((l) => l.startsWith('created'))).toEqual(['created s1 {}']);

    await agent.run('other session', { session: agent.createSession({ sessionId: 's2' }) });
    expect(log.filter((l) => l.startsWith('created'))).toEqual(['created s1 {}', 'created s2 {}']);
  });

  it('is not called for a provider whose slot the session already holds', async () => {
    const log: string[] = [];
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: () => 'ok' }),
      contextProviders: [logging(log, () => void log.push('created'))],
    });
    await agent.run('x', { session: agent.createSession({ state: { p: { userId: 'u1' } } }) });
    expect(log).toEqual(['beforeRun', 'afterRun']);
  });

  it('runs before a wrap too, and what it puts in the slot is there for the hooks', async () => {
    const seen: unknown[] = [];
    const provider: ContextProvider = {
      sourceId: 'w',
      onSessionCreated: ({ state }) => {
        state.ready = true;
      },
      wrap: async ({ state }, next) => {
        seen.push(state.ready);
        await next();
      },
    };
    const agent = createAgent({ client: new ScriptedChatClient({ replies: () => 'ok' }), contextProviders: [provider] });
    const session = agent.createSession();
    await agent.run('x', { session });
    expect(seen).toEqual([true]);
    expect(session.state.w).toEqual({ ready: true });
  });

  it("fails the run with a ProviderError when it throws (onError: 'throw'), keeping no slot, so the next run calls it again", async () => {
    let calls = 0;
    const log: string[] = [];
    const provider = logging(log, () => {
      calls++;
      if (calls === 1) throw new Error('prepare failed');
    });
    const agent = createAgent({ client: new ScriptedChatClient({ replies: () => 'ok' }), contextProviders: [provider] });
    const session = agent.createSession();
    const error = await agent.run('x', { session }).catch((e: unknown) => e);
    expect(error).toMatchObject({ sourceId: 'p', phase: 'onSessionCreated' });
    expect(ProviderError.isInstance(error)).toBe(true);
    expect(log).toEqual([]);
    expect(session.state.p).toBeUndefined();
    await agent.run('y', { session });
    expect(calls).toBe(2);
    expect(log).toEqual(['beforeRun', 'afterRun']);
    expect(session.state.p).toEqual({});
  });

  it("leaves the provider out of the run under onError: 'skip', dropping what it began in the slot", async () => {
    const log: string[] = [];
    const events: AgentEvent[] = [];
    const provider = logging(
      log,
      ({ state }) => {
        state.half = 'done';
        throw new Error('prepare failed');
      },
      { onError: 'skip' },
    );
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: () => 'ok' }),
      contextProviders: [provider],
      onEvent: (e) => events.push(e),
    });
    const session = agent.createSession();
    expect(await agent.run('x', { session })).toMatchObject({ text: 'ok' });
    expect(log).toEqual([]);
    expect(events.find((e) => e.type === 'provider-skipped')).toMatchObject({ sourceId: 'p', phase: 'onSessionCreated' });
    expect(session.state.p).toBeUndefined();
  });

  it("is bounded by the provider's timeoutMs like any hook", async () => {
    const provider: ContextProvider = { sourceId: 'slow', timeoutMs: 30, onSessionCreated: never };
    const agent = createAgent({ client: new ScriptedChatClient({ replies: () => 'ok' }), contextProviders: [provider] });
    const error = await within(2_000, agent.run('x', { session: agent.createSession() })).catch((e: unknown) => e);
    expect(error).toMatchObject({ sourceId: 'slow', phase: 'onSessionCreated' });
    expect(String(error)).toMatch(/did not finish onSessionCreated within 30 ms/);
  });
});
