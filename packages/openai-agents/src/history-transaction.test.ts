import {
  ConcurrencyError,
  ConfigurationError,
  createAgent,
  HistoryProvider,
  InMemoryHistoryProvider,
  InvalidInputError,
  type Message,
  SessionStateError,
} from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { RedisHistoryProvider } from '@ctx/redis';
import {
  Agent,
  type AgentInputItem,
  MemorySession,
  OutputGuardrailTripwireTriggered,
  run,
  type Session,
  type SessionHistoryTransactionArgs,
  setTracingDisabled,
  tool,
} from '@openai/agents';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { redisClient, uniquePrefix } from '../test/redis.js';
import { ScriptedModel } from '../test/scripted-model.js';
import { CtxSession } from './ctx-session.js';

setTracingDisabled(true);

const redis = redisClient();
const prefix = uniquePrefix('agents-tx');

const backends: [string, () => HistoryProvider][] = [
  ['InMemoryHistoryProvider', () => new InMemoryHistoryProvider()],
  ['RedisHistoryProvider (real redis-server)', () => new RedisHistoryProvider({ client: redis, prefix })],
];

const user = (content: string): AgentInputItem => ({ role: 'user', content });
const call = (id: string): AgentInputItem => ({ type: 'function_call', callId: id, name: 'f', arguments: '{}', status: 'completed' });
const result = (id: string): AgentInputItem => ({
  type: 'function_call_result',
  callId: id,
  name: 'f',
  status: 'completed',
  output: `out ${id}`,
});
const answer = (text: string): AgentInputItem => ({
  type: 'message',
  role: 'assistant',
  status: 'completed',
  content: [{ type: 'output_text', text }],
  providerData: { bytes: new Uint8Array([1, 2, 3]) },
});
const kind = (item: AgentInputItem) => ('role' in item ? item.role : item.type);

/** The same call on both sessions: both resolve, or both reject (ours with `ours`, a CtxError subclass). */
async function both(
  sessions: [CtxSession, MemorySession],
  args: SessionHistoryTransactionArgs,
  ours?: abstract new (...args: never[]) => Error,
): Promise<void> {
  const [ctx, memory] = sessions;
  if (ours === undefined) {
    await ctx.applyHistoryTransaction(args);
    await memory.applyHistoryTransaction(args);
  } else {
    await expect(ctx.applyHistoryTransaction(args)).rejects.toThrow(ours);
    await expect(memory.applyHistoryTransaction(args)).rejects.toThrow();
  }
  expect(await ctx.getItems()).toStrictEqual(await memory.getItems());
}

/** A run whose output guardrail trips after a tool call; resolves to the model's inputs and the session's items. */
async function blockedRun(session: Session): Promise<{ model: ScriptedModel; items: AgentInputItem[] }> {
  const model = new ScriptedModel();
  const weather = tool({
    name: 'weather',
    description: 'The weather in a city.',
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => `sunny in ${city}`,
  });
  const agent = new Agent({
    name: 'assistant',
    model,
    tools: [weather],
    outputGuardrails: [{ name: 'no weather talk', execute: async () => ({ tripwireTriggered: true, outputInfo: { reason: 'blocked' } }) }],
  });
  await expect(run(agent, 'weather in Paris?', { session })).rejects.toThrow(OutputGuardrailTripwireTriggered);
  return { model, items: await session.getItems() };
}

