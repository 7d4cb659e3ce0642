import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkSessionId } from '../backend/checks.js';
import { ConfigurationError, InvalidInputError } from '../errors.js';
import { HistoryProvider, type HistoryProviderOptions } from '../history/history-provider.js';
import { InMemoryHistoryProvider } from '../history/in-memory-history-provider.js';
import { findRetriedTurn } from '../history/retried-turn.js';
import { Message } from '../messages/message.js';
import type { AgentSession } from '../session/agent-session.js';
import { FileSessionStore } from '../session/file-session-store.js';
import type { GetHistoryArgs, PopHistoryArgs, SaveHistoryArgs } from '../contracts/history.js';
import type { ContextProvider } from '../contracts/run-view.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { defineTool } from '../tools/define-tool.js';
import type { AgentOptions } from './agent.js';
import { createAgent } from './create-agent.js';

/** A history kept by session id outside the session (like Redis or Cosmos), that can only read and append; counts its calls. */
class AppendOnlyHistory extends HistoryProvider {
  readonly stored = new Map<string, Message[]>();
  readonly calls: string[] = [];

  constructor(options: HistoryProviderOptions & { sourceId: string }) {
    super(options);
  }

  async getMessages(sessionId: string, { limit }: GetHistoryArgs): Promise<Message[]> {
    checkSessionId(sessionId);
    this.calls.push('get');
    const all = this.stored.get(sessionId) ?? [];
    return structuredClone(limit === undefined ? all : all.slice(-limit));
  }

  async saveMessages(sessionId: string, messages: readonly Message[], { turn }: SaveHistoryArgs): Promise<void> {
    checkSessionId(sessionId);
    this.calls.push('save');
    const list = this.stored.get(sessionId) ?? [];
    const retried = turn?.opens ? findRetriedTurn(list, turn.inputIds) : undefined;
    if (retried !== undefined) list.splice(retried.start, retried.end - retried.start);
    const ids = new Set(list.map((m) => m.id));
    list.push(...structuredClone(messages.filter((m) => !ids.has(m.id))));
    this.stored.set(sessionId, list);
  }
}

/** `AppendOnlyHistory` that can also replace a session's whole history. */
class ReplacingHistory extends AppendOnlyHistory {
  override async replaceMessages(sessionId: string, messages: readonly Message[]): Promise<void> {
    this.calls.push('replace');
    this.stored.set(sessionId, structuredClone([...messages]));
  }
}

/** `ReplacingHistory` that can also pop and clear. */
class KeyedHistory extends ReplacingHistory {
  override async popMessages(sessionId: string, { count = 1 }: PopHistoryArgs): Promise<Message[]> {
    this.calls.push('pop');
    const list = this.stored.get(sessionId) ?? [];
    return list.splice(Math.max(0, list.length - count));
  }

  override async clearMessages(sessionId: string): Promise<void> {
    this.calls.push('clear');
    this.stored.delete(sessionId);
  }
}

/** `role:text` of each message. */
const texts = (messages: readonly Message[]) => messages.map((m) => `${m.role}:${Message.text(m)}`);

/** Answers `re: <last text>`. */
const echo = () => new ScriptedChatClient({ replies: (messages) => `re: ${Message.text(messages.at(-1)!)}` });

/** Adds `<sourceId> note` as context to every run. */
const injector = (sourceId: string): ContextProvider => ({
  sourceId,
  beforeRun: ({ context }) => context.extendMessages(sourceId, [Message.system(`${sourceId} note`)]),
});

/** Counts runs in its state slot, so a fork's copy of state can be told apart. */
const counter: ContextProvider = {
  sourceId: 'counter',
  beforeRun: ({ state }) => {
    state.runs = ((state.runs as number | undefined) ?? 0) + 1;
  },
};

/** Runs each text as one turn. */
async function converse(agent: ReturnType<typeof createAgent>, session: AgentSession, ...inputs: string[]) {
  for (const input of inputs) await agent.run(input, { session });
}

