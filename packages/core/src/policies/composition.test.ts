import { describe, expect, it } from 'vitest';
import { CompactionProvider } from '../compaction/compaction-provider.js';
import { isSummary } from '../compaction/message-groups.js';
import { toolResultCollapse } from '../compaction/strategies.js';
import { summarization, summaryInfo } from '../compaction/summarization.js';
import { ConfigurationError } from '../errors.js';
import { InMemoryHistoryProvider } from '../history/in-memory-history-provider.js';
import { Message } from '../messages/message.js';
import { ContextualToolsProvider } from '../providers/contextual-tools-provider.js';
import { TextSearchProvider } from '../providers/text-search-provider.js';
import { TitleProvider } from '../providers/title-provider.js';
import { WhiteboardProvider } from '../providers/whiteboard-provider.js';
import { SemanticRecallProvider } from '../recall/semantic-recall-provider.js';
import { createHashEmbedding } from '../retrieval/hash-embedding.js';
import { InMemoryRetriever } from '../retrieval/in-memory-retriever.js';
import { InMemoryVectorIndex } from '../retrieval/in-memory-vector-index.js';
import { createAgent } from '../run/create-agent.js';
import { FileSessionStore } from '../session/file-session-store.js';
import { InMemorySessionStore } from '../session/in-memory-session-store.js';
import type { AgentEvent } from '../contracts/events.js';
import type { ContextProvider } from '../contracts/run-view.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { defineTool } from '../tools/define-tool.js';
import { InMemoryWorkingMemoryStore } from '../working-memory/in-memory-working-memory-store.js';
import { WorkingMemoryProvider } from '../working-memory/working-memory-provider.js';
import { withPolicies } from './with-policies.js';
import { CONTEXT_PROVIDER_MEMBERS, findProvider, unwrapProvider, wrapProvider } from './wrap-provider.js';

// Every built-in provider, wrapped and unwrapped, against the operations that keep derived data in
// step with the history: rewind, fork, regenerate, session delete, user export and delete, and the
// compaction archive. A wrapper must change nothing here.

const embeddings = createHashEmbedding();
const echo = () => new ScriptedChatClient({ replies: () => ({ text: 'noted' }) });
const recalledText = (messages: readonly Message[]) =>
  messages
    .filter((m) => Message.source(m)?.sourceId === 'recall')
    .map((m) => Message.text(m))
    .join('\n');

const ways = [
  ['unwrapped', <T extends ContextProvider>(p: T): ContextProvider => p],
  ['wrapped by withPolicies', (p: ContextProvider): ContextProvider => withPolicies(p, { budget: { maxTokens: 100_000 } })],
  [
    'wrapped twice',
    (p: ContextProvider): ContextProvider => withPolicies(withPolicies(p, { when: () => true }), { budget: { maxTokens: 100_000 } }),
  ],
] as const;

function builtIns(): ContextProvider[] {
  const client = echo();
  const tool = defineTool({ name: 'noop', description: 'Does nothing.', parameters: { type: 'object' }, execute: () => 'ok' });
  return [
    new SemanticRecallProvider({ embeddings }),
    new WorkingMemoryProvider({ template: '# Notes', store: new InMemoryWorkingMemoryStore() }),
    new WhiteboardProvider({ client }),
    new TextSearchProvider({ retriever: new InMemoryRetriever({ documents: [{ id: 'a', content: 'alpha' }] }) }),
    new ContextualToolsProvider({ embeddings, tools: [tool] }),
    new TitleProvider({ client }),
    new CompactionProvider({ strategy: toolResultCollapse() }),
  ];
}

