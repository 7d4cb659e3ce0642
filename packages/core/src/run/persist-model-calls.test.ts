import { describe, expect, it } from 'vitest';
import { ConfigurationError, ProviderError } from '../errors.js';
import { InMemoryHistoryProvider } from '../history/in-memory-history-provider.js';
import { Message } from '../messages/message.js';
import { InMemorySessionStore } from '../session/in-memory-session-store.js';
import type { AgentEvent } from '../contracts/events.js';
import type { HistoryTurn, SaveHistoryArgs } from '../contracts/history.js';
import type { ContextProvider } from '../contracts/run-view.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { defineTool } from '../tools/define-tool.js';
import { createAgent } from './create-agent.js';
import { INTERRUPTED_RESULT } from './interrupted-calls.js';

/** The in-memory history, recording every batch it is given and what the turn said. */
class RecordingHistory extends InMemoryHistoryProvider {
  readonly batches: { roles: string[]; turn: HistoryTurn | undefined }[] = [];
  failNext = false;
  override async saveMessages(sessionId: string, messages: readonly Message[], args: SaveHistoryArgs): Promise<void> {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('backend down');
    }
    this.batches.push({ roles: messages.map((m) => m.role), turn: args.turn });
    await super.saveMessages(sessionId, messages, args);
  }
}

const lookup = (onRun: () => unknown = () => 'found') =>
  defineTool({
    name: 'lookup',
    description: 'Looks something up.',
    parameters: { type: 'object', properties: { q: { type: 'string' } } },
    execute: async () => onRun(),
  });

const twoRoundtrips = () =>
  new ScriptedChatClient({
    replies: [
      { toolCalls: [{ name: 'lookup', arguments: { q: 'a' }, callId: 'c1' }] },
      { toolCalls: [{ name: 'lookup', callId: 'c2' }] },
      'Done.',
    ],
  });

const stored = (session: { state: Record<string, unknown> }, slot = 'memory') =>
  ((session.state[slot] as { messages?: Message[] } | undefined)?.messages ?? []).map((m) => ({
    role: m.role,
    type: Message.source(m)?.sourceType,
    calls: m.contents.flatMap((c) => (c.type === 'function-call' ? [c.callId] : c.type === 'function-result' ? [`=${c.callId}`] : [])),
  }));

