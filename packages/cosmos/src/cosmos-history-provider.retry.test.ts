import { createAgent, Message, type SaveHistoryArgs, type SourceType } from '@ctx/core';
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

    // An input id stored before another turn is not a retry: nothing is removed.
    await history.saveMessages('s1', [m('u0', 'input'), m('r3', 'response')], opens('u0'));
    expect((await history.getMessages('s1', { state })).map((x) => x.id)).toEqual(['u0', 'r0', 'doc2', 'u1', 'r2', 'r3']);
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
