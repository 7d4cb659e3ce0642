import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigurationError, InvalidInputError, isAbortError } from '../errors.js';
import { InMemoryHistoryProvider } from '../history/in-memory-history-provider.js';
import { Message } from '../messages/message.js';
import { FileSessionStore } from '../session/file-session-store.js';
import type { ChatResponseUpdate } from '../contracts/chat-client.js';
import type { FunctionResultContent } from '../contracts/message.js';
import type { ContextProvider } from '../contracts/run-view.js';
import { ScriptedChatClient, type ScriptedReply } from '../testing/scripted-chat-client.js';
import { defineTool } from '../tools/define-tool.js';
import type { AgentOptions } from './agent.js';
import { pendingCallIds } from './approvals.js';
import { createAgent } from './create-agent.js';

/** Every call the client received: each function call has a result, right after the message holding it. */
function expectPaired(client: ScriptedChatClient): void {
  for (const { messages } of client.calls) {
    for (let i = 0; i < messages.length; i++) {
      const calls = Message.functionCalls(messages[i]!).map((c) => c.callId);
      if (calls.length === 0) continue;
      const answered: string[] = [];
      for (let j = i + 1; j < messages.length && messages[j]!.role === 'tool'; j++) {
        for (const c of messages[j]!.contents) if (c.type === 'function-result') answered.push(c.callId);
      }
      expect(answered.sort()).toEqual([...calls].sort());
    }
  }
}

const resultsIn = (messages: readonly Message[]) =>
  messages.flatMap((m) => m.contents.filter((c): c is FunctionResultContent => c.type === 'function-result'));

/** A transfer that needs approval above 100, a balance lookup that never does; both record what ran. */
function bank() {
  const ran: string[] = [];
  const transfer = defineTool({
    name: 'transfer',
    parameters: { type: 'object', properties: { amount: { type: 'number' } } },
    needsApproval: ({ amount }: { amount: number }) => amount > 100,
    execute: ({ amount }: { amount: number }) => {
      ran.push(`transfer ${amount}`);
      return { sent: amount };
    },
  });
  const balance = defineTool({
    name: 'balance',
    parameters: { type: 'object' },
    execute: () => {
      ran.push('balance');
      return { balance: 500 };
    },
  });
  return { ran, tools: [transfer, balance] };
}

const asksBoth: ScriptedReply = {
  toolCalls: [
    { name: 'transfer', arguments: { amount: 300 }, callId: 'c_big' },
    { name: 'balance', arguments: {}, callId: 'c_bal' },
  ],
};

function setup(replies: Array<string | ScriptedReply>, extra: Partial<AgentOptions> = {}) {
  const { ran, tools } = bank();
  const client = new ScriptedChatClient({ replies });
  const agent = createAgent({ client, tools, ...extra });
  return { ran, client, agent };
}