describe("persistence: 'model-call'", () => {
  for (const streaming of [false, true]) {
    it(`stores the input with the first response, then each batch of tool results before the next model call, then its response (${streaming ? 'runStream' : 'run'})`, async () => {
      const history = new RecordingHistory();
      const seenByTool: unknown[] = [];
      const agent = createAgent({
        client: twoRoundtrips(),
        contextProviders: [history],
        persistence: 'model-call',
        tools: [lookup(() => seenByTool.push(stored(session)))],
      });
      const session = agent.createSession();
      const input = Message.user('find it');
      if (streaming) {
        const stream = agent.runStream(input, { session });
        for await (const _ of stream);
        await stream.response;
      } else await agent.run(input, { session });

      // Each tool ran after its call was stored, never before.
      expect(seenByTool).toEqual([
        [
          { role: 'user', type: 'input', calls: [] },
          { role: 'assistant', type: 'response', calls: ['c1'] },
        ],
        [
          { role: 'user', type: 'input', calls: [] },
          { role: 'assistant', type: 'response', calls: ['c1'] },
          { role: 'tool', type: 'response', calls: ['=c1'] },
          { role: 'assistant', type: 'response', calls: ['c2'] },
        ],
      ]);
      // At most two writes per tool-loop step (the model's response, the tool results), in order,
      // each message once; the end of the run writes nothing more.
      expect(history.batches).toEqual([
        { roles: ['user', 'assistant'], turn: { inputIds: [input.id], opens: true } },
        { roles: ['tool'], turn: { inputIds: [input.id], opens: false } },
        { roles: ['assistant'], turn: { inputIds: [input.id], opens: false } },
        { roles: ['tool'], turn: { inputIds: [input.id], opens: false } },
        { roles: ['assistant'], turn: { inputIds: [input.id], opens: false } },
      ]);
      expect(stored(session).map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
    });
  }

  it("stores the same turn as 'run' does, which writes it once at the end", async () => {
    const runs = await Promise.all(
      (['run', 'model-call'] as const).map(async (persistence) => {
        const history = new RecordingHistory({ storeContextMessages: true });
        const rag: ContextProvider = {
          sourceId: 'rag',
          beforeRun: ({ context }) => context.extendMessages('rag', [Message.system('doc', { id: 'doc-1' })]),
        };
        const agent = createAgent({ client: twoRoundtrips(), contextProviders: [history, rag], persistence, tools: [lookup()] });
        const session = agent.createSession();
        await agent.run(Message.user('q', { id: 'q-1' }), { session });
        return { batches: history.batches.length, stored: stored(session) };
      }),
    );
    expect(runs[0]!.batches).toBe(1);
    expect(runs[1]!.batches).toBe(5);
    expect(runs[1]!.stored).toEqual(runs[0]!.stored);
    expect(runs[0]!.stored[0]).toEqual({ role: 'system', type: 'context', calls: [] });
  });

  it('stores the tool results before the next model call: a failed call leaves them stored, and the next run sends them, not an interruption', async () => {
    const client = new ScriptedChatClient({
      replies: [{ toolCalls: [{ name: 'lookup', callId: 'c1' }] }, { error: new Error('rate limited') }, 'Found it.'],
    });
    let ran = 0;
    const events: AgentEvent[] = [];
    const agent = createAgent({
      client,
      persistence: 'model-call',
      tools: [lookup(() => `result ${++ran}`)],
      onEvent: (e) => events.push(e),
    });
    const session = agent.createSession();
    await expect(agent.run('find it', { session })).rejects.toThrow('rate limited');
    // The paid-for result is stored although the model call it was sent to failed.
    expect(stored(session)).toEqual([
      { role: 'user', type: 'input', calls: [] },
      { role: 'assistant', type: 'response', calls: ['c1'] },
      { role: 'tool', type: 'response', calls: ['=c1'] },
    ]);

    await agent.run('go on', { session });
    const next = client.calls[2]!.messages;
    expect(next.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user']);
    expect(next[2]!.contents).toEqual([{ type: 'function-result', callId: 'c1', name: 'lookup', result: 'result 1' }]);
    expect(ran).toBe(1);
    expect(events.filter((e) => e.type === 'warning' && e.code === 'interrupted-calls')).toEqual([]);
  });

  it('answers the calls of a run killed while its tools ran as interrupted, the same way every time', async () => {
    const controller = new AbortController();
    const client = new ScriptedChatClient({
      replies: [{ toolCalls: [{ name: 'lookup', callId: 'c1' }] }, 'Sorry, that was interrupted.', 'Fine.'],
    });
    const events: AgentEvent[] = [];
    const agent = createAgent({
      client,
      persistence: 'model-call',
      tools: [
        lookup(() => {
          controller.abort(new Error('killed'));
          return new Promise(() => {});
        }),
      ],
      onEvent: (e) => events.push(e),
    });
    const session = agent.createSession();
    await expect(agent.run('find it', { session, signal: controller.signal })).rejects.toThrow('killed');
    // The call was stored before the tool ran; the tool never finished.
    expect(stored(session)).toEqual([
      { role: 'user', type: 'input', calls: [] },
      { role: 'assistant', type: 'response', calls: ['c1'] },
    ]);

    await agent.run('again', { session });
    await agent.run('and again', { session });
    const [second, third] = [client.calls[1]!.messages, client.calls[2]!.messages];
    expect(second.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user']);
    const repair = second[2]!;
    expect(repair.contents).toEqual([
      { type: 'function-result', callId: 'c1', name: 'lookup', result: { error: INTERRUPTED_RESULT }, isError: true },
    ]);
    // The same repair, byte for byte, in the next request: the prompt prefix stays stable.
    expect(JSON.stringify(third.slice(0, 3))).toBe(JSON.stringify(second.slice(0, 3)));
    expect(events.filter((e) => e.type === 'warning' && e.code === 'interrupted-calls')).toHaveLength(2);
    // The stored history keeps what happened; only the requests carry the repair.
    expect(stored(session).map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user', 'assistant']);
  });

  it('leaves an aborted run the prefix that happened', async () => {
    const controller = new AbortController();
    const agent = createAgent({
      client: twoRoundtrips(),
      persistence: 'model-call',
      tools: [
        lookup(() => {
          controller.abort(new Error('stop'));
          return new Promise(() => {});
        }),
      ],
    });
    const session = agent.createSession();
    await expect(agent.run('find it', { session, signal: controller.signal })).rejects.toThrow('stop');
    expect(stored(session).map((m) => m.calls)).toEqual([[], ['c1']]);
  });

  it('saves the session to the agent store after each write of the in-memory history', async () => {
    const store = new InMemorySessionStore();
    const seen: unknown[] = [];
    const agent = createAgent({
      client: twoRoundtrips(),
      persistence: 'model-call',
      sessionStore: store,
      tools: [
        lookup(async () => {
          const saved = await store.get(session.sessionId);
          seen.push(stored(saved!.session as never).map((m) => m.role));
        }),
      ],
    });
    const session = agent.createSession();
    await agent.run('find it', { session });
    expect(seen).toEqual([
      ['user', 'assistant'],
      ['user', 'assistant', 'tool', 'assistant'],
    ]);
    // The caller's own save after the run still matches the etag the run left.
    await agent.saveSession(session);
    expect(stored((await store.get(session.sessionId))!.session as never)).toHaveLength(6);
  });

  it("a failing write fails the run with a ProviderError; under onError 'skip' afterRun stores what is left", async () => {
    const strict = new RecordingHistory();
    strict.failNext = true;
    const agent = createAgent({ client: twoRoundtrips(), contextProviders: [strict], persistence: 'model-call', tools: [lookup()] });
    const error = await agent.run('q', { session: agent.createSession() }).catch((e: unknown) => e);
    expect(ProviderError.isInstance(error) && error.phase).toBe('afterRun');

    const lenient = new RecordingHistory({ onError: 'skip' });
    lenient.failNext = true;
    const events: AgentEvent[] = [];
    const other = createAgent({
      client: twoRoundtrips(),
      contextProviders: [lenient],
      persistence: 'model-call',
      tools: [lookup()],
      onEvent: (e) => events.push(e),
    });
    const session = other.createSession();
    expect((await other.run('q', { session })).text).toBe('Done.');
    expect(events.some((e) => e.type === 'provider-skipped' && e.sourceId === 'memory')).toBe(true);
    expect(lenient.batches).toEqual([{ roles: ['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant'], turn: expect.anything() }]);
  });

  it('refuses an unknown persistence', () => {
    expect(() => createAgent({ client: twoRoundtrips(), persistence: 'turn' as never })).toThrow(ConfigurationError);
  });
});

describe('retries: a turn is identified by its input message ids', () => {
  for (const persistence of ['run', 'model-call'] as const) {
    it(`a retried turn is sent the history before its earlier attempt and stored once, with its own reply (${persistence})`, async () => {
      const client = new ScriptedChatClient({
        replies: [
          'First.',
          { toolCalls: [{ name: 'lookup', callId: 'c1' }] },
          'Answer A.',
          { toolCalls: [{ name: 'lookup', callId: 'c2' }] },
          'Answer B.',
        ],
      });
      const events: AgentEvent[] = [];
      const agent = createAgent({ client, persistence, tools: [lookup()], onEvent: (e) => events.push(e) });
      const session = agent.createSession();
      await agent.run('hello', { session });
      const question = Message.user('what is it?');
      await agent.run(question, { session }); // its reply never reached the caller, who retries
      const again = await agent.run(question, { session });
      expect(again.text).toBe('Answer B.');
      expect(client.calls[3]!.messages.map((m) => Message.text(m) || m.role)).toEqual(['hello', 'First.', 'what is it?']);
      expect(stored(session).map((m) => m.calls.join() || m.role)).toEqual(['user', 'assistant', 'user', 'c2', '=c2', 'assistant']);
      expect(Message.text((session.state.memory!.messages as Message[]).at(-1)!)).toBe('Answer B.');
      expect(events.some((e) => e.type === 'provider-diagnostic' && e.code === 'retried-turn')).toBe(true);
    });
  }

  it('an input id reused after another turn is not a retry: nothing stored is removed', async () => {
    const client = new ScriptedChatClient({ replies: ['A.', 'B.', 'C.'] });
    const agent = createAgent({ client });
    const session = agent.createSession();
    const first = Message.user('one');
    await agent.run(first, { session });
    await agent.run('two', { session });
    await agent.run([first, Message.user('three')], { session });
    expect(client.calls[2]!.messages.map((m) => Message.text(m))).toEqual(['one', 'A.', 'two', 'B.', 'one', 'three']);
    expect(stored(session).map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user', 'assistant']);
  });
});