/** Starts `call` and resolves to what it rejected with; fails when it resolves. */
async function rejection(call: () => Promise<unknown>): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

function agentWith(overrides: Partial<AgentOptions> = {}) {
  const client = echo();
  return { client, agent: createAgent({ client, ...overrides }) };
}

describe('getHistory', () => {
  it('reads the default in-memory history, the newest `limit` with a limit, and refuses a bad limit', async () => {
    const { agent } = agentWith({ contextProviders: [counter] });
    const session = agent.createSession();
    await converse(agent, session, 'one', 'two');
    expect(texts(await agent.getHistory(session))).toEqual(['user:one', 'assistant:re: one', 'user:two', 'assistant:re: two']);
    expect(texts(await agent.getHistory(session, { limit: 1 }))).toEqual(['assistant:re: two']);
    for (const limit of [0, -1, 1.5]) {
      expect(ConfigurationError.isInstance(await rejection(() => agent.getHistory(session, { limit })))).toBe(true);
    }
  });

  it('reads the history provider that loads, not one that only stores', async () => {
    const loader = new KeyedHistory({ sourceId: 'db' });
    const audit = new KeyedHistory({ sourceId: 'audit', loadMessages: false, storeOutputs: false });
    const { agent } = agentWith({ contextProviders: [audit, loader] });
    const session = agent.createSession();
    await converse(agent, session, 'one');
    expect(texts(await agent.getHistory(session))).toEqual(['user:one', 'assistant:re: one']);
    expect(texts(await agent.getHistory(agent.getSessionById(session.sessionId)))).toEqual(['user:one', 'assistant:re: one']);
  });

  it('refuses a session whose conversation the service keeps, unless a history loads it anyway (loadMessages: true)', async () => {
    const client = new ScriptedChatClient({
      replies: [
        { text: 'kept', conversationId: 'conv_1' },
        { text: 'kept', conversationId: 'conv_2' },
      ],
    });
    const plain = createAgent({ client });
    const session = plain.createSession();
    await plain.run('hi', { session });
    expect(session.serviceSessionId).toBe('conv_1');
    const error = await rejection(() => plain.getHistory(session));
    expect(ConfigurationError.isInstance(error) && /service keeps its conversation/.test((error as Error).message)).toBe(true);
    const log = new KeyedHistory({ sourceId: 'log', loadMessages: true });
    const loading = createAgent({ client, contextProviders: [log] });
    const other = loading.createSession();
    await loading.run('hello', { session: other });
    expect(texts(await loading.getHistory(other))).toEqual(['user:hello', 'assistant:kept']);
  });

  it('rejects with the reason of an aborted signal', async () => {
    const { agent } = agentWith();
    const session = agent.createSession();
    const reason = new Error('stop');
    expect(await rejection(() => agent.getHistory(session, { signal: AbortSignal.abort(reason) }))).toBe(reason);
  });
});