describe('every built-in provider through withPolicies', () => {
  for (const provider of builtIns()) {
    it(`${provider.constructor.name}: the wrapper has every member the provider has, and forwards each hook it does not intercept`, async () => {
      const wrapped = withPolicies(provider, { budget: { maxTokens: 1000 } });
      const inner = provider as unknown as Record<string, unknown>;
      const outer = wrapped as unknown as Record<string, unknown>;
      for (const [name, kind] of Object.entries(CONTEXT_PROVIDER_MEMBERS)) {
        if (kind === 'value') expect(outer[name], name).toBe(inner[name]);
        else if (name !== 'beforeRun') expect(typeof outer[name], name).toBe(typeof inner[name]);
      }
      expect(unwrapProvider(wrapped)).toEqual([wrapped, provider]);
    });
  }

  it('a hook added to a provider is forwarded with its arguments and `this`, and its result comes back', async () => {
    const seen: unknown[] = [];
    const provider = {
      sourceId: 'p',
      marker: 'inner',
      onRewind(this: { marker: string }, args: unknown) {
        seen.push(this.marker, args);
      },
      async exportUserData() {
        return { kept: true };
      },
      mergeState: () => ({ merged: true }),
    };
    const wrapped = withPolicies(provider, { when: () => false });
    const args = { removed: [] } as never;
    await wrapped.onRewind!(args);
    expect(seen).toEqual(['inner', args]);
    expect(await wrapped.exportUserData!({ userId: 'u', signal: new AbortController().signal } as never)).toEqual({ kept: true });
    expect(wrapped.mergeState!({} as never)).toEqual({ merged: true });
  });

  it('refuses an option it does not know, naming it', () => {
    expect(() => withPolicies(new TitleProvider({ client: echo() }), { budgett: { maxTokens: 1 } } as never)).toThrow(
      /unknown option "budgett"/,
    );
  });

  it('a history provider cannot be wrapped, even inside another wrapper', () => {
    const inner = withPolicies({ sourceId: 'x' }, {});
    expect(() => withPolicies(new InMemoryHistoryProvider(), {})).toThrow(ConfigurationError);
    expect(unwrapProvider(inner)).toHaveLength(2);
  });
});

describe.each(ways)('SemanticRecallProvider %s', (_way, wrap) => {
  function setup(extra: { store?: InMemorySessionStore } = {}) {
    const client = echo();
    const index = new InMemoryVectorIndex();
    const recall = new SemanticRecallProvider({ embeddings, index });
    const agent = createAgent({
      client,
      contextProviders: [new InMemoryHistoryProvider({ maxMessages: 2 }), wrap(recall)],
      ...(extra.store ? { sessionStore: extra.store } : {}),
    });
    return { client, index, agent };
  }

  it('rewind: the rewound fact leaves the index and is never recalled in the next conversation', async () => {
    const { client, index, agent } = setup();
    const session = agent.createSession({ userId: 'ann' });
    await agent.run('I am planning a trip to Lisbon in March.', { session });
    await agent.run('My locker code at the gym is 4471, please remember it.', { session });
    const history = await agent.getHistory(session);
    await agent.rewindSession(session, history[2]!.id);
    expect(index.size).toBe(2);
    const next = agent.createSession({ userId: 'ann' });
    await agent.run('What was my locker code at the gym?', { session: next });
    expect(recalledText(client.calls.at(-1)!.messages)).not.toContain('4471');
  });

  it('fork: the fork recalls the history it copied', async () => {
    const { client, agent } = setup();
    const session = agent.createSession();
    for (const text of ['My locker code at the gym is 4471.', 'I fly to Lisbon in March.', 'The plumber comes on Thursday.'])
      await agent.run(text, { session });
    const fork = await agent.forkSession(session);
    await agent.run('What was my locker code at the gym?', { session: fork });
    expect(recalledText(client.calls.at(-1)!.messages)).toContain('4471');
  });

  it('regenerate: the replaced answer leaves the index, the new one is indexed once', async () => {
    let n = 0;
    const client = new ScriptedChatClient({ replies: () => ({ text: `answer ${++n}` }) });
    const index = new InMemoryVectorIndex();
    const agent = createAgent({
      client,
      contextProviders: [new InMemoryHistoryProvider(), wrap(new SemanticRecallProvider({ embeddings, index }))],
    });
    const session = agent.createSession();
    await agent.run('Name a boat.', { session });
    await agent.regenerate(session);
    const texts = (await index.getRange({ sessionId: session.sessionId, fromSequence: 0, toSequence: 1e6 })).map((r) => r.text);
    expect(texts).toEqual(['Name a boat.', 'answer 2']);
  });

  it('deleteSession, exportUserData and deleteUserData reach the index', async () => {
    const store = new InMemorySessionStore();
    const { index, agent } = setup({ store });
    await agent.run('My locker code at the gym is 4471.', { sessionId: 's1', userId: 'ann' });
    await agent.run('I fly to Lisbon in March.', { sessionId: 's2', userId: 'ann' });
    expect(index.size).toBe(4);
    const exported = await agent.exportUserData('ann');
    expect(JSON.stringify(exported.providers.recall)).toContain('4471');
    await agent.deleteSession('s1');
    expect(index.size).toBe(2);
    await agent.deleteUserData('ann');
    expect(index.size).toBe(0);
  });

  it('compaction with archive: true finds the archive through the wrapper: the summary is marked archived and the detail stays recallable', async () => {
    const summarizer = new ScriptedChatClient({ replies: () => ({ text: 'The user shared some errands.' }) });
    const client = echo();
    const index = new InMemoryVectorIndex();
    const agent = createAgent({
      client,
      contextProviders: [
        new CompactionProvider({ strategy: summarization({ client: summarizer, keepRecentGroups: 1, archive: true }) }),
        wrap(new SemanticRecallProvider({ embeddings, index, indexMessages: false })),
      ],
    });
    const session = agent.createSession();
    for (const text of ['My locker code at the gym is 4471.', 'I fly to Lisbon in March.', 'The plumber comes on Thursday.'])
      await agent.run(text, { session });
    await agent.run('What was my locker code at the gym?', { session });
    const sent = client.calls.at(-1)!.messages;
    const summary = sent.find(isSummary)!;
    expect(summaryInfo(summary)?.archived).toBe(true);
    expect(recalledText(sent)).toContain('4471');
    expect(index.size).toBeGreaterThan(0);
  });
});

