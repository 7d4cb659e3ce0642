import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { SessionStateError } from '../errors.js';
import { isDeepFrozen } from '../messages/frozen.js';
import { Message } from '../messages/message.js';
import { createAgent } from '../run/create-agent.js';
import type { JsonObject } from '../contracts/json.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { InMemoryHistoryProvider } from './in-memory-history-provider.js';

/** Messages that are not plain JSON, with the path `saveMessages` must name (the batch is `$.messages`). */
const NOT_JSON: [string, string, () => Message][] = [
  ['a Map in metadata', '$.messages[1].metadata.m', () => Message.user('x', { metadata: { m: new Map() as never } })],
  ['NaN in metadata', '$.messages[1].metadata.n', () => Message.user('x', { metadata: { n: Number.NaN } })],
  ['a Date in metadata', '$.messages[1].metadata.at', () => Message.user('x', { metadata: { at: new Date(0) as never } })],
  [
    'a function result',
    '$.messages[1].contents[0].result',
    () => Message.tool({ type: 'function-result', callId: 'c', result: (() => 1) as never }),
  ],
  [
    'a bigint result',
    '$.messages[1].contents[0].result.n',
    () => Message.tool({ type: 'function-result', callId: 'c', result: { n: 1n as never } }),
  ],
  ['an unknown role', '$.messages[1].role', () => ({ ...Message.user('x'), role: 'robot' as never })],
];

describe('InMemoryHistoryProvider refuses messages that are not plain JSON', () => {
  it.each(NOT_JSON)('saveMessages of a batch holding %s is a SessionStateError at %s, and stores nothing', async (_, path, bad) => {
    const history = new InMemoryHistoryProvider();
    const state: JsonObject = {};
    const first = Message.user('kept');
    await history.saveMessages('s', [first], { state });
    const error = await history.saveMessages('s', [Message.user('ok'), bad()], { state }).catch((e: unknown) => e);
    expect(SessionStateError.isInstance(error), String(error)).toBe(true);
    expect((error as SessionStateError).path).toBe(path);
    expect(await history.getMessages('s', { state })).toEqual([first]);
  });

  it.each(NOT_JSON)('replaceMessages of a batch holding %s is a SessionStateError at %s, and changes nothing', async (_, path, bad) => {
    const history = new InMemoryHistoryProvider();
    const state: JsonObject = {};
    const first = Message.user('kept');
    await history.saveMessages('s', [first], { state });
    const error = await history.replaceMessages('s', [Message.user('ok'), bad()], { state }).catch((e: unknown) => e);
    expect((error as SessionStateError).path).toBe(path);
    expect(await history.getMessages('s', { state })).toEqual([first]);
  });
});

describe('InMemoryHistoryProvider.popMessages', () => {
  it('refuses to pop a malformed stored message with a SessionStateError naming it, and changes nothing', async () => {
    const history = new InMemoryHistoryProvider();
    const kept = Message.user('kept');
    const state: JsonObject = { messages: [kept, { id: 'm2', role: 'robot', contents: [] }] };
    const error = await history.popMessages('s', { state }).catch((e: unknown) => e);
    expect(SessionStateError.isInstance(error), String(error)).toBe(true);
    expect((error as SessionStateError).path).toBe('$.state.memory.messages[1].role');
    expect(state.messages).toHaveLength(2);
    expect(await history.popMessages('s', { state, count: 5 }).catch(() => 'refused')).toBe('refused');
    expect(await history.getMessages('s', { state, limit: 1 }).catch(() => 'still malformed')).toBe('still malformed');
  });
});

describe('InMemoryHistoryProvider.clearMessages', () => {
  it('drops the stored messages from the slot, so the session loads none and stores afresh; clearing again is harmless', async () => {
    const history = new InMemoryHistoryProvider();
    const state: JsonObject = { other: 'kept' };
    await history.saveMessages('s', [Message.user('a'), Message.assistant('b')], { state });
    await history.clearMessages('s', { state });
    expect(state).toEqual({ other: 'kept' });
    expect(await history.getMessages('s', { state })).toEqual([]);
    await history.clearMessages('s', { state });
    const next = Message.user('c');
    await history.saveMessages('s', [next], { state });
    expect(await history.getMessages('s', { state })).toEqual([next]);
  });
});

