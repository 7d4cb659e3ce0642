import { describe, expect, it } from 'vitest';
import { ProviderError, SessionStateError } from '../errors.js';
import { Message } from '../messages/message.js';
import { createAgent } from '../run/create-agent.js';
import type { ContextProvider } from '../contracts/run-view.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { InMemoryHistoryProvider } from './in-memory-history-provider.js';

/** A provider that keeps what each run's context holds from `memory`. */
function probe(seen: (readonly Message[])[]): ContextProvider {
  return {
    sourceId: 'probe',
    beforeRun: ({ context }) => {
      seen.push(context.contextMessages.get('memory') ?? []);
    },
  };
}

const stored = (session: { state: Record<string, { messages?: unknown }> }) => session.state.memory!.messages as Message[];

describe('InMemoryHistoryProvider: loading without copying', () => {
  it('loads stored messages attributed as history while the stored ones keep their own attribution', async () => {
    const client = new ScriptedChatClient({ replies: ['one', 'two'] });
    const agent = createAgent({ client });
    const session = agent.createSession();
    await agent.run('first', { session });
    await agent.run('second', { session });
    expect(client.calls[1]!.messages.map((m) => [Message.text(m), Message.source(m)])).toEqual([
      ['first', { sourceId: 'memory', sourceType: 'history' }],
      ['one', { sourceId: 'memory', sourceType: 'history' }],
      ['second', { sourceId: 'input', sourceType: 'input' }],
    ]);
    expect(stored(session).map((m) => Message.source(m)?.sourceType)).toEqual(['input', 'response', 'input', 'response']);
  });

  it('reuses the loaded messages from run to run, and loads a stored message replaced or removed in the state anew', async () => {
    const seen: (readonly Message[])[] = [];
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: (_m, _o, i) => `answer ${i}` }),
      contextProviders: [new InMemoryHistoryProvider(), probe(seen)],
    });
    const session = agent.createSession();
    await agent.run('q0', { session });
    await agent.run('q1', { session });
    await agent.run('q2', { session });
    expect(seen[2]![0]).toBe(seen[1]![0]);
    expect(seen[2]![1]).toBe(seen[1]![1]);

    stored(session)[0] = Message.user('rewritten', { id: stored(session)[0]!.id });
    stored(session).length = 4;
    await agent.run('q3', { session });
    expect(seen[3]!.map(Message.text)).toEqual(['rewritten', 'answer 0', 'q1', 'answer 1']);
    expect(seen[3]![1]).toBe(seen[2]![1]);
    expect(Message.source(seen[3]![0]!)).toEqual({ sourceId: 'memory', sourceType: 'history' });
  });

  it('slides a window over the stored history, loading only its newest messages', async () => {
    const seen: (readonly Message[])[] = [];
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: (_m, _o, i) => `answer ${i}` }),
      contextProviders: [new InMemoryHistoryProvider({ maxMessages: 3 }), probe(seen)],
    });
    const session = agent.createSession();
    for (let i = 0; i < 6; i++) await agent.run(`q${i}`, { session });
    expect(seen.map((list) => list.map(Message.text))).toEqual([
      [],
      ['q0', 'answer 0'],
      ['answer 0', 'q1', 'answer 1'],
      ['answer 1', 'q2', 'answer 2'],
      ['answer 2', 'q3', 'answer 3'],
      ['answer 3', 'q4', 'answer 4'],
    ]);
    expect(seen[5]![0]).toBe(seen[4]![2]);
  });

  it('validates a stored message put in the state by hand on its first load, naming its path', async () => {
    const agent = createAgent({ client: new ScriptedChatClient({ replies: ['x'] }) });
    const session = agent.createSession();
    session.state.memory = { messages: [Message.user('fine'), { id: 'bad', role: 'robot', contents: [] }] as never };
    const error = await agent.run('go', { session }).catch((e: unknown) => e);
    expect(ProviderError.isInstance(error)).toBe(true);
    const cause = (error as ProviderError).cause;
    expect(SessionStateError.isInstance(cause)).toBe(true);
    expect((cause as SessionStateError).path).toBe('$.state.memory.messages[1].role');
  });
});

describe('InMemoryHistoryProvider: stored history cannot be changed through what a run hands out', () => {
  it('keeps the stored turn when the caller mutates its input and the returned response afterwards', async () => {
    const agent = createAgent({ client: new ScriptedChatClient({ replies: ['the answer'] }) });
    const session = agent.createSession();
    const input = Message.user('the question', { metadata: { tag: { n: 1 } } });
    const res = await agent.run(input, { session });
    const before = JSON.stringify(session);

    (input.contents[0] as { text: string }).text = 'changed';
    (input.metadata!.tag as { n: number }).n = 2;
    (res.messages[0]!.contents[0] as { text: string }).text = 'changed';
    res.messages[0]!.metadata = { changed: true };
    res.messages.length = 0;

    expect(JSON.stringify(session)).toBe(before);
    expect(stored(session).map(Message.text)).toEqual(['the question', 'the answer']);
  });

  it('hands providers loaded messages that throw on any write, the stored history unchanged', async () => {
    const errors: unknown[] = [];
    const writer: ContextProvider = {
      sourceId: 'writer',
      beforeRun: ({ context }) => {
        const [loaded] = context.contextMessages.get('memory') ?? [];
        if (!loaded) return;
        const writes = [
          () => ((loaded as { role: string }).role = 'system'),
          () => ((loaded.contents[0] as { text: string }).text = 'rewritten'),
          () => ((loaded.metadata!.ctx as { sourceType: string }).sourceType = 'context'),
          () => (loaded.contents as unknown[]).push({ type: 'text', text: 'more' }),
        ];
        for (const write of writes) {
          try {
            write();
          } catch (error) {
            errors.push(error);
          }
        }
      },
    };
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: ['a', 'b'] }),
      contextProviders: [new InMemoryHistoryProvider(), writer],
    });
    const session = agent.createSession();
    await agent.run('first', { session });
    const before = JSON.stringify(session);
    await agent.run('second', { session });
    expect(errors).toHaveLength(4);
    expect(errors.every((e) => e instanceof TypeError)).toBe(true);
    expect(JSON.stringify(stored(session).slice(0, 2))).toBe(JSON.stringify(JSON.parse(before).state.memory.messages));
  });

  it('stores a message that holds a "__proto__" key as it came, without changing any prototype', async () => {
    const agent = createAgent({ client: new ScriptedChatClient({ replies: ['ok'] }) });
    const session = agent.createSession();
    const input = JSON.parse('{"id":"m1","role":"user","contents":[{"type":"text","text":"hi"}],"metadata":{"__proto__":{"x":1}}}');
    await agent.run(input, { session });
    const [first] = stored(session);
    expect(Object.hasOwn(first!.metadata!, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(first!.metadata)).toBe(Object.prototype);
    expect(agent.restoreSession(JSON.stringify(session)).toJSON()).toEqual(JSON.parse(JSON.stringify(session)));
  });
});