describe('a feature that cannot find what it needs refuses', () => {
  it('compaction with archive: true and no recall provider fails the run with a ConfigurationError, and replaces nothing', async () => {
    const summarizer = new ScriptedChatClient({ replies: () => ({ text: 'summary' }) });
    const history = new InMemoryHistoryProvider();
    const agent = createAgent({
      client: echo(),
      contextProviders: [
        history,
        new CompactionProvider({ strategy: summarization({ client: summarizer, keepRecentGroups: 0, archive: true }) }),
      ],
    });
    const session = agent.createSession();
    await expect(agent.run('My locker code at the gym is 4471.', { session })).rejects.toThrow(/no SemanticRecallProvider to archive into/);
    expect(summarizer.calls).toHaveLength(0);
  });
});

describe('the recall index follows what the history stored', () => {
  /** A history whose saves fail while `failing` is set. */
  class FlakyHistory extends InMemoryHistoryProvider {
    failing = false;
    override async saveMessages(...args: Parameters<InMemoryHistoryProvider['saveMessages']>) {
      if (this.failing) throw new Error('the history backend went away');
      return super.saveMessages(...args);
    }
  }

  it('a turn whose store failed is never indexed (recall listed after the history, so its afterRun runs first)', async () => {
    const index = new InMemoryVectorIndex();
    const history = new FlakyHistory();
    const agent = createAgent({ client: echo(), contextProviders: [history, new SemanticRecallProvider({ embeddings, index })] });
    const session = agent.createSession();
    await agent.run('I fly to Lisbon in March.', { session });
    history.failing = true;
    await expect(agent.run('My locker code at the gym is 4471.', { session })).rejects.toThrow();
    const texts = (await index.getRange({ sessionId: session.sessionId, fromSequence: 0, toSequence: 1e6 })).map((r) => r.text);
    expect(texts).toEqual(['I fly to Lisbon in March.', 'noted']);
  });

  it('a hosted turn whose session save failed is never indexed', async () => {
    const index = new InMemoryVectorIndex();
    const store = new InMemorySessionStore();
    const agent = createAgent({
      client: echo(),
      sessionStore: store,
      contextProviders: [new SemanticRecallProvider({ embeddings, index })],
    });
    await agent.run('I fly to Lisbon in March.', { sessionId: 's', userId: 'ann' });
    const set = store.set.bind(store);
    store.set = async () => {
      throw new Error('the session store went away');
    };
    await expect(agent.run('My locker code at the gym is 4471.', { sessionId: 's', userId: 'ann' })).rejects.toThrow();
    store.set = set;
    const texts = (await index.getRange({ sessionId: 's', userId: 'ann', fromSequence: 0, toSequence: 1e6 })).map((r) => r.text);
    expect(texts).toEqual(['I fly to Lisbon in March.', 'noted']);
  });

  it('a run aborted while the history stores its turn indexes nothing', async () => {
    const index = new InMemoryVectorIndex();
    const controller = new AbortController();
    class SlowHistory extends InMemoryHistoryProvider {
      override async saveMessages(...args: Parameters<InMemoryHistoryProvider['saveMessages']>) {
        controller.abort(new Error('the user left'));
        await new Promise((resolve) => setTimeout(resolve, 20));
        return super.saveMessages(...args);
      }
    }
    const agent = createAgent({ client: echo(), contextProviders: [new SlowHistory(), new SemanticRecallProvider({ embeddings, index })] });
    await expect(
      agent.run('My locker code at the gym is 4471.', { session: agent.createSession(), signal: controller.signal }),
    ).rejects.toThrow();
    expect(index.size).toBe(0);
  });

  it('a retried turn (same input message) is indexed once, with the answer the history kept', async () => {
    let n = 0;
    const client = new ScriptedChatClient({ replies: () => ({ text: `answer ${++n}` }) });
    const index = new InMemoryVectorIndex();
    const agent = createAgent({
      client,
      contextProviders: [new InMemoryHistoryProvider(), new SemanticRecallProvider({ embeddings, index })],
    });
    const session = agent.createSession();
    const input = Message.user('Name a boat.');
    await agent.run(input, { session });
    await agent.run(input, { session });
    const texts = (await index.getRange({ sessionId: session.sessionId, fromSequence: 0, toSequence: 1e6 })).map((r) => r.text);
    expect(texts).toEqual(['Name a boat.', 'answer 2']);
    expect((await agent.getHistory(session)).map((m) => Message.text(m))).toEqual(['Name a boat.', 'answer 2']);
  });

  it('an index that fails once the turn is stored is a diagnostic; the run succeeds with its turn stored', async () => {
    const index = new InMemoryVectorIndex();
    index.upsert = async () => {
      throw new Error('the index went away');
    };
    const events: AgentEvent[] = [];
    const agent = createAgent({
      client: echo(),
      onEvent: (e) => events.push(e),
      contextProviders: [new InMemoryHistoryProvider(), new SemanticRecallProvider({ embeddings, index })],
    });
    const session = agent.createSession();
    expect((await agent.run('hello', { session })).text).toBe('noted');
    expect(await agent.getHistory(session)).toHaveLength(2);
    expect(events.some((e) => e.type === 'provider-diagnostic' && e.code === 'turn-stored-failed' && e.sourceId === 'recall')).toBe(true);
  });
});