describe('InMemoryHistoryProvider keeps its id index true to the stored list', () => {
  const m = (id: string, type: 'input' | 'response') =>
    Message.withSource(type === 'input' ? Message.user(id, { id }) : Message.assistant(id, { id }), type, type);
  const opens = (state: JsonObject, id: string) => ({ state, turn: { inputIds: [id], opens: true } });

  it('after a load replaced restored entries with frozen copies, a retried turn is still found and replaced in place', async () => {
    const history = new InMemoryHistoryProvider();
    const state = JSON.parse(JSON.stringify({ messages: [m('u0', 'input'), m('r0', 'response'), m('u1', 'input'), m('r1', 'response')] }));
    await history.saveMessages('s', [m('u2', 'input'), m('r2', 'response')], opens(state, 'u2')); // indexes the restored entries
    await history.getMessages('s', { state }); // replaces each with its frozen copy
    await history.saveMessages('s', [m('u0', 'input'), m('r0b', 'response')], opens(state, 'u0'));
    expect((await history.getMessages('s', { state })).map((x) => x.id)).toEqual(['u0', 'r0b', 'u1', 'r1', 'u2', 'r2']);
  });

  it('after a pop, the popped id can be saved with new content, and a stored id still cannot', async () => {
    const history = new InMemoryHistoryProvider();
    const state: JsonObject = {};
    await history.saveMessages('s', [m('u0', 'input'), m('r0', 'response')], { state });
    await history.popMessages('s', { state });
    await history.saveMessages('s', [Message.assistant('another', { id: 'r0' })], { state });
    expect((await history.getMessages('s', { state })).map((x) => Message.text(x))).toEqual(['u0', 'another']);
    const error = await history.saveMessages('s', [Message.assistant('third', { id: 'r0' })], { state }).catch((e: unknown) => e);
    expect(SessionStateError.isInstance(error), String(error)).toBe(true);
  });
});

describe('InMemoryHistoryProvider on a restored session', () => {
  it('freezes the parsed messages in place, and the first run sends the views the restore made, attributed as history', async () => {
    const seen: (readonly Message[])[] = [];
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: (_m, _o, i) => `answer ${i}` }),
      contextProviders: [
        new InMemoryHistoryProvider(),
        { sourceId: 'probe', beforeRun: ({ context }) => void seen.push(context.contextMessages.get('memory') ?? []) },
      ],
    });
    const session = agent.createSession();
    await agent.run('q0', { session });
    await agent.run('q1', { session });
    const json = JSON.stringify(agent.serializeSession(session));
    const restored = agent.restoreSession(json);
    const stored = [...(restored.state.memory!.messages as unknown as Message[])];
    expect(stored.every((m) => isDeepFrozen(m))).toBe(true);
    expect(stored.map((m) => Message.source(m)?.sourceType)).toEqual(['input', 'response', 'input', 'response']);
    expect(() => {
      (stored[0]!.contents as unknown as unknown[]).push('x');
    }).toThrow(TypeError);
    await agent.run('q2', { session: restored });
    const after = restored.state.memory!.messages as unknown as Message[];
    expect(after.slice(0, 4).every((m, i) => m === stored[i])).toBe(true);
    const sent = seen.at(-1)!;
    expect(sent.map(Message.text)).toEqual(['q0', 'answer 0', 'q1', 'answer 1']);
    expect(sent.every((m) => Message.source(m)?.sourceType === 'history' && isDeepFrozen(m))).toBe(true);
    expect(sent.every((m, i) => m.contents === stored[i]!.contents)).toBe(true);
    expect(JSON.parse(JSON.stringify(agent.serializeSession(restored))).state.memory.messages.slice(0, 4)).toEqual(
      JSON.parse(json).state.memory.messages,
    );
  });
});

describe('InMemoryHistoryProvider keeps nothing of a session it no longer holds', () => {
  it('retains no earlier session across restores and runs in one job (no task between them, as in a batch script)', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const client = new ScriptedChatClient({ replies: () => 'ok' });
    const agent = createAgent({ client });
    const messages = Array.from({ length: 2_000 }, (_, i) =>
      i % 2 ? Message.assistant(`answer ${i} ${'x'.repeat(200)}`) : Message.user(`question ${i}`),
    );
    const json = JSON.stringify(agent.serializeSession(agent.createSession({ state: { memory: { messages: messages as never } } })));
    const runRestored = async (text: string) => {
      await agent.run(text, { session: agent.restoreSession(json) });
      // The scripted client keeps a copy of every call it answered.
      client.calls.length = 0;
    };
    const heap = () => {
      gc();
      return process.memoryUsage().heapUsed;
    };
    // Restored and run once, without a window: every message is loaded (and attributed) by the run.
    await runRestored('warm');
    const before = heap();
    for (let i = 0; i < 20; i++) await runRestored('again');
    const perSession = json.length;
    // Twenty sessions kept would be well over 20 times the text; what is left must be far below one.
    expect(heap() - before).toBeLessThan(perSession);
  });
});