describe.each(backends)('CtxSession.applyHistoryTransaction on %s', (_, makeHistory) => {
  it('a tripped output guardrail keeps the executed tool call and its result, exactly as MemorySession does', async () => {
    const session = new CtxSession({ history: makeHistory() });
    const ours = await blockedRun(session);
    const reference = await blockedRun(new MemorySession());
    // The blocked answer itself is left out; what ran to produce it is kept.
    expect(ours.items.map(kind)).toEqual(['user', 'reasoning', 'function_call', 'function_call_result']);
    expect(ours.items).toStrictEqual(reference.items);
    expect(ours.model.inputs).toEqual(reference.model.inputs);
    // The next run sees the blocked turn, tool records included.
    const model = new ScriptedModel();
    await run(new Agent({ name: 'a', model }), 'hello', { session });
    expect(model.inputs[0]!.map(kind)).toEqual([...ours.items.map(kind), 'user']);
  });

  it('appends and replaces suffixes as MemorySession does; a retried operation changes nothing, a reused one is refused', async () => {
    const sessions: [CtxSession, MemorySession] = [new CtxSession({ history: makeHistory() }), new MemorySession()];
    await sessions[0].addItems([user('hi')]);
    await sessions[1].addItems([user('hi')]);
    const append: SessionHistoryTransactionArgs = {
      operationId: 'run-1:1:blocked_append:0:3',
      transaction: { type: 'append_items', items: [call('a'), result('a'), answer('blocked')] },
    };
    await both(sessions, append);
    await both(sessions, append); // retried: applied once
    expect(await sessions[0].getItems()).toHaveLength(4);
    // The same operation id with other items: refused, nothing changes.
    await both(
      sessions,
      { operationId: append.operationId, transaction: { type: 'append_items', items: [answer('other')] } },
      InvalidInputError,
    );
    // Key order does not make another transaction.
    const reordered = [call('a'), result('a'), answer('blocked')].map(
      (item) => Object.fromEntries(Object.entries(item).reverse()) as AgentInputItem,
    );
    await both(sessions, { operationId: append.operationId, transaction: { type: 'append_items', items: reordered } });

    const replace: SessionHistoryTransactionArgs = {
      operationId: 'run-1:1:accepted_replace:3:4',
      transaction: {
        type: 'replace_suffix',
        expectedSuffix: [result('a'), answer('blocked')],
        replacement: [result('a'), answer('accepted')],
      },
    };
    await both(sessions, replace);
    await both(sessions, replace); // retried: the suffix is no longer the expected one, but the operation was applied
    expect((await sessions[0].getItems()).at(-1)).toStrictEqual(answer('accepted'));
    // A suffix that is not the newest items: refused, nothing changes.
    await both(
      sessions,
      { operationId: 'op-3', transaction: { type: 'replace_suffix', expectedSuffix: [answer('blocked')], replacement: [] } },
      ConcurrencyError,
    );
    await both(
      sessions,
      { operationId: 'op-4', transaction: { type: 'replace_suffix', expectedSuffix: new Array(9).fill(user('hi')), replacement: [] } },
      ConcurrencyError,
    );
    // Empty changes are operations too: recorded, and a reuse with another transaction is refused.
    const cut: SessionHistoryTransactionArgs = {
      operationId: 'op-5',
      transaction: { type: 'replace_suffix', expectedSuffix: [answer('accepted')], replacement: [] },
    };
    await both(sessions, cut);
    await both(sessions, cut);
    await both(sessions, { operationId: 'op-5', transaction: { type: 'append_items', items: [] } }, InvalidInputError);
    await both(sessions, { operationId: 'op-6', transaction: { type: 'append_items', items: [] } });
    await both(sessions, {
      operationId: 'op-7',
      transaction: { type: 'replace_suffix', expectedSuffix: [], replacement: [answer('tail')] },
    });
    expect((await sessions[0].getItems()).map(kind)).toEqual(['user', 'function_call', 'function_call_result', 'assistant']);
    expect(await sessions[0].popItem()).toStrictEqual(answer('tail'));
  });

  it('two concurrent applications of one operation store it once', async () => {
    const session = new CtxSession({ history: makeHistory() });
    const args: SessionHistoryTransactionArgs = {
      operationId: 'op-race',
      transaction: { type: 'append_items', items: [call('a'), result('a')] },
    };
    await Promise.all([session.applyHistoryTransaction(args), session.applyHistoryTransaction(args)]);
    expect(await session.getItems()).toStrictEqual([call('a'), result('a')]);
  });

  it('replaces a suffix that starts inside a message a ctx agent stored, keeping its earlier items', async () => {
    const history = makeHistory();
    const client = new ScriptedChatClient({
      replies: [{ reasoning: 'hmm', text: 'first' }],
    });
    const agent = createAgent({ client, contextProviders: [history] });
    const ctxSession = agent.createSession();
    await agent.run('hello', { session: ctxSession });
    const session = new CtxSession({ history, sessionId: ctxSession.sessionId, state: ctxSession.stateOf(history.sourceId) });
    const [input, reasoning, reply] = await session.getItems();
    expect([input, reasoning, reply].map((i) => i && kind(i))).toEqual(['user', 'reasoning', 'assistant']);
    await session.applyHistoryTransaction({
      operationId: 'op',
      transaction: { type: 'replace_suffix', expectedSuffix: [reply!], replacement: [answer('new')] },
    });
    expect(await session.getItems()).toStrictEqual([input, reasoning, answer('new')]);
  });

  it('refuses malformed arguments and items that are not plain JSON before anything changes, and records no operation', async () => {
    const session = new CtxSession({ history: makeHistory() });
    await session.addItems([user('kept')]);
    const bad: unknown[] = [
      undefined,
      { transaction: { type: 'append_items', items: [] } },
      { operationId: '  ', transaction: { type: 'append_items', items: [] } },
      { operationId: 'op', transaction: { type: 'delete_all' } },
      { operationId: 'op', transaction: { type: 'append_items', items: [user('x'), 'text'] } },
      { operationId: 'op', transaction: { type: 'replace_suffix', expectedSuffix: [] } },
    ];
    for (const args of bad)
      await expect(session.applyHistoryTransaction(args as SessionHistoryTransactionArgs)).rejects.toThrow(InvalidInputError);
    const notJson = { role: 'user', content: 'x', providerData: { at: new Date(0) } } as AgentInputItem;
    await expect(
      session.applyHistoryTransaction({ operationId: 'op', transaction: { type: 'append_items', items: [notJson] } }),
    ).rejects.toThrow(SessionStateError);
    expect(await session.getItems()).toStrictEqual([user('kept')]);
    await session.applyHistoryTransaction({ operationId: 'op', transaction: { type: 'append_items', items: [user('later')] } });
    expect(await session.getItems()).toStrictEqual([user('kept'), user('later')]);
  });
});

describe('CtxSession.applyHistoryTransaction on a history that cannot rewrite', () => {
  class AppendOnly extends HistoryProvider {
    readonly #messages: Message[] = [];
    constructor() {
      super({ sourceId: 'append-only' });
    }
    async getMessages(): Promise<Message[]> {
      return [...this.#messages];
    }
    async saveMessages(_: string, messages: readonly Message[]): Promise<void> {
      this.#messages.push(...messages);
    }
  }

  it('appends, and refuses to replace a suffix with a ConfigurationError naming the missing capability', async () => {
    const session = new CtxSession({ history: new AppendOnly() });
    await session.applyHistoryTransaction({ operationId: 'a', transaction: { type: 'append_items', items: [user('x')] } });
    await expect(
      session.applyHistoryTransaction({
        operationId: 'b',
        transaction: { type: 'replace_suffix', expectedSuffix: [user('x')], replacement: [] },
      }),
    ).rejects.toThrow(ConfigurationError);
    expect(await session.getItems()).toStrictEqual([user('x')]);
  });
});