describe('forkSession', () => {
  it('copies the history, every state slot (deeply) and the metadata; the fork and its source then diverge', async () => {
    const { agent, client } = agentWith({ contextProviders: [counter] });
    const session = agent.createSession({ userId: 'u1', title: 'Trip', custom: { tags: ['a'] } });
    await converse(agent, session, 'one', 'two');
    session.state.notes = JSON.parse('{"nested":{"list":[1]},"__proto__":{"kept":true}}');
    const fork = await agent.forkSession(session);
    expect(fork.sessionId).not.toBe(session.sessionId);
    expect(JSON.stringify(fork.state.notes)).toBe('{"nested":{"list":[1]},"__proto__":{"kept":true}}');
    ((fork.state.notes!.nested as { list: number[] }).list as number[]).push(2);
    expect(session.state.notes).toEqual(JSON.parse('{"nested":{"list":[1]},"__proto__":{"kept":true}}'));
    expect(fork.metadata).toEqual({
      createdAt: expect.any(String),
      updatedAt: fork.metadata.createdAt,
      title: 'Trip',
      userId: 'u1',
      custom: { tags: ['a'] },
      forkedFrom: { sessionId: session.sessionId },
    });
    expect(Date.parse(fork.metadata.createdAt)).toBeGreaterThanOrEqual(Date.parse(session.metadata.updatedAt));
    (fork.metadata.custom!.tags as string[]).push('changed');
    expect(session.metadata.custom).toEqual({ tags: ['a'] });
    expect(fork.state.counter).toEqual({ runs: 2 });
    expect(texts(await agent.getHistory(fork))).toEqual(texts(await agent.getHistory(session)));
    await agent.run('fork says', { session: fork });
    await agent.run('source says', { session });
    expect(texts(client.calls[2]!.messages).slice(-2)).toEqual(['assistant:re: two', 'user:fork says']);
    expect(texts(client.calls[3]!.messages)).toEqual([
      'user:one',
      'assistant:re: one',
      'user:two',
      'assistant:re: two',
      'user:source says',
    ]);
    expect(fork.state.counter).toEqual({ runs: 3 });
    expect(session.state.counter).toEqual({ runs: 3 });
    expect(await agent.getHistory(session)).toHaveLength(6);
    expect(await agent.getHistory(fork)).toHaveLength(6);
    expect(JSON.parse(JSON.stringify(fork)).metadata.forkedFrom).toEqual({ sessionId: session.sessionId });
  });

  it('at a message: the in-memory history is cut after it, and forkedFrom names it', async () => {
    const { agent, client } = agentWith();
    const session = agent.createSession();
    await converse(agent, session, 'one', 'two', 'three');
    const stored = await agent.getHistory(session);
    const fork = await agent.forkSession(session, { atMessageId: stored[1]!.id, sessionId: 'fork-1' });
    expect(fork.sessionId).toBe('fork-1');
    expect(fork.metadata.forkedFrom).toEqual({ sessionId: session.sessionId, messageId: stored[1]!.id });
    expect(await agent.getHistory(fork)).toEqual(stored.slice(0, 2));
    await agent.run('instead', { session: fork });
    expect(texts(client.calls.at(-1)!.messages)).toEqual(['user:one', 'assistant:re: one', 'user:instead']);
    expect(await agent.getHistory(session)).toEqual(stored);
  });

  it('forks every history provider: the loading one at the message, an audit log that only stores at the same point of the conversation', async () => {
    const db = new KeyedHistory({ sourceId: 'db' });
    const audit = new AppendOnlyHistory({ sourceId: 'audit', loadMessages: false, storeContextMessages: true });
    const { agent, client } = agentWith({ contextProviders: [injector('rag'), db, audit] });
    const session = agent.createSession();
    await converse(agent, session, 'one', 'two');
    expect(texts(audit.stored.get(session.sessionId)!)).toEqual([
      'system:rag note',
      'user:one',
      'assistant:re: one',
      'system:rag note',
      'user:two',
      'assistant:re: two',
    ]);
    const stored = await agent.getHistory(session);
    db.calls.length = 0;
    audit.calls.length = 0;
    const fork = await agent.forkSession(session, { atMessageId: stored[1]!.id });
    expect(texts(db.stored.get(fork.sessionId)!)).toEqual(['user:one', 'assistant:re: one']);
    expect(texts(audit.stored.get(fork.sessionId)!)).toEqual(['system:rag note', 'user:one', 'assistant:re: one']);
    // The loading history is read once to place the cut in the audit log, which is read once to find it; each default fork reads and saves.
    expect(db.calls).toEqual(['get', 'get', 'save']);
    expect(audit.calls).toEqual(['get', 'get', 'save']);
    await agent.run('again', { session: fork });
    expect(texts(client.calls.at(-1)!.messages)).toEqual(['user:one', 'assistant:re: one', 'system:rag note', 'user:again']);
    expect(db.stored.get(session.sessionId)).toHaveLength(4);
    expect(audit.stored.get(session.sessionId)).toHaveLength(6);
  });

  it('copies nothing of an audit log that shares no message with the kept part of the conversation', async () => {
    const audit = new InMemoryHistoryProvider({ sourceId: 'audit', loadMessages: false, storeInputs: false });
    const db = new KeyedHistory({ sourceId: 'db' });
    const { agent } = agentWith({ contextProviders: [db, audit] });
    const session = agent.createSession();
    await converse(agent, session, 'one');
    const [input] = await agent.getHistory(session);
    const fork = await agent.forkSession(session, { atMessageId: input!.id });
    expect(texts(await audit.getMessages(fork.sessionId, { state: fork.state.audit ?? {} }))).toEqual([]);
    expect(texts(await audit.getMessages(session.sessionId, { state: session.state.audit! }))).toEqual(['assistant:re: one']);
  });

  it("refuses, before anything is written: an unknown message (the caller's mistake), the source id, a blank id, an id whose history is taken, a service-kept conversation", async () => {
    const db = new KeyedHistory({ sourceId: 'db' });
    const audit = new KeyedHistory({ sourceId: 'audit', loadMessages: false });
    const { agent } = agentWith({ contextProviders: [db, audit] });
    const session = agent.createSession({ sessionId: 'source' });
    await converse(agent, session, 'one');
    await converse(agent, agent.createSession({ sessionId: 'taken' }), 'other');
    const before = structuredClone([...db.stored, ...audit.stored]);
    const refusals: Array<[string, () => Promise<unknown>, RegExp, typeof ConfigurationError | typeof InvalidInputError]> = [
      ['unknown message', () => agent.forkSession(session, { atMessageId: 'nope' }), /"nope": it is not in the history/, InvalidInputError],
      [
        'unknown message, one history',
        () => createAgent({ client: echo(), contextProviders: [db] }).forkSession(session, { atMessageId: 'nope' }),
        /"nope": it is not in the history/,
        InvalidInputError,
      ],
      [
        'unknown message, the default history',
        () => agentWith().agent.forkSession(session, { atMessageId: 'nope' }),
        /"nope": it is not in the history/,
        InvalidInputError,
      ],
      ['the source id', () => agent.forkSession(session, { sessionId: 'source' }), /session id of its own/, ConfigurationError],
      ['a blank id', () => agent.forkSession(session, { sessionId: ' ' }), /non-whitespace/, ConfigurationError],
      ['a taken id', () => agent.forkSession(session, { sessionId: 'taken' }), /"db", "audit" already hold messages/, ConfigurationError],
    ];
    for (const [what, call, message, type] of refusals) {
      const error = await rejection(call);
      expect(type.isInstance(error), what).toBe(true);
      expect(InvalidInputError.isInstance(error) && ConfigurationError.isInstance(error), what).toBe(false);
      expect((error as Error).message, what).toMatch(message);
    }
    expect([...db.stored, ...audit.stored]).toEqual(before);
    session.serviceSessionId = 'conv_1';
    const error = await rejection(() => agent.forkSession(session));
    expect((error as Error).message).toMatch(/cannot fork .* the service keeps/);
  });

  it("turns a history's own refusal of the fork point (InvalidInputError, or an older backend's ConfigurationError) into the agent's InvalidInputError, and clears nothing", async () => {
    const refusals = [
      ['InvalidInputError (the default forkMessages)', undefined],
      ['ConfigurationError (an older backend)', new ConfigurationError('message nope is not stored')],
    ] as const;
    for (const [what, legacy] of refusals) {
      const db = new KeyedHistory({ sourceId: 'db' });
      if (legacy) {
        db.forkMessages = async () => {
          throw legacy;
        };
      }
      const { agent } = agentWith({ contextProviders: [db] });
      const session = agent.createSession();
      await converse(agent, session, 'one');
      db.calls.length = 0;
      const error = await rejection(() => agent.forkSession(session, { atMessageId: 'nope', sessionId: 'fork' }));
      expect(InvalidInputError.isInstance(error), what).toBe(true);
      expect((error as Error).message, what).toMatch(/"nope": it is not in the history \(provider "db"\); nothing was copied/);
      const cause = (error as Error).cause;
      expect(legacy ? cause === legacy : InvalidInputError.isInstance(cause), what).toBe(true);
      expect(db.calls.includes('clear'), `${what}: the history that refused is not asked to clear`).toBe(false);
      expect(db.stored.has('fork'), what).toBe(false);
    }
  });

  it('removes what it copied when a later history fails, and rethrows', async () => {
    const db = new KeyedHistory({ sourceId: 'db' });
    const broken = new KeyedHistory({ sourceId: 'broken', loadMessages: false });
    broken.forkMessages = async () => {
      throw new Error('disk full');
    };
    const { agent } = agentWith({ contextProviders: [db, broken] });
    const session = agent.createSession();
    await converse(agent, session, 'one');
    const error = await rejection(() => agent.forkSession(session, { sessionId: 'doomed' }));
    expect((error as Error).message).toBe('disk full');
    expect(db.stored.has('doomed')).toBe(false);
    expect(db.calls.at(-1)).toBe('clear');
  });

  it('removes every copy when a ConfigurationError comes after the copies (reading the fork), not only those before the last', async () => {
    const db = new KeyedHistory({ sourceId: 'db' });
    const original = db.getMessages.bind(db);
    db.getMessages = async (sessionId, args) => {
      if (sessionId === 'doomed' && db.stored.has('doomed')) throw new ConfigurationError('db refuses to read doomed');
      return original(sessionId, args);
    };
    const derived: ContextProvider = { sourceId: 'derived', onSessionForked: () => {} };
    const { agent } = agentWith({ contextProviders: [db, derived] });
    const session = agent.createSession();
    await converse(agent, session, 'one');
    const error = await rejection(() => agent.forkSession(session, { sessionId: 'doomed' }));
    expect((error as Error).message).toBe('db refuses to read doomed');
    expect(db.stored.has('doomed')).toBe(false);
  });

  it('stops at an aborted signal: at once when already aborted, and while a history hangs, removing what it copied', async () => {
    const db = new KeyedHistory({ sourceId: 'db' });
    const stuck = new KeyedHistory({ sourceId: 'stuck', loadMessages: false });
    stuck.forkMessages = () => new Promise<number>(() => {});
    const { agent } = agentWith({ contextProviders: [db, stuck] });
    const session = agent.createSession();
    await converse(agent, session, 'one');
    const reason = new Error('stop');
    expect(await rejection(() => agent.forkSession(session, { sessionId: 'early', signal: AbortSignal.abort(reason) }))).toBe(reason);
    expect(db.stored.has('early')).toBe(false);
    const controller = new AbortController();
    setTimeout(() => controller.abort(reason), 20);
    expect(await rejection(() => agent.forkSession(session, { sessionId: 'late', signal: controller.signal }))).toBe(reason);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(db.stored.has('late')).toBe(false);
  });

  it('leaves calls waiting for approval with the source: the fork answers them as interrupted, the source can still approve', async () => {
    let sent = 0;
    const pay = defineTool<{ amount: number }>({
      name: 'pay',
      parameters: { type: 'object', properties: { amount: { type: 'number' } } },
      needsApproval: true,
      execute: () => ++sent,
    });
    const client = new ScriptedChatClient({
      replies: (messages) => {
        const last = messages.at(-1)!;
        if (last.role === 'user' && Message.text(last) === 'pay')
          return { toolCalls: [{ name: 'pay', callId: 'call_pay', arguments: { amount: 5 } }] };
        return `re: ${last.role}`;
      },
    });
    const agent = createAgent({ client, tools: [pay] });
    const session = agent.createSession();
    const first = await agent.run('pay', { session });
    expect(first.pendingApprovals?.map((a) => a.callId)).toEqual(['call_pay']);
    const fork = await agent.forkSession(session);
    expect(fork.pending).toBeUndefined();
    await agent.run('hello', { session: fork });
    const answered = client.calls.at(-1)!.messages.find((m) => m.role === 'tool')!;
    expect(answered.contents[0]).toMatchObject({
      callId: 'call_pay',
      isError: true,
      result: { error: expect.stringContaining('interrupted') },
    });
    expect(sent).toBe(0);
    await agent.run([], { session, approvals: [{ callId: 'call_pay', approved: true }] });
    expect(sent).toBe(1);
  });
});

