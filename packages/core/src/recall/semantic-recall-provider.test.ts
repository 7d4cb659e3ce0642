import { describe, expect, it } from 'vitest';
import { ConfigurationError, CtxError } from '../errors.js';
import { InMemoryHistoryProvider } from '../history/in-memory-history-provider.js';
import { Message } from '../messages/message.js';
import { createHashEmbedding } from '../retrieval/hash-embedding.js';
import { InMemoryVectorIndex } from '../retrieval/in-memory-vector-index.js';
import { createAgent } from '../run/create-agent.js';
import { InMemorySessionStore } from '../session/in-memory-session-store.js';
import type { EmbeddingGenerator } from '../contracts/embedding-generator.js';
import type { AgentEvent } from '../contracts/events.js';
import type { ContextProvider } from '../contracts/run-view.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { withPolicies } from '../policies/with-policies.js';
import { createCharacterTokenizer } from '../tokens/character-tokenizer.js';
import { type RecalledPassage, SemanticRecallProvider } from './semantic-recall-provider.js';

const embeddings = createHashEmbedding();

/** A history that reads through its own `getMessages` (as a backend does), so the base class's load runs. */
class SelfReadingHistory extends InMemoryHistoryProvider {
  override async getMessages(...args: Parameters<InMemoryHistoryProvider['getMessages']>) {
    return super.getMessages(...args);
  }
}
const recalled = (messages: readonly Message[]) => messages.filter((m) => Message.source(m)?.sourceId === 'recall');
/** The passages of every recall message sent, best first (one message per passage). */
const passagesIn = (messages: readonly Message[]) => recalled(messages).flatMap((m) => m.metadata!.recall as unknown as RecalledPassage[]);
const echo = () => new ScriptedChatClient({ replies: () => ({ text: 'noted' }) });

const TURNS = [
  'My locker code at the gym is 4471, please remember it.',
  'I am planning a trip to Lisbon in March.',
  'The plumber comes on Thursday at noon.',
  'My favourite tea is smoked lapsang souchong.',
];

