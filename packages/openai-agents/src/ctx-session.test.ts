import { ConfigurationError, createAgent, HistoryProvider, InMemoryHistoryProvider, type GetHistoryArgs, type Message } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { RedisHistoryProvider } from '@ctx/redis';
import {
  Agent,
  MemorySession,
  OpenAIResponsesCompactionSession,
  run,
  setTracingDisabled,
  tool,
  type AgentInputItem,
  type Session,
} from '@openai/agents';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { itemsArbitrary } from '../test/items-arbitrary.js';
import { redisClient, uniquePrefix } from '../test/redis.js';
import { ScriptedModel } from '../test/scripted-model.js';
import { CtxSession } from './ctx-session.js';

setTracingDisabled(true);

const redis = redisClient();
const prefix = uniquePrefix('agents');

const backends: [string, (options?: { maxMessages?: number }) => HistoryProvider][] = [
  ['InMemoryHistoryProvider', (options = {}) => new InMemoryHistoryProvider(options)],
  ['RedisHistoryProvider (real redis-server)', (options = {}) => new RedisHistoryProvider({ client: redis, prefix, ...options })],
];

/** An agent on `model` with a `weather` tool. */
function weatherAgent(model: ScriptedModel): Agent {
  const weather = tool({
    name: 'weather',
    description: 'The weather in a city.',
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => `sunny in ${city}`,
  });
  return new Agent({ name: 'assistant', instructions: 'Be brief.', model, tools: [weather] });
}

/** What an item is, for short assertions: its role or type. */
const kind = (item: AgentInputItem) => ('role' in item ? item.role : item.type);

/** Two runs of the real Agents runner sharing `session`, the first with a tool call; returns the model's recorded inputs. */
async function twoRuns(session: Session): Promise<{ model: ScriptedModel; finals: unknown[] }> {
  const model = new ScriptedModel();
  const agent = weatherAgent(model);
  const first = await run(agent, 'weather in Paris?', { session });
  const second = await run(agent, 'thanks', { session });
  return { model, finals: [first.finalOutput, second.finalOutput] };
}