describe('rewindSession', () => {
  it('removes the message and everything after it from every history, and resolves to what left the loading one', async () => {
    const db = new KeyedHistory({ sourceId: 'db' });
    const audit = new KeyedHistory({ sourceId: 'audit', loadMessages: false, storeContextMessages: true });
    const outputsOnly = new ReplacingHistory({ sourceId: 'outputs', loadMessages: false, storeInputs: false });
    const { agent, client } = agentWith({ contextProviders: [injector('rag'), db, audit, outputsOnly] });
    const session = agent.createSession();
    await converse(agent, session, 'one', 'two', 'three');
    const stored = await agent.getHistory(session);
    for (const p of [db, audit, outputsOnly]) p.calls.length = 0;
    const removed = await agent.rewindSession(session, stored[2]!.id);
    expect(texts(removed)).toEqual(['user:two', 'assistant:re: two', 'user:three', 'assistant:re: three']);
    expect(texts(db.stored.get(session.sessionId)!)).toEqual(['user:one', 'assistant:re: one']);
    expect(texts(audit.stored.get(session.sessionId)!)).toEqual(['system:rag note', 'user:one', 'assistant:re: one']);
    expect(texts(outputsOnly.stored.get(session.sessionId)!)).toEqual(['assistant:re: one']);
    // One read of each history; one pop, or one replace where the provider cannot pop.
    expect([db.calls, audit.calls, outputsOnly.calls]).toEqual([
      ['get', 'pop'],
      ['get', 'pop'],
      ['get', 'replace'],
    ]);
    await agent.run('edited', { session });
    expect(texts(client.calls.at(-1)!.messages)).toEqual(['user:one', 'assistant:re: one', 'system:rag note', 'user:edited']);
  });

  it('rewinds the in-memory history in the session: to the first message empties it', async () => {
    const { agent } = agentWith();
    const session = agent.createSession();
    await converse(agent, session, 'one', 'two');
    const stored = await agent.getHistory(session);
    expect(texts(await agent.rewindSession(session, stored[3]!.id))).toEqual(['assistant:re: two']);
    expect(await agent.getHistory(session)).toEqual(stored.slice(0, 3));
    expect(await agent.rewindSession(session, stored[0]!.id)).toEqual(stored.slice(0, 3));
    expect(await agent.getHistory(session)).toEqual([]);
  });

  it('refuses an unknown message, a history that can neither pop nor replace (naming it), an aborted signal, a service-kept conversation; nothing is removed', async () => {
    const db = new KeyedHistory({ sourceId: 'db' });
    const log = new AppendOnlyHistory({ sourceId: 'append-only', loadMessages: false });
    const { agent } = agentWith({ contextProviders: [db, log] });
    const session = agent.createSession();
    await converse(agent, session, 'one', 'two');
    const stored = await agent.getHistory(session);
    const before = structuredClone([...db.stored, ...log.stored]);
    const unknown = await rejection(() => agent.rewindSession(session, 'nope'));
    expect(InvalidInputError.isInstance(unknown)).toBe(true);
    expect((unknown as Error).message).toMatch(/"nope": it is not in the history/);
    const stuck = await rejection(() => agent.rewindSession(session, stored[2]!.id));
    expect(ConfigurationError.isInstance(stuck) && /"append-only" can neither pop nor replace/.test((stuck as Error).message)).toBe(true);
    const reason = new Error('stop');
    const { agent: plain } = agentWith({ contextProviders: [db] });
    expect(await rejection(() => plain.rewindSession(session, stored[2]!.id, { signal: AbortSignal.abort(reason) }))).toBe(reason);
    expect([...db.stored, ...log.stored]).toEqual(before);
    expect(ConfigurationError.isInstance(await rejection(() => agent.rewindSession(session, '')))).toBe(true);
    expect(ConfigurationError.isInstance(await rejection(() => agent.rewindSession({} as AgentSession, 'x')))).toBe(true);
    session.serviceSessionId = 'conv_1';
    for (const call of [() => agent.rewindSession(session, stored[2]!.id), () => agent.regenerate(session)]) {
      expect((await rejection(call)) as Error).toHaveProperty('message', expect.stringMatching(/the service keeps its conversation/));
    }
    expect([...db.stored, ...log.stored]).toEqual(before);
  });

  it('does not wait past its signal for a history that hangs', async () => {
    const db = new KeyedHistory({ sourceId: 'db' });
    const { agent } = agentWith({ contextProviders: [db] });
    const session = agent.createSession();
    await converse(agent, session, 'one');
    const [first] = await agent.getHistory(session);
    db.popMessages = () => new Promise<Message[]>(() => {});
    const controller = new AbortController();
    const reason = new Error('stop');
    setTimeout(() => controller.abort(reason), 20);
    expect(await rejection(() => agent.rewindSession(session, first!.id, { signal: controller.signal }))).toBe(reason);
  });

  it('clears the calls waiting for approval when it removes them, so new input is taken again', async () => {
    const pay = defineTool({ name: 'pay', parameters: { type: 'object' }, needsApproval: true, execute: () => 'paid' });
    const client = new ScriptedChatClient({
      replies: (messages) =>
        Message.text(messages.at(-1)!) === 'pay'
          ? { toolCalls: [{ name: 'pay', callId: 'call_pay' }] }
          : `re: ${Message.text(messages.at(-1)!)}`,
    });
    const agent = createAgent({ client, tools: [pay] });
    const session = agent.createSession();
    await agent.run('hello', { session });
    await agent.run('pay', { session });
    expect(session.pending?.approvals).toHaveLength(1);
    expect(InvalidInputError.isInstance(await rejection(() => agent.run('other', { session })))).toBe(true);
    const stored = await agent.getHistory(session);
    await agent.rewindSession(session, stored[1]!.id); // keeps the calls: still waiting
    expect(session.pending).toBeUndefined();
    await agent.run('other', { session });
    expect(texts(await agent.getHistory(session))).toEqual(['user:hello', 'user:other', 'assistant:re: other']);
  });

  it('keeps calls waiting for approval when it removes nothing of them', async () => {
    const pay = defineTool({ name: 'pay', parameters: { type: 'object' }, needsApproval: true, execute: () => 'paid' });
    const client = new ScriptedChatClient({ replies: [{ toolCalls: [{ name: 'pay', callId: 'call_pay' }] }] });
    const db = new KeyedHistory({ sourceId: 'db' });
    const agent = createAgent({ client, tools: [pay], contextProviders: [db] });
    const session = agent.createSession();
    await agent.run('pay', { session });
    await db.saveMessages(session.sessionId, [Message.user('typed meanwhile')], { state: {} });
    const [, , extra] = await agent.getHistory(session);
    await agent.rewindSession(session, extra!.id);
    expect(session.pending?.approvals.map((a) => a.callId)).toEqual(['call_pay']);
  });
});