describe('SemanticRecallProvider, before mode', () => {
  it('brings back a message outside the window, with its neighbour and when it was said, after the history and before the input', async () => {
    const client = echo();
    const index = new InMemoryVectorIndex();
    const agent = createAgent({
      client,
      contextProviders: [
        new InMemoryHistoryProvider({ maxMessages: 2 }),
        new SemanticRecallProvider({ embeddings, index, scope: 'session' }),
      ],
    });
    const session = agent.createSession();
    for (const text of TURNS) await agent.run(text, { session });
    await agent.run('What was my locker code at the gym?', { session });

    const sent = client.calls.at(-1)!.messages;
    const [message] = recalled(sent);
    expect(recalled(sent)).toHaveLength(1);
    const text = Message.text(message!);
    expect(text).toContain('user: My locker code at the gym is 4471');
    expect(text).toContain('assistant: noted'); // the neighbour that followed it
    expect(text).toMatch(/\[\d{4}-\d\d-\d\d \d\d:\d\d UTC\] user: My locker code/);
    expect(text).toContain('Earlier in this conversation');
    expect(text).not.toContain('smoked lapsang'); // in the window: never recalled
    // Per-run placement: after the history, right before the input.
    const sources = sent.map((m) => Message.source(m)?.sourceId);
    expect(sources.slice(-4)).toEqual(['memory', 'memory', 'recall', 'input']);
    expect(message!.metadata?.recall).toEqual([{ sessionId: session.sessionId, messageIds: expect.any(Array), score: expect.any(Number) }]);
    expect(index.size).toBe(TURNS.length * 2 + 2);
  });

  it('recalls nothing that is already in the window', async () => {
    const client = echo();
    const agent = createAgent({
      client,
      contextProviders: [new InMemoryHistoryProvider(), new SemanticRecallProvider({ embeddings, scope: 'session' })],
    });
    const session = agent.createSession();
    for (const text of TURNS) await agent.run(text, { session });
    await agent.run('What was my locker code at the gym?', { session });
    expect(recalled(client.calls.at(-1)!.messages)).toEqual([]);
  });

  it('fills topK from outside the window even when the closest matches are in it', async () => {
    const client = echo();
    const agent = createAgent({
      client,
      contextProviders: [
        new InMemoryHistoryProvider({ maxMessages: 2 }),
        new SemanticRecallProvider({ embeddings, scope: 'session', topK: 1, messageRange: 0 }),
      ],
    });
    const session = agent.createSession();
    await agent.run('The gym locker code was 4471 last year.', { session });
    await agent.run('My gym locker code is 5000 now, the gym locker code changed.', { session });
    await agent.run('What is my gym locker code?', { session });
    const text = Message.text(recalled(client.calls.at(-1)!.messages)[0]!);
    expect(text).toContain('4471');
    expect(text).not.toContain('5000');
  });

  it("user scope recalls from the user's other sessions, never from another user's", async () => {
    const client = echo();
    const index = new InMemoryVectorIndex();
    const agent = createAgent({ client, contextProviders: [new SemanticRecallProvider({ embeddings, index, messageRange: 0 })] });
    await agent.run('My locker code at the gym is 4471.', { session: agent.createSession({ userId: 'alice' }) });
    await agent.run('My locker code at the gym is 9902.', { session: agent.createSession({ userId: 'bob' }) });
    await agent.run('What is my locker code at the gym?', { session: agent.createSession({ userId: 'alice' }) });
    const text = Message.text(recalled(client.calls.at(-1)!.messages)[0]!);
    expect(text).toContain('From an earlier conversation');
    expect(text).toContain('4471');
    expect(text).not.toContain('9902');
  });

  it('indexes the turn as the agent redacts it, never the raw text', async () => {
    const index = new InMemoryVectorIndex();
    const agent = createAgent({
      client: echo(),
      contextProviders: [new SemanticRecallProvider({ embeddings, index, scope: 'session' })],
      redact: (messages) =>
        messages.map((m) => ({
          ...m,
          contents: m.contents.map((c) => (c.type === 'text' ? { ...c, text: c.text.replace(/\S+@\S+/g, '[email]') } : c)),
        })),
    });
    const session = agent.createSession();
    await agent.run('Write to me at ana@example.org about the invoice.', { session });
    const stored = await index.getRange({ sessionId: session.sessionId, fromSequence: 0, toSequence: 10 });
    expect(stored.map((r) => [r.role, r.text])).toEqual([
      ['user', 'Write to me at [email] about the invoice.'],
      ['assistant', 'noted'],
    ]);
  });

  it('deleteSession removes the session vectors; deleteUserData removes every vector of the user', async () => {
    const index = new InMemoryVectorIndex();
    const agent = createAgent({
      client: echo(),
      sessionStore: new InMemorySessionStore(),
      contextProviders: [new SemanticRecallProvider({ embeddings, index })],
    });
    const a1 = agent.createSession({ userId: 'alice' });
    const a2 = agent.createSession({ userId: 'alice' });
    const b1 = agent.createSession({ userId: 'bob' });
    for (const s of [a1, a2, b1]) {
      await agent.run('Remember the parcel number 881.', { session: s });
      await agent.saveSession(s);
    }
    expect(index.size).toBe(6);
    await agent.deleteSession(a1.sessionId);
    expect(await index.getRange({ sessionId: a1.sessionId, fromSequence: 0, toSequence: 10 })).toEqual([]);
    expect(index.size).toBe(4);
    await agent.deleteUserData('alice');
    expect(index.size).toBe(2);
    expect(await index.query({ vector: (await embeddings.embed(['parcel']))[0]!, topK: 5, filter: { userId: 'bob' } })).toHaveLength(2);
  });

  it('an embedding model that fails leaves the run without recall, reported, and the run answers', async () => {
    let calls = 0;
    const failing: EmbeddingGenerator = {
      embed: async () => {
        calls++;
        throw new Error('embedding service down');
      },
    };
    const events: AgentEvent[] = [];
    const agent = createAgent({
      client: echo(),
      onEvent: (e) => events.push(e),
      contextProviders: [new SemanticRecallProvider({ embeddings: failing })],
    });
    const response = await agent.run('What was my locker code?', { session: agent.createSession() });
    expect(response.text).toBe('noted');
    expect(calls).toBe(1);
    expect(events.filter((e) => e.type === 'provider-skipped' && e.sourceId === 'recall')).toHaveLength(1);
  });

  it('an index that fails while storing the turn is reported and the run still answers, its turn stored', async () => {
    const index = new InMemoryVectorIndex();
    index.upsert = async () => {
      throw new Error('index unreachable');
    };
    const events: AgentEvent[] = [];
    const agent = createAgent({
      client: echo(),
      onEvent: (e) => events.push(e),
      contextProviders: [new SemanticRecallProvider({ embeddings, index })],
    });
    const session = agent.createSession();
    const response = await agent.run('Remember the parcel number 881.', { session });
    expect(response.text).toBe('noted');
    expect(await agent.getHistory(session)).toHaveLength(2);
    expect(
      events.filter((e) => e.type === 'provider-diagnostic' && e.code === 'turn-stored-failed' && e.sourceId === 'recall'),
    ).toHaveLength(1);
  });

  it('an embedding model that never answers is abandoned at timeoutMs, and an abort ends the run at once', async () => {
    const hanging: EmbeddingGenerator = { embed: () => new Promise(() => {}) };
    const agent = createAgent({ client: echo(), contextProviders: [new SemanticRecallProvider({ embeddings: hanging, timeoutMs: 20 })] });
    expect((await agent.run('hello', { session: agent.createSession() })).text).toBe('noted');

    const patient = createAgent({ client: echo(), contextProviders: [new SemanticRecallProvider({ embeddings: hanging })] });
    const controller = new AbortController();
    const run = patient.run('hello', { session: patient.createSession(), signal: controller.signal });
    const reason = new Error('user left');
    controller.abort(reason);
    await expect(run).rejects.toBe(reason);
  });

  it('refuses bad options with a ConfigurationError naming the option', () => {
    expect(() => new SemanticRecallProvider({ embeddings, topK: 0 })).toThrow(/topK must be an integer from 1/);
    expect(() => new SemanticRecallProvider({ embeddings, messageRange: 21 })).toThrow(ConfigurationError);
    expect(() => new SemanticRecallProvider({ embeddings, scope: 'team' as 'user' })).toThrow(/scope must be/);
    expect(() => new SemanticRecallProvider({} as never)).toThrow(/needs `embeddings`/);
  });
});