describe.each(backends)('CtxSession on %s', (_, makeHistory) => {
  it('the real runner keeps a conversation with a tool call across two runs, exactly as with its MemorySession', async () => {
    const session = new CtxSession({ history: makeHistory() });
    const ours = await twoRuns(session);
    const memory = new MemorySession();
    const reference = await twoRuns(memory);
    expect(ours.finals).toEqual(['It is sunny in Paris.', 're: thanks']);
    expect(ours.finals).toEqual(reference.finals);
    // The second run's model input holds the whole first run: input, reasoning, call, result, answer.
    expect(ours.model.inputs[2]!.map(kind)).toEqual([
      'user',
      'reasoning',
      'function_call',
      'function_call_result',
      'reasoning',
      'assistant',
      'user',
    ]);
    expect(ours.model.inputs).toEqual(reference.model.inputs);
    expect(await session.getItems()).toStrictEqual(await memory.getItems());
    expect(await session.getItems()).toHaveLength(9); // 6 items of the first run, 3 of the second
  });

  it('getItems(limit) loads the newest items through the windowed load; popItem and clearSession', async () => {
    const history = makeHistory();
    const windows: (number | undefined)[] = [];
    const getMessages = history.getMessages.bind(history);
    history.getMessages = (sessionId: string, args: GetHistoryArgs) => {
      windows.push(args.limit);
      return getMessages(sessionId, args);
    };
    const session = new CtxSession({ history });
    const items: AgentInputItem[] = ['a', 'b', 'c'].map((content) => ({ role: 'user', content }));
    await session.addItems(items);
    expect(await session.getItems(2)).toEqual(items.slice(1));
    expect(await session.getItems(0)).toEqual([]);
    expect(windows).toEqual([2]);
    expect(await session.popItem()).toEqual(items[2]);
    expect(await session.getItems()).toEqual(items.slice(0, 2));
    await session.clearSession();
    expect(await session.getItems()).toEqual([]);
    expect(await session.popItem()).toBeUndefined();
  });

  it('a maxMessages window never starts at a tool output whose call it cut off, so the run after a tool turn succeeds', async () => {
    const session = new CtxSession({ history: makeHistory({ maxMessages: 2 }) });
    const model = new ScriptedModel({ reasoning: false });
    const agent = weatherAgent(model);
    expect((await run(agent, 'weather in Paris?', { session })).finalOutput).toBe('It is sunny in Paris.');
    // Stored: user, function_call, function_call_result, assistant. The newest 2 start at the result.
    expect((await session.getItems(2)).map(kind)).toEqual(['function_call_result', 'assistant']);
    // The model refuses an input that starts at the result (as the Responses API does, with a 400).
    expect((await run(agent, 'thanks', { session })).finalOutput).toBe('re: thanks');
    expect(model.inputs[2]!.map(kind)).toEqual(['assistant', 'user']);
    expect((await session.getItems()).map(kind)).toEqual(['user', 'assistant']);
  });

  it('the window drops each output whose call it cut off, also of parallel calls and other tools, and keeps answered calls', async () => {
    const call = (id: string): AgentInputItem => ({ type: 'function_call', callId: id, name: 'f', arguments: '{}' });
    const result = (id: string): AgentInputItem => ({
      type: 'function_call_result',
      callId: id,
      name: 'f',
      status: 'completed',
      output: id,
    });
    const shell = (id: string): AgentInputItem => ({ type: 'shell_call', callId: id, status: 'completed', action: { commands: ['ls'] } });
    const shellOutput = (id: string): AgentInputItem => ({ type: 'shell_call_output', callId: id, output: [] });
    const answer: AgentInputItem = { role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'done' }] };
    const items = [
      { role: 'user', content: 'go' } as AgentInputItem,
      call('a'),
      shell('s'),
      call('b'),
      result('a'),
      shellOutput('s'),
      result('b'),
      answer,
    ];
    const memory = new MemorySession({ initialItems: items });
    for (const [maxMessages, expected] of [
      [5, [call('b'), result('b'), answer]], // starts at the call of b: the outputs of a and s lost their calls
      [6, [shell('s'), call('b'), shellOutput('s'), result('b'), answer]],
      [4, [answer]],
      [8, items],
    ] as const) {
      const session = new CtxSession({ history: makeHistory({ maxMessages }) });
      await session.addItems(items);
      expect(await session.getItems()).toStrictEqual(expected);
      // An explicit limit is a plain slice, as the SDK's MemorySession gives it.
      expect(await session.getItems(maxMessages)).toStrictEqual(await memory.getItems(maxMessages));
    }
  });

  it('getItems(limit) returns exactly what MemorySession returns for any number, fractions and non-finite ones included', async () => {
    const items: AgentInputItem[] = ['a', 'b', 'c', 'd', 'e'].map((content) => ({ role: 'user', content }));
    const session = new CtxSession({ history: makeHistory() });
    await session.addItems(items);
    const memory = new MemorySession({ initialItems: items });
    for (const limit of [-1, -0, 0, 0.3, 1, 2, 2.5, 4.01, 5, 6, 7.5, 1e300, Number.MAX_VALUE, Number.NaN, Infinity, -Infinity]) {
      expect(await session.getItems(limit), `getItems(${limit})`).toStrictEqual(await memory.getItems(limit));
    }
    expect(await session.getItems(2.5)).toStrictEqual(items.slice(2));
  });

  it('the SDK compaction session wraps it: runCompaction sends the stored items and stores what compact returns', async () => {
    const session = new CtxSession({ history: makeHistory() });
    await twoRuns(session);
    const stored = await session.getItems();
    const requests: { input?: unknown }[] = [];
    const output = [
      { type: 'compaction', id: 'cmp_1', encrypted_content: 'summary-of-9-items' },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'thanks' }] },
    ];
    const client = {
      responses: {
        compact: async (request: { input?: unknown }) => {
          requests.push(request);
          return { output, usage: { input_tokens: 90, output_tokens: 9, total_tokens: 99 } };
        },
      },
    };
    const compacting = new OpenAIResponsesCompactionSession({
      client: client as unknown as ConstructorParameters<typeof OpenAIResponsesCompactionSession>[0]['client'],
      underlyingSession: session,
      compactionMode: 'input',
    });
    const memory = new MemorySession();
    await memory.addItems(stored);
    const reference = new OpenAIResponsesCompactionSession({
      client: client as unknown as ConstructorParameters<typeof OpenAIResponsesCompactionSession>[0]['client'],
      underlyingSession: memory,
      compactionMode: 'input',
    });
    expect(await compacting.runCompaction({ force: true })).not.toBeNull();
    await reference.runCompaction({ force: true });
    expect(requests[0]!.input).toEqual(requests[1]!.input);
    expect((requests[0]!.input as unknown[]).length).toBe(stored.length);
    expect((await session.getItems()).map(kind)).toEqual(['compaction', 'user']);
    // Equal but for an `id: undefined` the compaction session writes, which JSON storage leaves out.
    expect(await session.getItems()).toEqual(await memory.getItems());
  });

  it('random item lists round-trip exactly through the backend, and popItem returns them newest first', async () => {
    await fc.assert(
      fc.asyncProperty(itemsArbitrary, async (items) => {
        const session = new CtxSession({ history: makeHistory() });
        await session.addItems(items);
        expect(await session.getItems()).toStrictEqual(items);
        const popped: AgentInputItem[] = [];
        for (let item = await session.popItem(); item !== undefined; item = await session.popItem()) popped.unshift(item);
        expect(popped).toStrictEqual(items);
      }),
      { numRuns: Number(process.env.FUZZ_RUNS ?? 200) / 2 },
    );
  });

  it('reads a conversation a ctx agent stored in the same history, and the Agents runner continues it', async () => {
    const history = makeHistory();
    const agent = createAgent({ client: new ScriptedChatClient({ replies: ['nice to meet you'] }), contextProviders: [history] });
    const ctxSession = agent.createSession();
    await agent.run('I am Ann', { session: ctxSession });
    const session = new CtxSession({ history, sessionId: ctxSession.sessionId, state: ctxSession.stateOf(history.sourceId) });
    expect(await session.getItems()).toEqual([
      { role: 'user', content: 'I am Ann' },
      { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'nice to meet you' }] },
    ]);
    const model = new ScriptedModel();
    await run(new Agent({ name: 'a', model }), 'hello', { session });
    expect(model.inputs[0]!.map((i) => ('role' in i ? i.role : i.type))).toEqual(['user', 'assistant', 'user']);
  });
});