describe('tool approvals', () => {
  it('ends the run with the call that needs approval, after running the other calls of that response', async () => {
    const { ran, client, agent } = setup([asksBoth]);
    const session = agent.createSession();
    const res = await agent.run('pay 300 and show my balance', { session });
    expect(ran).toEqual(['balance']);
    expect(res.finishReason).toBe('tool-calls');
    expect(res.pendingApprovals).toEqual([{ callId: 'c_big', toolName: 'transfer', arguments: '{"amount":300}' }]);
    expect(res.messages.map((m) => m.role)).toEqual(['assistant', 'tool']);
    expect(resultsIn(res.messages).map((r) => r.callId)).toEqual(['c_bal']);
    expect(client.calls).toHaveLength(1);
    expect(session.pending?.approvals.map((a) => a.callId)).toEqual(['c_big']);
    expect(pendingCallIds(session)).toEqual(new Set(['c_big']));
    // The history keeps the turn: the input, the calls, the result of the call that ran.
    const stored = session.state.memory!.messages as Message[];
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
  });

  it('resumes in a fresh agent from session JSON: the approved call runs and the model sees every result', async () => {
    const first = setup([asksBoth]);
    const session = first.agent.createSession();
    await first.agent.run('pay 300 and show my balance', { session });
    const text = JSON.stringify(session.toJSON());

    // Another process: a new agent and client, the session restored from its JSON text.
    const second = setup(['Sent 300; your balance was 500.']);
    const restored = second.agent.restoreSession(JSON.parse(text));
    expect(restored.pending?.approvals).toEqual([{ callId: 'c_big', toolName: 'transfer', arguments: '{"amount":300}' }]);
    const res = await second.agent.run([], { session: restored, approvals: [{ callId: 'c_big', approved: true }] });
    expect(second.ran).toEqual(['transfer 300']);
    expect(res.text).toBe('Sent 300; your balance was 500.');
    expect(res.pendingApprovals).toBeUndefined();
    expect(restored.pending).toBeUndefined();
    expect(restored.toJSON()).not.toHaveProperty('pending');
    const sent = second.client.calls[0]!.messages;
    expect(sent.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool']);
    expect(resultsIn(sent).map((r) => [r.callId, r.result])).toEqual([
      ['c_bal', { balance: 500 }],
      ['c_big', { sent: 300 }],
    ]);
    expectPaired(second.client);
    const stored = restored.state.memory!.messages as Message[];
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant']);
  });

  it('answers a denied call with an error result carrying the reason, and the loop goes on', async () => {
    const { ran, client, agent } = setup([asksBoth, 'Understood, no transfer.']);
    const session = agent.createSession();
    await agent.run('pay 300', { session });
    const res = await agent.run([], { session, approvals: [{ callId: 'c_big', approved: false, reason: 'too much this month' }] });
    expect(ran).toEqual(['balance']);
    expect(res.text).toBe('Understood, no transfer.');
    const denied = resultsIn(client.calls[1]!.messages).find((r) => r.callId === 'c_big')!;
    expect(denied.isError).toBe(true);
    expect(JSON.stringify(denied.result)).toContain('too much this month');
    expectPaired(client);
  });

  it('asks a needsApproval function with the checked arguments: a call under the limit runs without asking', async () => {
    const { ran, agent } = setup([{ toolCalls: [{ name: 'transfer', arguments: { amount: 20 }, callId: 'c_small' }] }, 'Sent 20.']);
    const res = await agent.run('pay 20', { session: agent.createSession() });
    expect(ran).toEqual(['transfer 20']);
    expect(res.pendingApprovals).toBeUndefined();
    expect(res.text).toBe('Sent 20.');
  });

  it('answers a call with an error result when its needsApproval check throws, and does not run the tool', async () => {
    let ran = false;
    const risky = defineTool({
      name: 'risky',
      parameters: { type: 'object' },
      needsApproval: () => {
        throw new Error('policy service down');
      },
      execute: () => {
        ran = true;
      },
    });
    const client = new ScriptedChatClient({ replies: [{ toolCalls: [{ name: 'risky', callId: 'c1' }] }, 'ok'] });
    const res = await createAgent({ client, tools: [risky] }).run('go');
    expect(ran).toBe(false);
    const [result] = resultsIn(res.messages);
    expect(result!.isError).toBe(true);
    expect(JSON.stringify(result!.result)).toContain('policy service down');
  });

  it('refuses hostile approvals before any model call: unknown id, twice, a call that needed none, malformed, no session', async () => {
    const { ran, client, agent } = setup([asksBoth, 'done']);
    const session = agent.createSession();
    await agent.run('pay 300', { session });
    const attempts: unknown[] = [
      [{ callId: 'c_nope', approved: true }],
      [
        { callId: 'c_big', approved: true },
        { callId: 'c_big', approved: false },
      ],
      [{ callId: 'c_bal', approved: true }],
      [{ callId: 'c_big', approved: 'yes' }],
      [{ callId: 'c_big', approved: true, reason: 7 }],
      [null],
      'c_big',
    ];
    for (const approvals of attempts) {
      await expect(agent.run([], { session, approvals: approvals as never })).rejects.toThrow(InvalidInputError);
    }
    await expect(agent.run([], { approvals: [{ callId: 'c_big', approved: true }] })).rejects.toThrow(/pass that session/);
    expect(client.calls).toHaveLength(1);
    expect(ran).toEqual(['balance']);
    expect(session.pending?.approvals).toHaveLength(1);

    await agent.run([], { session, approvals: [{ callId: 'c_big', approved: true }] });
    // Already answered: refused, and nothing runs twice.
    await expect(agent.run([], { session, approvals: [{ callId: 'c_big', approved: true }] })).rejects.toThrow(/already answered/);
    // The session id is quoted once.
    await expect(agent.run([], { session, approvals: [{ callId: 'c_big', approved: true }] })).rejects.toThrow(
      `does not wait for approval in session ${JSON.stringify(session.sessionId)} (unknown`,
    );
    expect(ran).toEqual(['balance', 'transfer 300']);
    expect(client.calls).toHaveLength(2);
  });

  it('runs what a partial answer approves and keeps the rest waiting without calling the model', async () => {
    const twoBig: ScriptedReply = {
      toolCalls: [
        { name: 'transfer', arguments: { amount: 200 }, callId: 'c_a' },
        { name: 'transfer', arguments: { amount: 300 }, callId: 'c_b' },
        { name: 'balance', callId: 'c_bal' },
      ],
    };
    const { ran, client, agent } = setup([twoBig, 'Sent 200, not 300.']);
    const session = agent.createSession();
    await agent.run('pay both', { session });
    const partial = await agent.run([], { session, approvals: [{ callId: 'c_a', approved: true }] });
    expect(ran).toEqual(['balance', 'transfer 200']);
    expect(client.calls).toHaveLength(1);
    expect(partial.finishReason).toBe('tool-calls');
    expect(partial.pendingApprovals?.map((a) => a.callId)).toEqual(['c_b']);
    expect(resultsIn(partial.messages).map((r) => r.callId)).toEqual(['c_a']);
    // New input while a call still waits is refused; the caller answers first.
    await expect(agent.run('something else', { session })).rejects.toThrow(InvalidInputError);
    await expect(agent.run('something else', { session })).rejects.toThrow(
      `Session ${JSON.stringify(session.sessionId)} has 1 tool call(s) waiting for approval ("c_b")`,
    );
    // Survives the session JSON between the two answers.
    const again = agent.restoreSession(JSON.stringify(session));
    const res = await agent.run([], { session: again, approvals: [{ callId: 'c_b', approved: false }] });
    expect(res.text).toBe('Sent 200, not 300.');
    expect(resultsIn(client.calls[1]!.messages).map((r) => r.callId)).toEqual(['c_bal', 'c_a', 'c_b']);
    expectPaired(client);
    expect(again.pending).toBeUndefined();
  });

  it('takes new input together with the last answers: the results come first, in this run and in later ones', async () => {
    const { client, agent } = setup([asksBoth, 'Sent; and hello.', 'Still here.']);
    const session = agent.createSession();
    await agent.run('pay 300', { session });
    await agent.run('also, hello', { session, approvals: [{ callId: 'c_big', approved: true }] });
    await agent.run('bye', { session });
    const texts = (i: number) => client.calls[i]!.messages.map((m) => (m.role === 'tool' ? 'tool' : `${m.role}:${Message.text(m)}`));
    expect(texts(1)).toEqual(['user:pay 300', 'assistant:', 'tool', 'tool', 'user:also, hello']);
    expect(texts(2)).toEqual(['user:pay 300', 'assistant:', 'tool', 'tool', 'user:also, hello', 'assistant:Sent; and hello.', 'user:bye']);
    expectPaired(client);
  });

  it('leaves the calls waiting when the resuming run is aborted, even by a tool that ignores the signal', async () => {
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const hang = defineTool({
      name: 'deploy',
      parameters: { type: 'object' },
      needsApproval: true,
      execute: () => {
        started();
        return new Promise(() => {}); // never settles, ignores the signal
      },
    });
    const client = new ScriptedChatClient({ replies: [{ toolCalls: [{ name: 'deploy', callId: 'c_dep' }] }, 'Deployed.'] });
    const agent = createAgent({ client, tools: [hang] });
    const session = agent.createSession();
    await agent.run('deploy', { session });
    const before = JSON.stringify(session);

    const already = AbortSignal.abort();
    await expect(agent.run([], { session, approvals: [{ callId: 'c_dep', approved: true }], signal: already })).rejects.toSatisfy((e) =>
      isAbortError(e, already),
    );
    const controller = new AbortController();
    const run = agent.run([], { session, approvals: [{ callId: 'c_dep', approved: true }], signal: controller.signal });
    await running;
    controller.abort();
    await expect(run).rejects.toSatisfy((e) => isAbortError(e, controller.signal));
    expect(JSON.stringify(session)).toBe(before);
    expect(client.calls).toHaveLength(1);

    // The caller can answer again, this time denying.
    const res = await agent.run([], { session, approvals: [{ callId: 'c_dep', approved: false, reason: 'not on Friday' }] });
    expect(res.text).toBe('Deployed.');
    expect(session.pending).toBeUndefined();
  });

  it('surfaces the request in a streaming run and resumes in one', async () => {
    const { ran, client, agent } = setup([asksBoth, 'Sent.']);
    const session = agent.createSession();
    const stream = agent.runStream('pay 300', { session });
    const updates: ChatResponseUpdate[] = [];
    for await (const u of stream) updates.push(u);
    const res = await stream.response;
    expect(res.pendingApprovals?.map((a) => a.callId)).toEqual(['c_big']);
    expect(updates.some((u) => u.role === 'tool' && u.contents.some((c) => c.type === 'function-result' && c.callId === 'c_bal'))).toBe(
      true,
    );
    const resumed = agent.runStream([], { session, approvals: [{ callId: 'c_big', approved: true }] });
    const resumedUpdates: ChatResponseUpdate[] = [];
    for await (const u of resumed) resumedUpdates.push(u);
    expect((await resumed.response).text).toBe('Sent.');
    expect(resumedUpdates[0]).toMatchObject({ role: 'tool', contents: [{ type: 'function-result', callId: 'c_big' }] });
    expect(ran).toEqual(['balance', 'transfer 300']);
    expect(client.calls[1]!.streaming).toBe(true);
    expectPaired(client);
  });

  it('works with an explicit history provider and through a FileSessionStore read by another agent', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ctx-approvals-'));
    try {
      const history = (): ContextProvider => new InMemoryHistoryProvider({ sourceId: 'chat' });
      const first = setup([asksBoth], { contextProviders: [history()], sessionStore: new FileSessionStore({ directory: dir }) });
      const session = first.agent.createSession({ sessionId: 'user:1' });
      await first.agent.run('pay 300', { session });
      await first.agent.saveSession(session);

      const second = setup(['Sent.'], { contextProviders: [history()], sessionStore: new FileSessionStore({ directory: dir }) });
      const loaded = (await second.agent.getSession('user:1'))!;
      expect(loaded.pending?.approvals.map((a) => a.callId)).toEqual(['c_big']);
      await second.agent.run([], { session: loaded, approvals: [{ callId: 'c_big', approved: true }] });
      await second.agent.saveSession(loaded);
      expect(second.ran).toEqual(['transfer 300']);
      expect(second.client.calls[0]!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool']);
      expectPaired(second.client);
      expect(loaded.state.memory).toBeUndefined();
      expect((loaded.state.chat!.messages as Message[]).map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant']);
      expect((await second.agent.getSession('user:1'))?.pending).toBeUndefined();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('sends the held results with the conversation id when the service keeps the conversation', async () => {
    const { ran, tools } = bank();
    const client = new ScriptedChatClient({
      storesByDefault: true,
      replies: [
        { ...asksBoth, conversationId: 'conv_1' },
        { text: 'Sent.', conversationId: 'conv_1' },
      ],
    });
    const agent = createAgent({ client, tools });
    const session = agent.createSession();
    await agent.run('pay 300', { session });
    expect(session.serviceSessionId).toBe('conv_1');
    expect(session.state.memory).toBeUndefined();
    const again = agent.restoreSession(JSON.stringify(session));
    const res = await agent.run([], { session: again, approvals: [{ callId: 'c_big', approved: true }] });
    expect(res.text).toBe('Sent.');
    expect(ran).toEqual(['balance', 'transfer 300']);
    const { messages, options } = client.calls[1]!;
    expect(options.conversationId).toBe('conv_1');
    expect(resultsIn(messages).map((r) => r.callId)).toEqual(['c_bal', 'c_big']);
    expect(messages.every((m) => m.role === 'tool')).toBe(true);
  });

  it("with persistence 'model-call', stores each message once and does not run an approved call twice on a retried resume", async () => {
    let fail = true;
    const { ran, tools } = bank();
    const client = new ScriptedChatClient({
      replies: (_messages, _options, index) => {
        if (index === 0) return asksBoth;
        if (index === 1) return { toolCalls: [{ name: 'balance', callId: 'c_bal2' }] };
        if (fail) {
          fail = false;
          return { error: new Error('model overloaded') };
        }
        return 'Sent; balance checked twice.';
      },
    });
    const agent = createAgent({ client, tools, persistence: 'model-call' });
    const session = agent.createSession();
    await agent.run('pay 300', { session });
    await expect(agent.run([], { session, approvals: [{ callId: 'c_big', approved: true }] })).rejects.toThrow('model overloaded');
    expect(session.pending?.approvals.map((a) => a.callId)).toEqual(['c_big']);
    const res = await agent.run([], { session, approvals: [{ callId: 'c_big', approved: true }] });
    expect(res.text).toBe('Sent; balance checked twice.');
    expect(ran.filter((r) => r === 'transfer 300')).toHaveLength(1);
    const stored = session.state.memory!.messages as Message[];
    const ids = stored.map((m) => m.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(resultsIn(stored).filter((r) => r.callId === 'c_big')).toHaveLength(1);
    expectPaired(client);
  });

  it("with persistence 'model-call', stores the approved results before the model call that follows: that call failing runs nothing twice", async () => {
    const { ran, tools } = bank();
    const client = new ScriptedChatClient({ replies: [asksBoth, { error: new Error('rate limited') }, 'Sent 300.'] });
    const agent = createAgent({ client, tools, persistence: 'model-call' });
    const session = agent.createSession();
    await agent.run('pay 300', { session });
    await expect(agent.run([], { session, approvals: [{ callId: 'c_big', approved: true }] })).rejects.toThrow('rate limited');
    // The transfer ran and its result is on record, though the model never saw it.
    const stored = () => session.state.memory!.messages as Message[];
    expect(resultsIn(stored()).map((r) => r.callId)).toEqual(['c_bal', 'c_big']);
    const res = await agent.run([], { session, approvals: [{ callId: 'c_big', approved: true }] });
    expect(res.text).toBe('Sent 300.');
    expect(ran).toEqual(['balance', 'transfer 300']);
    expect(resultsIn(stored()).filter((r) => r.callId === 'c_big')).toHaveLength(1);
    expectPaired(client);
  });
});

describe('defineTool needsApproval', () => {
  it('rejects a needsApproval that is not a boolean or a function, or one without execute', () => {
    expect(() => defineTool({ name: 't', parameters: {}, needsApproval: 'yes' as never, execute: () => 1 })).toThrow(ConfigurationError);
    expect(() => defineTool({ name: 't', parameters: {}, needsApproval: true })).toThrow(/needs `execute`/);
    expect(defineTool({ name: 't', parameters: {}, needsApproval: true, execute: () => 1 }).needsApproval).toBe(true);
  });
});