describe('SemanticRecallProvider, tool mode', () => {
  it('offers a recall tool; the model finds a message said in an earlier session', async () => {
    const index = new InMemoryVectorIndex();
    const provider = new SemanticRecallProvider({ embeddings, index, mode: 'tool' });
    const first = createAgent({ client: echo(), contextProviders: [provider] });
    await first.run('The plumber comes on Thursday at noon.', { session: first.createSession({ userId: 'u1' }) });

    const client = new ScriptedChatClient({
      replies: [{ toolCalls: [{ name: 'recall', arguments: { query: 'when does the plumber come' } }] }, { text: 'Thursday at noon.' }],
    });
    const agent = createAgent({ client, contextProviders: [provider] });
    await agent.run('When is the plumber coming?', { session: agent.createSession({ userId: 'u1' }) });
    expect(client.calls[0]!.options.tools?.map((t) => t.name)).toEqual(['recall']);
    expect(recalled(client.calls[0]!.messages)).toEqual([]); // nothing injected in tool mode
    const result = client.calls[1]!.messages.flatMap((m) => m.contents).find((c) => c.type === 'function-result');
    const { results } = result!.result as { results: { sessionId: string; messages: { role: string; text: string; said: string }[] }[] };
    expect(results[0]!.messages.map((m) => m.text)).toEqual(['The plumber comes on Thursday at noon.', 'noted']);
    expect(results[0]!.messages[0]!.said).toMatch(/^\d{4}-\d\d-\d\dT/);
  });
});