describe('every built-in refuses an option it does not know, naming it', () => {
  const client = echo();
  const store = new InMemoryWorkingMemoryStore();
  const retriever = new InMemoryRetriever();
  const cases: [string, () => unknown][] = [
    ['SemanticRecallProvider', () => new SemanticRecallProvider({ embeddings, topk: 3 } as never)],
    ['WorkingMemoryProvider', () => new WorkingMemoryProvider({ template: '#', store, topk: 3 } as never)],
    ['WhiteboardProvider', () => new WhiteboardProvider({ client, topk: 3 } as never)],
    ['TextSearchProvider', () => new TextSearchProvider({ retriever, topk: 3 } as never)],
    ['ContextualToolsProvider', () => new ContextualToolsProvider({ embeddings, tools: [], topk: 3 } as never)],
    ['CompactionProvider', () => new CompactionProvider({ strategy: toolResultCollapse(), topk: 3 } as never)],
    ['InMemoryHistoryProvider', () => new InMemoryHistoryProvider({ maxMessage: 3 } as never)],
    ['InMemoryRetriever', () => new InMemoryRetriever({ topk: 3 } as never)],
    ['InMemoryVectorIndex', () => new InMemoryVectorIndex({ topk: 3 } as never)],
    ['createHashEmbedding', () => createHashEmbedding({ topk: 3 } as never)],
    ['toolResultCollapse', () => toolResultCollapse({ topk: 3 } as never)],
    ['summarization', () => summarization({ client, topk: 3 } as never)],
    ['createAgent', () => createAgent({ client, topk: 3 } as never)],
    ['TitleProvider', () => new TitleProvider({ client, topk: 3 } as never)],
    ['FileSessionStore', () => new FileSessionStore({ directory: '.', topk: 3 } as never)],
  ];
  it.each(cases)('%s', (_name, make) => {
    expect(make).toThrow(ConfigurationError);
    expect(make).toThrow(/unknown option "(topk|maxMessage)"/);
  });

  it('a misspelling of a known option gets a did-you-mean', () => {
    expect(() => new SemanticRecallProvider({ embeddings, topk: 3 } as never)).toThrow(/did you mean "topK"/);
  });
});