describe('regenerate', () => {
  it('runs the last turn again with the same input message: its new reply replaces the old one in every history', async () => {
    const audit = new KeyedHistory({ sourceId: 'audit', loadMessages: false });
    const client = new ScriptedChatClient({ replies: ['first', 'second', 'second, again'] });
    const agent = createAgent({ client, contextProviders: [audit] });
    const session = agent.createSession();
    await converse(agent, session, 'one', 'two');
    const before = await agent.getHistory(session);
    const response = await agent.regenerate(session);
    expect(response.text).toBe('second, again');
    expect(texts(client.calls[2]!.messages)).toEqual(['user:one', 'assistant:first', 'user:two']);
    expect(client.calls[2]!.messages[2]!.id).toBe(before[2]!.id);
    const after = await agent.getHistory(session);
    expect(texts(after)).toEqual(['user:one', 'assistant:first', 'user:two', 'assistant:second, again']);
    expect(after[2]!.id).toBe(before[2]!.id);
    expect(texts(audit.stored.get(session.sessionId)!)).toEqual(texts(after));
  });

  it('regenerates the turn holding a message, whichever of its messages is named, and drops the turns after it', async () => {
    const db = new KeyedHistory({ sourceId: 'db' });
    let n = 0;
    const client = new ScriptedChatClient({ replies: () => `reply ${++n}` });
    const agent = createAgent({ client, contextProviders: [db] });
    const session = agent.createSession();
    await agent.run([Message.user('part a'), Message.user('part b')], { session });
    await converse(agent, session, 'two');
    expect(await agent.getHistory(session)).toHaveLength(5);
    for (const index of [0, 1, 2]) {
      const named = (await agent.getHistory(session))[index]!; // an input of the first turn, then its reply
      await agent.regenerate(session, { messageId: named.id });
      expect(texts(client.calls.at(-1)!.messages)).toEqual(['user:part a', 'user:part b']);
      expect(texts(await agent.getHistory(session))).toEqual(['user:part a', 'user:part b', `assistant:reply ${n}`]);
    }
  });

  it('keeps the input when the new run fails, so it can be regenerated again', async () => {
    const client = new ScriptedChatClient({ replies: ['first', { error: new Error('model down') }, 'recovered'] });
    const agent = createAgent({ client });
    const session = agent.createSession();
    await converse(agent, session, 'one');
    expect((await rejection(() => agent.regenerate(session))) as Error).toHaveProperty('message', 'model down');
    expect(texts(await agent.getHistory(session))).toEqual(['user:one']);
    expect((await agent.regenerate(session)).text).toBe('recovered');
    expect(texts(await agent.getHistory(session))).toEqual(['user:one', 'assistant:recovered']);
  });

  it('refuses a history without a user message and an unknown message id, removing nothing', async () => {
    const db = new KeyedHistory({ sourceId: 'db' });
    const agent = createAgent({ client: echo(), contextProviders: [db] });
    const session = agent.createSession();
    const empty = await rejection(() => agent.regenerate(session));
    expect(InvalidInputError.isInstance(empty)).toBe(true);
    expect(empty as Error).toHaveProperty('message', expect.stringMatching(/holds no user message/));
    await db.saveMessages(session.sessionId, [Message.assistant('hello first')], { state: {} });
    await converse(agent, session, 'one');
    const stored = await agent.getHistory(session);
    for (const messageId of [stored[0]!.id, 'nope']) {
      expect(InvalidInputError.isInstance(await rejection(() => agent.regenerate(session, { messageId })))).toBe(true);
    }
    expect(await agent.getHistory(session)).toEqual(stored);
  });
});