describe('SemanticRecallProvider, the index follows the history', () => {
  const window2 = (index: InMemoryVectorIndex, client = echo()) => ({
    client,
    agent: createAgent({
      client,
      contextProviders: [
        new InMemoryHistoryProvider({ maxMessages: 2 }),
        new SemanticRecallProvider({ embeddings, index, scope: 'session', messageRange: 0 }),
      ],
    }),
  });

  it('a rewound message is never recalled again: its vectors leave the index before the history is cut', async () => {
    const index = new InMemoryVectorIndex();
    const { client, agent } = window2(index);
    const session = agent.createSession();
    await agent.run('I am planning a trip to Lisbon in March.', { session });
    await agent.run('My locker code at the gym is 4471, please remember it.', { session });
    await agent.run('The plumber comes on Thursday at noon.', { session });
    const history = await agent.getHistory(session);
    const removed = await agent.rewindSession(session, history[2]!.id);
    expect(removed.map((m) => Message.text(m))).toEqual([
      'My locker code at the gym is 4471, please remember it.',
      'noted',
      'The plumber comes on Thursday at noon.',
      'noted',
    ]);
    expect(index.size).toBe(2);
    await agent.run('My favourite tea is smoked lapsang souchong.', { session });
    await agent.run('What was my locker code at the gym, or the plumber?', { session });
    const text = recalled(client.calls.at(-1)!.messages)
      .map((m) => Message.text(m))
      .join('\n');
    expect(text).not.toContain('4471');
    expect(text).not.toContain('plumber comes');
  });

  it('regenerate: the answer it replaces is not recalled, the new one is', async () => {
    const index = new InMemoryVectorIndex();
    let boat = 0;
    const client = new ScriptedChatClient({
      replies: (messages) => {
        const last = Message.text(messages.at(-1)!);
        if (last.includes('name for my boat'))
          return { text: ++boat === 1 ? 'Call the boat Seafoam Serenade.' : 'Call the boat Blue Heron.' };
        return { text: 'noted' };
      },
    });
    const { agent } = window2(index, client);
    const session = agent.createSession();
    await agent.run('Suggest a name for my boat.', { session });
    await agent.regenerate(session);
    await agent.run('My favourite tea is smoked lapsang souchong.', { session });
    await agent.run('Which name did you suggest for the boat?', { session });
    const text = Message.text(recalled(client.calls.at(-1)!.messages)[0]!);
    expect(text).toContain('Blue Heron');
    expect(text).not.toContain('Seafoam');
  });

  it('a retried turn (same input message) replaces its earlier answer in the index as in the history', async () => {
    for (const history of [new InMemoryHistoryProvider({ maxMessages: 2 }), new SelfReadingHistory({ maxMessages: 2 })]) {
      const index = new InMemoryVectorIndex();
      let boat = 0;
      const client = new ScriptedChatClient({
        replies: (messages) =>
          Message.text(messages.at(-1)!).includes('name for my boat')
            ? { text: ++boat === 1 ? 'Call the boat Seafoam Serenade.' : 'Call the boat Blue Heron.' }
            : { text: 'noted' },
      });
      const agent = createAgent({
        client,
        contextProviders: [history, new SemanticRecallProvider({ embeddings, index, scope: 'session', messageRange: 0 })],
      });
      const session = agent.createSession();
      const question = Message.user('Suggest a name for my boat.');
      await agent.run(question, { session });
      await agent.run(question, { session }); // the same message again: a retry of the turn
      expect((await agent.getHistory(session)).map((m) => Message.text(m))).toEqual([
        'Suggest a name for my boat.',
        'Call the boat Blue Heron.',
      ]);
      expect(index.size).toBe(2);
      await agent.run('My favourite tea is smoked lapsang souchong.', { session });
      await agent.run('Which name did you suggest for the boat?', { session });
      const text = Message.text(recalled(client.calls.at(-1)!.messages)[0]!);
      expect(text, history.constructor.name).toContain('Blue Heron');
      expect(text).not.toContain('Seafoam');
    }
  });

  it('a fork recalls the history it copied (up to the fork point), under its own session id', async () => {
    const index = new InMemoryVectorIndex();
    const { client, agent } = window2(index);
    const session = agent.createSession();
    await agent.run('My locker code at the gym is 4471, please remember it.', { session });
    await agent.run('I am planning a trip to Lisbon in March.', { session });
    await agent.run('The gym locker code changes to 9902 next week.', { session });
    const history = await agent.getHistory(session);
    const fork = await agent.forkSession(session, { atMessageId: history[3]!.id });
    expect(await index.getRange({ sessionId: fork.sessionId, fromSequence: 0, toSequence: 100 })).toHaveLength(4);

    await agent.run('My favourite tea is smoked lapsang souchong.', { session: fork });
    await agent.run('What is my locker code at the gym?', { session: fork });
    const [message] = recalled(client.calls.at(-1)!.messages);
    expect(Message.text(message!)).toContain('Earlier in this conversation:\n');
    expect(Message.text(message!)).toContain('4471');
    expect(Message.text(message!)).not.toContain('9902'); // said after the fork point, in the source only
    expect((message!.metadata!.recall as unknown as RecalledPassage[]).every((p) => p.sessionId === fork.sessionId)).toBe(true);
  });

  it('a fork whose recall copy fails is refused and leaves no record under its id', async () => {
    const index = new InMemoryVectorIndex();
    let failing = false;
    let calls = 0;
    // Fails the second batch of the copy, after the first was stored.
    const flaky: EmbeddingGenerator = {
      embed: async (texts, options) => {
        if (failing && ++calls > 1) throw new Error('embedding service down');
        return embeddings.embed(texts, options);
      },
    };
    const agent = createAgent({
      client: echo(),
      contextProviders: [new InMemoryHistoryProvider(), new SemanticRecallProvider({ embeddings: flaky, index, scope: 'session' })],
    });
    const session = agent.createSession();
    for (let turn = 0; turn < 70; turn++) await agent.run(`Turn ${turn}: my locker code is ${1000 + turn}.`, { session });
    failing = true;
    await expect(agent.forkSession(session, { sessionId: 'the-fork' })).rejects.toThrow(/embedding service down/);
    expect(calls).toBe(2);
    expect(await index.getRange({ sessionId: 'the-fork', fromSequence: 0, toSequence: 1000 })).toEqual([]);
    expect(index.size).toBe(140);
  });

  it("a fork that fails in another provider's hook leaves no recall record under its id, so the user's other sessions never find it", async () => {
    const index = new InMemoryVectorIndex();
    const client = echo();
    const mirror: ContextProvider = {
      sourceId: 'mirror',
      onSessionForked: async () => {
        throw new Error('mirror down');
      },
    };
    const agent = createAgent({
      client,
      contextProviders: [
        new InMemoryHistoryProvider({ maxMessages: 2 }),
        new SemanticRecallProvider({ embeddings, index, messageRange: 0 }),
        mirror,
      ],
    });
    const session = agent.createSession({ userId: 'ana' });
    await agent.run('My locker code at the gym is 4471, please remember it.', { session });
    await expect(agent.forkSession(session, { sessionId: 'the-fork' })).rejects.toThrow(/mirror down/);
    expect(await index.getRange({ sessionId: 'the-fork', userId: 'ana', fromSequence: 0, toSequence: 100 })).toEqual([]);
    await agent.run('What is my locker code at the gym?', { session: agent.createSession({ userId: 'ana' }) });
    const passages = passagesIn(client.calls.at(-1)!.messages);
    expect(passages.map((p) => p.sessionId)).toEqual([session.sessionId]);
  });

  it('a failed copy whose records cannot be removed is a CtxError naming the fork, never swallowed', async () => {
    const index = new InMemoryVectorIndex();
    const provider = new SemanticRecallProvider({ embeddings, index, scope: 'session' });
    const agent = createAgent({ client: echo(), contextProviders: [new InMemoryHistoryProvider(), provider] });
    const session = agent.createSession();
    for (let turn = 0; turn < 70; turn++) await agent.run(`Turn ${turn}: my locker code is ${1000 + turn}.`, { session });
    const messages = await agent.getHistory(session);
    const fork = agent.createSession({ sessionId: 'the-fork' });
    let calls = 0;
    const flaky = new SemanticRecallProvider({
      embeddings: {
        embed: async (texts, options) => {
          if (++calls > 1) throw new Error('embedding service down');
          return embeddings.embed(texts, options);
        },
      },
      index,
      scope: 'session',
    });
    index.delete = async () => {
      throw new Error('index unreachable');
    };
    const error = await flaky
      .onSessionForked({ agent, source: session, session: fork, state: {}, messages, signal: new AbortController().signal })
      .catch((e: unknown) => e);
    expect(CtxError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(
      /fork "the-fork" failed \(Error: embedding service down\).*could not be removed \(Error: index unreachable\)/,
    );
    expect((error as Error).cause).toBeInstanceOf(Error);
  });

  it('an aborted fork is undone in the background, and a fork retried under the same id waits for it and keeps its records', async () => {
    const index = new InMemoryVectorIndex();
    const controller = new AbortController();
    let hang = true;
    const embed: EmbeddingGenerator = {
      embed: async (texts, options) => {
        // The copy's second batch: the caller gives up while it runs.
        if (hang && texts.length === 12) {
          controller.abort(new Error('user left'));
          return new Promise(() => {});
        }
        return embeddings.embed(texts, options);
      },
    };
    const agent = createAgent({
      client: echo(),
      contextProviders: [new InMemoryHistoryProvider(), new SemanticRecallProvider({ embeddings: embed, index, scope: 'session' })],
    });
    const session = agent.createSession();
    for (let turn = 0; turn < 70; turn++) await agent.run(`Turn ${turn}: my locker code is ${1000 + turn}.`, { session });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const remove = index.delete.bind(index);
    index.delete = async (target, options) => {
      await gate;
      return remove(target, options);
    };
    await expect(agent.forkSession(session, { sessionId: 'the-fork', signal: controller.signal })).rejects.toThrow('user left');
    hang = false;
    const retry = agent.forkSession(session, { sessionId: 'the-fork' });
    await new Promise((resolve) => setImmediate(resolve));
    release();
    await retry;
    await new Promise((resolve) => setImmediate(resolve));
    expect(await index.getRange({ sessionId: 'the-fork', fromSequence: 0, toSequence: 1000 })).toHaveLength(140);
  });

  it("a fork's copy is bounded by the fork's signal, not by the per-run timeoutMs", async () => {
    const index = new InMemoryVectorIndex();
    let copying = false;
    const slow: EmbeddingGenerator = {
      embed: async (texts, options) => {
        if (copying) await new Promise((resolve) => setTimeout(resolve, 20));
        return embeddings.embed(texts, options);
      },
    };
    const agent = createAgent({
      client: echo(),
      contextProviders: [
        new InMemoryHistoryProvider(),
        new SemanticRecallProvider({ embeddings: slow, index, scope: 'session', timeoutMs: 1 }),
      ],
    });
    const session = agent.createSession();
    await agent.run('My locker code at the gym is 4471, please remember it.', { session });
    copying = true;
    const fork = await agent.forkSession(session);
    expect(await index.getRange({ sessionId: fork.sessionId, fromSequence: 0, toSequence: 100 })).toHaveLength(2);
  });

  it('user scope: a fork recalls each copied message once, as part of this conversation', async () => {
    const index = new InMemoryVectorIndex();
    const client = echo();
    const agent = createAgent({
      client,
      contextProviders: [
        new InMemoryHistoryProvider({ maxMessages: 2 }),
        new SemanticRecallProvider({ embeddings, index, messageRange: 0 }),
      ],
    });
    const session = agent.createSession({ userId: 'ana' });
    await agent.run('My locker code at the gym is 4471, please remember it.', { session });
    await agent.run('I am planning a trip to Lisbon in March.', { session });
    const fork = await agent.forkSession(session);
    await agent.run('What is my locker code at the gym?', { session: fork });
    const passages = passagesIn(client.calls.at(-1)!.messages);
    const ids = passages.flatMap((p) => p.messageIds);
    expect(new Set(ids).size).toBe(ids.length);
    const first = (await agent.getHistory(session))[0]!.id;
    expect(passages.find((p) => p.messageIds.includes(first))?.sessionId).toBe(fork.sessionId);
  });

  it('user scope: forks do not crowd out recall: a session and two forks still give topK distinct messages', async () => {
    const index = new InMemoryVectorIndex();
    const client = echo();
    const agent = createAgent({
      client,
      contextProviders: [new InMemoryHistoryProvider(), new SemanticRecallProvider({ embeddings, index, topK: 4, messageRange: 0 })],
    });
    const session = agent.createSession({ userId: 'ana' });
    for (const code of [4471, 5582, 6693, 7704, 8815, 9926]) await agent.run(`My locker code at the gym was ${code}.`, { session });
    await agent.forkSession(session);
    await agent.forkSession(session);
    await agent.run('What was my locker code at the gym?', { session: agent.createSession({ userId: 'ana' }) });
    const passages = passagesIn(client.calls.at(-1)!.messages);
    const ids = passages.flatMap((p) => p.messageIds);
    expect(new Set(ids).size).toBe(4);
    expect(ids).toHaveLength(4);
  });

  it('an index that cannot delete stops the rewind with nothing removed from the history', async () => {
    const index = new InMemoryVectorIndex();
    const { agent } = window2(index);
    const session = agent.createSession();
    await agent.run('My locker code at the gym is 4471, please remember it.', { session });
    await agent.run('I am planning a trip to Lisbon in March.', { session });
    index.delete = async () => {
      throw new Error('index unreachable');
    };
    const history = await agent.getHistory(session);
    await expect(agent.rewindSession(session, history[2]!.id)).rejects.toThrow(/recall.*onRewind|index unreachable/s);
    expect(await agent.getHistory(session)).toHaveLength(4);
    expect(index.size).toBe(4);
  });

  it('a rewind that removes a summary removes what the summary stood for from the index too', async () => {
    const index = new InMemoryVectorIndex();
    const provider = new SemanticRecallProvider({ embeddings, index, scope: 'session' });
    const session = createAgent({ client: echo(), contextProviders: [provider] }).createSession();
    const archived = [Message.user('My locker code at the gym is 4471.'), Message.assistant('noted')];
    await provider.archiveFor({ session }).store(archived, {});
    expect(index.size).toBe(2);
    const summary = Message.system('Summary: the user gave a locker code.', {
      metadata: {
        ctx: {
          sourceId: 'compaction',
          sourceType: 'context',
          summary: { replaces: archived.map((m) => m.id), createdAt: '2026-11-28T00:00:00Z' },
        },
      },
    });
    await provider.onRewind({
      agent: { name: 'a', client: echo(), contextProviders: [provider] },
      session,
      state: {},
      removed: [summary],
      kept: [],
      signal: new AbortController().signal,
    });
    expect(index.size).toBe(0);
  });
});

describe('SemanticRecallProvider, user data', () => {
  it("exportUserData holds the user's indexed messages (text as redacted, ids, times, sessions), never another user's, and no vectors", async () => {
    const index = new InMemoryVectorIndex();
    const agent = createAgent({
      client: echo(),
      sessionStore: new InMemorySessionStore(),
      contextProviders: [new SemanticRecallProvider({ embeddings, index })],
      redact: (messages) =>
        messages.map((m) => ({
          ...m,
          contents: m.contents.map((c) => (c.type === 'text' ? { ...c, text: c.text.replace(/\d{4}/g, '[code]') } : c)),
        })),
    });
    const a1 = agent.createSession({ userId: 'alice' });
    const b1 = agent.createSession({ userId: 'bob' });
    await agent.run('My locker code is 4471.', { session: a1 });
    await agent.run('My locker code is 9902.', { session: b1 });
    for (const s of [a1, b1]) await agent.saveSession(s);

    const exported = await agent.exportUserData('alice');
    const { records } = exported.providers.recall as { records: Record<string, unknown>[] };
    expect(records.map((r) => [r.sessionId, r.role, r.text, r.sequence])).toEqual([
      [a1.sessionId, 'user', 'My locker code is [code].', 0],
      [a1.sessionId, 'assistant', 'noted', 1],
    ]);
    const history = (await agent.exportUserData('alice')).sessions[0]!.history.memory!;
    expect(records.map((r) => r.messageId)).toEqual(history.map((m) => m.id));
    for (const r of records) {
      expect(r.userId).toBe('alice');
      expect(r.createdAt).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect(r).not.toHaveProperty('vector');
    }
    expect(JSON.stringify(exported)).not.toContain('9902');

    await agent.deleteUserData('alice');
    expect((await agent.exportUserData('alice')).providers).toEqual({});
  });

  it('an index that cannot list says so in the export instead of leaving the records out silently', async () => {
    const index = new InMemoryVectorIndex();
    const unlisted = {
      upsert: index.upsert.bind(index),
      query: index.query.bind(index),
      getRange: index.getRange.bind(index),
      delete: index.delete.bind(index),
    };
    const agent = createAgent({
      client: echo(),
      sessionStore: new InMemorySessionStore(),
      contextProviders: [new SemanticRecallProvider({ embeddings, index: unlisted })],
    });
    const session = agent.createSession({ userId: 'alice' });
    await agent.run('My locker code is 4471.', { session });
    await agent.saveSession(session);
    expect((await agent.exportUserData('alice')).providers.recall).toMatchObject({
      listed: false,
      reason: expect.stringMatching(/no list method/),
    });
  });
});

describe('SemanticRecallProvider, budget and when', () => {
  const FACTS = ['My locker code at the gym is 4471.', 'The gym locker room closes at ten.', 'I bought new gym shoes for the locker room.'];

  /** Three sessions of one user, one fact each; then a question about the locker code, in a fourth. */
  async function ask(recall: ContextProvider) {
    const client = echo();
    const agent = createAgent({ client, contextProviders: [new InMemoryHistoryProvider(), recall] });
    for (const fact of FACTS) await agent.run(fact, { session: agent.createSession({ userId: 'ana' }) });
    await agent.run('What is my gym locker code?', { session: agent.createSession({ userId: 'ana' }) });
    return recalled(client.calls.at(-1)!.messages);
  }
  const options = { embeddings, topK: 3, messageRange: 0, indexMessages: true } as const;

  it('one message per passage, best first, each with its similarity as metadata.priority; the header rides on the first', async () => {
    const messages = await ask(new SemanticRecallProvider(options));
    expect(messages).toHaveLength(3);
    const scores = messages.map((m) => m.metadata!.priority as number);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(Message.text(messages[0]!)).toMatch(/^Earlier messages that may be relevant/);
    expect(Message.text(messages[1]!)).not.toMatch(/^Earlier messages/);
  });

  for (const [way, make] of [
    ['its own budget', (maxTokens: number) => new SemanticRecallProvider({ ...options, budget: { maxTokens } })],
    ['withPolicies', (maxTokens: number) => withPolicies(new SemanticRecallProvider(options), { budget: { maxTokens } })],
  ] as const) {
    it(`a budget (${way}) smaller than the block drops the weakest passages first and keeps the best`, async () => {
      const all = await ask(new SemanticRecallProvider(options));
      const best = all[0]!;
      const tokens = createCharacterTokenizer().countMessageTokens([best]);
      const kept = await ask(make(tokens + 5));
      expect(kept.map((m) => Message.text(m))).toEqual([Message.text(best)]);
      expect(Message.text(kept[0]!)).toContain('4471');
    });
  }

  it('when declines: nothing is recalled in that run, but the turn is still indexed', async () => {
    const index = new InMemoryVectorIndex();
    const messages = await ask(
      new SemanticRecallProvider({
        ...options,
        index,
        when: (context) => !Message.text(context.inputMessages[0]!).includes('locker code'),
      }),
    );
    expect(messages).toEqual([]);
    expect(index.size).toBe(8);
  });
});