describe('wrapProvider', () => {
  it('an override replaces a hook, an override of undefined removes one, and a cycle of wrappers is bounded', async () => {
    const calls: string[] = [];
    const inner: ContextProvider = {
      sourceId: 'p',
      beforeRun: () => void calls.push('inner before'),
      afterRun: () => void calls.push('inner after'),
    };
    const wrapped = wrapProvider(inner, { beforeRun: () => void calls.push('outer before'), afterRun: undefined });
    await wrapped.beforeRun!({} as never);
    expect(calls).toEqual(['outer before']);
    expect(wrapped.afterRun).toBeUndefined();
    expect(findProvider([wrapped], (p): p is ContextProvider => p === inner)).toBe(inner);
    const cyclic = wrapProvider(inner);
    (cyclic as unknown as Record<symbol, unknown>)[Symbol.for('ctx.wrapped-provider')] = cyclic;
    expect(unwrapProvider(cyclic).length).toBeLessThanOrEqual(64);
  });
});

describe('a retry next to a compaction summary', () => {
  it('regenerating the first turn after a summary keeps the summary, and the index keeps what it archived', async () => {
    let n = 0;
    const summarizer = new ScriptedChatClient({ replies: () => ({ text: 'The user shared some errands.' }) });
    const client = new ScriptedChatClient({ replies: () => ({ text: `reply ${++n}` }) });
    const index = new InMemoryVectorIndex();
    const history = new InMemoryHistoryProvider();
    const agent = createAgent({
      client,
      contextProviders: [
        new CompactionProvider({
          strategy: summarization({ client: summarizer, keepRecentGroups: 0, archive: true }),
          when: 'after-store',
        }),
        history,
        withPolicies(new SemanticRecallProvider({ embeddings, index }), { budget: { maxTokens: 10_000 } }),
      ],
    });
    const session = agent.createSession();
    for (const text of ['My locker code at the gym is 4471.', 'I fly to Lisbon in March.', 'The plumber comes on Thursday.'])
      await agent.run(text, { session });
    const before = await agent.getHistory(session);
    expect(isSummary(before[0]!)).toBe(true);
    expect(before.slice(1).map((m) => Message.text(m))).toEqual(['The plumber comes on Thursday.', 'reply 3']);
    await agent.regenerate(session);
    const after = await agent.getHistory(session);
    expect(after.filter(isSummary)).toHaveLength(1);
    expect(after.map((m) => Message.text(m)).slice(-2)).toEqual(['The plumber comes on Thursday.', `reply ${n}`]);
    expect(client.calls.at(-1)!.messages.some(isSummary)).toBe(true);
    const archived = (await index.getRange({ sessionId: session.sessionId, fromSequence: 0, toSequence: 1e6 })).map((r) => r.text);
    expect(archived).toContain('My locker code at the gym is 4471.');
  });
});

