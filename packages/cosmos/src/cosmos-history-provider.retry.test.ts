import { createAgent, Message, SessionStateError, type SaveHistoryArgs, type SourceType } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { describe, expect, it } from 'vitest';
import { cosmosClient, env, uniqueId } from '../test/helpers.js';
import { CosmosHistoryProvider } from './cosmos-history-provider.js';

const state = {};
const make = () =>
  new CosmosHistoryProvider({
    client: cosmosClient(env.endpoint),
    databaseId: uniqueId('retry'),
    containerId: uniqueId('c'),
    createIfNotExists: true,
  });
const m = (id: string, type: SourceType) => Message.withSource(Message.user(id, { id }), type, type);
const opens = (...inputIds: string[]): SaveHistoryArgs => ({ state, turn: { inputIds, opens: true } });

describe('the opening batch of a turn replaces a stored earlier attempt of it', () => {
  it('removes the attempt (with the context stored before it), stores the retry once, and leaves other turns alone', async () => {
    const history = make();
    await history.saveMessages('s1', [m('u0', 'input'), m('r0', 'response')], opens('u0'));
    await history.saveMessages('s1', [m('doc', 'context'), m('u1', 'input'), m('r1', 'response')], opens('u1'));
    await history.saveMessages('s1', [m('r1b', 'response')], { state, turn: { inputIds: ['u1'], opens: false } });
    await history.saveMessages('s1', [m('doc2', 'context'), m('u1', 'input'), m('r2', 'response')], opens('u1'));
    expect((await history.getMessages('s1', { state })).map((x) => x.id)).toEqual(['u0', 'r0', 'doc2', 'u1', 'r2']);

    // An attempt that is not the newest turn is replaced in place; a later batch of it goes right after it.
    await history.saveMessages('s1', [m('u0', 'input'), m('r3', 'response')], opens('u0'));
    await history.saveMessages('s1', [m('r3b', 'response')], { state, turn: { inputIds: ['u0'], opens: false } });
    expect((await history.getMessages('s1', { state })).map((x) => x.id)).toEqual(['u0', 'r3', 'r3b', 'doc2', 'u1', 'r2']);
    const exported: string[] = [];
    for await (const x of history.exportMessages('s1', { pageSize: 2 })) exported.push(x.id);
    expect(exported).toEqual(['u0', 'r3', 'r3b', 'doc2', 'u1', 'r2']);
  });

  it('a run retried with the same input message is sent the history before its attempt and stored once', async () => {
    const history = make();
    const chat = new ScriptedChatClient({ replies: ['Hello.', 'Answer A.', 'Answer B.'] });
    const agent = createAgent({ client: chat, contextProviders: [history] });
    const session = agent.getSessionById('s2');
    await agent.run('hi', { session });
    const question = Message.user('What is it?');
    await agent.run(question, { session }); // the caller never got this reply, and retries
    expect((await agent.run(question, { session })).text).toBe('Answer B.');
    expect(chat.calls[2]!.messages.map((x) => Message.text(x))).toEqual(['hi', 'Hello.', 'What is it?']);
    expect((await history.getMessages('s2', { state })).map((x) => Message.text(x))).toEqual(['hi', 'Hello.', 'What is it?', 'Answer B.']);
  });
});

describe('concurrent turns on one conversation, each retried', () => {
  it("every retried caller's reply is the one stored for its turn, and no retry is sent its earlier attempt", async () => {
    const history = make();
    let calls = 0;
    const chat = new ScriptedChatClient({
      replies: (messages) => ({ text: `${Message.text(messages.at(-1)!)}: reply ${++calls}`, delayMs: calls % 3 }),
    });
    const agent = createAgent({ client: chat, contextProviders: [history] });
    const inputs = Array.from({ length: 5 }, (_, i) => Message.user(`question ${i}`));
    await Promise.all(inputs.map((input) => agent.run(input, { session: agent.getSessionById('s3') })));
    // Every caller lost its reply and retries with the same input message.
    const retried = await Promise.all(inputs.map((input) => agent.run(input, { session: agent.getSessionById('s3') })));
    const stored = await history.getMessages('s3', { state });
    expect(stored).toHaveLength(10);
    inputs.forEach((input, i) => {
      const at = stored.findIndex((x) => x.id === input.id);
      expect(stored[at + 1]!.id, `the turn of question ${i}`).toBe(retried[i]!.messages[0]!.id);
    });
    for (const call of chat.calls.slice(5)) {
      const question = call.messages.at(-1)!;
      expect(
        call.messages.slice(0, -1).some((x) => Message.text(x).startsWith(`${Message.text(question)}:`) || x.id === question.id),
        `the retry of ${Message.text(question)} was sent its earlier attempt`,
      ).toBe(false);
    }
  });

  it('a message id stored with other content refuses the batch, naming it; nothing is written, also by a batch the stand-in applied in part', async () => {
    const history = make();
    await history.saveMessages('s4', [m('u0', 'input'), m('r0', 'response')], opens('u0'));
    const other = Message.assistant('other', { id: 'r0' });
    const error = await history.saveMessages('s4', [m('u1', 'input'), other], opens('u1')).catch((e: unknown) => e);
    expect(SessionStateError.isInstance(error), String(error)).toBe(true);
    expect((error as SessionStateError).path).toBe('$.messages[1].id');
    expect((await history.getMessages('s4', { state })).map((x) => x.id)).toEqual(['u0', 'r0']);
    // Over several transactional batches (150 messages), the conflict is found before any is written.
    const many = Array.from({ length: 150 }, (_, i) => m(`n${i}`, 'response'));
    const big = await history.append('s4', [...many, other]).catch((e: unknown) => e);
    expect(SessionStateError.isInstance(big), String(big)).toBe(true);
    expect(await history.countMessages('s4')).toBe(2);
  });
});