describe('CtxSession refusals', () => {
  /** A history without the optional capabilities. */
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

  it('popItem and clearSession without the capability are ConfigurationErrors naming it; nothing changes', async () => {
    const session = new CtxSession({ history: new AppendOnly() });
    await session.addItems([{ role: 'user', content: 'kept' }]);
    await expect(session.popItem()).rejects.toThrow(/cannot pop messages \(no popMessages\)/);
    await expect(session.clearSession()).rejects.toThrow(ConfigurationError);
    expect(await session.getItems()).toEqual([{ role: 'user', content: 'kept' }]);
  });

  it('refuses a history that is not a ctx history provider and a blank session id', async () => {
    expect(() => new CtxSession({ history: {} as HistoryProvider })).toThrow(ConfigurationError);
    expect(() => new CtxSession({ history: new InMemoryHistoryProvider(), sessionId: ' ' })).toThrow(ConfigurationError);
  });

  it('an item that is not plain JSON is refused by the provider with the path, and nothing of the batch is stored', async () => {
    const session = new CtxSession({ history: new InMemoryHistoryProvider() });
    const bad = { role: 'user', content: 'x', providerData: { at: new Date(0) } } as AgentInputItem;
    await expect(session.addItems([{ role: 'user', content: 'ok' }, bad])).rejects.toThrow(/agentsItem\.rest\.providerData\.at/);
    expect(await session.getItems()).toEqual([]);
  });

  it('getItems without a limit loads the provider maxMessages window', async () => {
    const session = new CtxSession({ history: new InMemoryHistoryProvider({ maxMessages: 2 }) });
    await session.addItems(['a', 'b', 'c'].map((content) => ({ role: 'user', content })));
    expect(await session.getItems()).toEqual(['b', 'c'].map((content) => ({ role: 'user', content })));
  });
});