describe('one turn runs once, indexing included', () => {
  it('a double submit that arrives while the first request is still indexing waits for it: one model call, one reply, no orphan', async () => {
    let n = 0;
    const client = new ScriptedChatClient({ replies: () => ({ text: `reply ${n++}` }) });
    const index = new InMemoryVectorIndex();
    const upsert = index.upsert.bind(index);
    let indexing!: () => void;
    const indexingStarted = new Promise<void>((resolve) => {
      indexing = resolve;
    });
    // A slow index: the second request arrives while the first's upsert is in flight.
    index.upsert = async (...args) => {
      indexing();
      await new Promise((resolve) => setTimeout(resolve, 200));
      return upsert(...args);
    };
    const agent = createAgent({
      client,
      sessionStore: new InMemorySessionStore(),
      contextProviders: [new SemanticRecallProvider({ embeddings, index })],
    });
    const input = Message.user('double submitted');
    const first = agent.run(input, { sessionId: 's', userId: 'ann' });
    await indexingStarted; // the first has answered and is indexing now
    const second = agent.run(input, { sessionId: 's', userId: 'ann' });
    const [a, b] = await Promise.all([first, second]);
    expect(client.calls).toHaveLength(1);
    expect(b.text).toBe(a.text);
    const session = (await agent.getSession('s'))!;
    const stored = (await agent.getHistory(session)).map((m) => Message.text(m));
    const indexed = (await index.getRange({ sessionId: 's', userId: 'ann', fromSequence: 0, toSequence: 1e6 })).map((r) => r.text);
    expect(indexed).toEqual(stored);
  });
});

describe('per-call options a caller misspells are refused, naming them, before anything runs', () => {
  const agent = () => createAgent({ client: echo(), sessionStore: new InMemorySessionStore() });
  it.each([
    ['agent.run', (a: ReturnType<typeof agent>) => a.run('hi', { sesionId: 's' } as never), /agent\.run: unknown option "sesionId"/],
    ['agent.run (userID)', (a: ReturnType<typeof agent>) => a.run('hi', { sessionId: 's', userID: 'u' } as never), /did you mean "userId"/],
    [
      'agent.getSession',
      (a: ReturnType<typeof agent>) => a.getSession('s', { userID: 'u' } as never),
      /agent\.getSession: unknown option "userID"/,
    ],
    [
      'agent.listSessions',
      (a: ReturnType<typeof agent>) => a.listSessions({ userID: 'u' } as never),
      /agent\.listSessions: unknown option "userID"/,
    ],
    [
      'agent.forkSession',
      (a: ReturnType<typeof agent>) => a.forkSession(a.createSession(), { atMessageID: 'x' } as never),
      /did you mean "atMessageId"/,
    ],
    [
      'agent.regenerate',
      (a: ReturnType<typeof agent>) => a.regenerate(a.createSession(), { messageID: 'x' } as never),
      /did you mean "messageId"/,
    ],
  ])('%s', async (_name, call, message) => {
    const a = agent();
    await expect(Promise.resolve().then((): Promise<unknown> => call(a))).rejects.toThrow(message);
  });

  it('createSession, limits and budgets too', () => {
    expect(() => agent().createSession({ userID: 'u' } as never)).toThrow(/did you mean "userId"/);
    expect(() => createAgent({ client: echo(), limits: { maxMessageByte: 1 } as never })).toThrow(/unknown option "maxMessageByte"/);
    expect(() => withPolicies({ sourceId: 'p' }, { budget: { maxTokens: 1, tokeniser: {} } as never })).toThrow(
      /unknown option "tokeniser"/,
    );
  });
});

describe.each(ways)('WorkingMemoryProvider %s', (_way, wrap) => {
  it('exportUserData, deleteUserData and deleteSession reach its store', async () => {
    const store = new InMemoryWorkingMemoryStore();
    const sessions = new InMemorySessionStore();
    const agent = createAgent({
      client: echo(),
      sessionStore: sessions,
      contextProviders: [wrap(new WorkingMemoryProvider({ template: '# Notes', store, scope: 'session' }))],
    });
    await agent.run('hello', { sessionId: 's1', userId: 'ann' });
    await agent.run('hello', { sessionId: 's2', userId: 'ann' });
    await store.put({ sessionId: 's1', userId: 'ann' }, '# Notes\nlikes tea', { ifMatch: null });
    await store.put({ sessionId: 's2', userId: 'ann' }, '# Notes\nlikes jazz', { ifMatch: null });
    expect(JSON.stringify((await agent.exportUserData('ann')).providers['working-memory'])).toContain('likes tea');
    await agent.deleteSession('s1');
    expect(await store.get({ sessionId: 's1', userId: 'ann' })).toBeUndefined();
    await agent.deleteUserData('ann');
    expect(await store.get({ sessionId: 's2', userId: 'ann' })).toBeUndefined();
  });
});
