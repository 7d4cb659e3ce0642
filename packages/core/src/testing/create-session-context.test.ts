import { describe, expect, it } from 'vitest';
import { Message } from '../messages/message.js';
import { createSessionContext } from './create-session-context.js';

describe('createSessionContext', () => {
  it('builds the context a run hands its providers: input attributed as input, the agent instructions first', () => {
    const context = createSessionContext({ sessionId: 's1', inputMessages: [Message.user('hi')], instructions: 'Be brief.' });
    expect(context.sessionId).toBe('s1');
    expect(Message.source(context.inputMessages[0]!)).toEqual({ sourceId: 'input', sourceType: 'input' });
    context.extendMessages('rag', [Message.user('doc')]);
    context.extendInstructions('rag', 'Cite sources.');
    expect(context.getMessages({ includeInput: true }).map((m) => Message.text(m))).toEqual(['doc', 'hi']);
    expect(context.getInstructions()).toBe('Be brief.\n\nCite sources.');
    expect(context.contributionOf('rag')).toEqual({ messages: 1, instructions: 1, tools: 0 });
  });
});