describe('with a FileSessionStore', () => {
  let directory: string;
  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), 'ctx-history-ops-'));
  });
  afterEach(() => rm(directory, { recursive: true, force: true }));

  it('a fork and a rewind survive saving and loading in another agent', async () => {
    const options = () => ({ client: echo(), sessionStore: new FileSessionStore({ directory }), contextProviders: [counter] });
    const agent = createAgent(options());
    const session = agent.createSession({ sessionId: 's1' });
    await converse(agent, session, 'one', 'two');
    await agent.saveSession(session);
    const stored = await agent.getHistory(session);
    const fork = await agent.forkSession((await agent.getSession('s1'))!, { atMessageId: stored[1]!.id, sessionId: 's1-fork' });
    await agent.saveSession(fork);

    const later = createAgent(options());
    const loaded = (await later.getSession('s1-fork'))!;
    expect(loaded.metadata.forkedFrom).toEqual({ sessionId: 's1', messageId: stored[1]!.id });
    expect(await later.getHistory(loaded)).toEqual(stored.slice(0, 2));
    expect(loaded.state.counter).toEqual({ runs: 2 });
    const source = (await later.getSession('s1'))!;
    expect(await later.rewindSession(source, stored[2]!.id)).toEqual(stored.slice(2));
    await later.saveSession(source);
    expect(await createAgent(options()).getHistory((await later.getSession('s1'))!)).toEqual(stored.slice(0, 2));
  });
});
