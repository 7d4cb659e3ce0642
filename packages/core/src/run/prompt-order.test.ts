import { describe, expect, it } from 'vitest';
import { InMemoryHistoryProvider } from '../history/in-memory-history-provider.js';
import { Message } from '../messages/message.js';
import { type ContextAudit, createAuditProvider } from '../policies/context-audit.js';
import type { ContextProvider } from '../contracts/run-view.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { defineTool } from '../tools/define-tool.js';
import { createAgent } from './create-agent.js';

const texts = (messages: readonly Message[]) => messages.map((m) => `${m.role}:${Message.text(m)}`);
const tool = (name: string) => defineTool({ name, parameters: { type: 'object' }, execute: () => name });

describe('prompt order: a stable start the prompt cache can reuse', () => {
  let hour = 0;
  const clock = (stability?: 'per-run'): ContextProvider => ({
    sourceId: 'clock',
    ...(stability ? { stability } : {}),
    beforeRun: ({ context }) => context.extendInstructions('clock', `It is ${hour++}:00.`),
  });
  const rag: ContextProvider = {
    sourceId: 'rag',
    beforeRun: ({ context }) => context.extendMessages('rag', [Message.user(`document for ${Message.text(context.inputMessages[0]!)}`)]),
  };
  const examples: ContextProvider = {
    sourceId: 'examples',
    stability: 'stable',
    beforeRun: ({ context }) => {
      context.extendMessages('examples', [Message.user('example question'), Message.assistant('example answer')]);
      context.extendInstructions('examples', 'Answer like the examples.');
      context.extendTools('examples', [tool('lookup')]);
    },
  };
  const pickTools: ContextProvider = {
    sourceId: 'pick-tools',
    stability: 'per-run',
    beforeRun: ({ context }) => context.extendTools('pick-tools', [tool(`chosen_${hour}`)]),
  };

  it('puts stable context first, then history, then per-run context, per-run instructions and the input', async () => {
    hour = 7;
    const client = new ScriptedChatClient({ replies: ['first answer', 'second answer'] });
    const agent = createAgent({
      client,
      instructions: 'You help.',
      tools: [tool('agent_tool')],
      // listed in an order that would break the prefix if it were the prompt order
      contextProviders: [pickTools, rag, clock('per-run'), new InMemoryHistoryProvider({ sourceId: 'history' }), examples],
    });
    const session = agent.createSession();
    await agent.run('one', { session });
    await agent.run('two', { session });
    const call = client.calls[1]!;
    expect(texts(call.messages)).toEqual([
      'user:example question',
      'assistant:example answer',
      'user:one',
      'assistant:first answer',
      'user:document for two',
      'system:It is 8:00.',
      'user:two',
    ]);
    expect(call.options.instructions).toBe('You help.\n\nAnswer like the examples.');
    expect(call.options.tools!.map((t) => t.name)).toEqual(['agent_tool', 'lookup', 'chosen_8']);
    // what history stores is the turn, not the per-run instructions
    expect(texts(session.state.history!.messages as unknown as Message[])).toEqual([
      'user:one',
      'assistant:first answer',
      'user:two',
      'assistant:second answer',
    ]);
  });

  it('a per-run clock no longer breaks the cached prefix; as an instruction it does', async () => {
    const prefixes = async (provider: ContextProvider) => {
      const audits: ContextAudit[] = [];
      const agent = createAgent({
        client: new ScriptedChatClient({ replies: (_m, _o, i) => `answer ${i}` }),
        instructions: 'You are the support agent of a shop. '.repeat(20),
        contextProviders: [provider, rag, createAuditProvider({ onAudit: (a) => void audits.push(a) })],
      });
      const session = agent.createSession();
      for (const q of ['one', 'two', 'three', 'four']) await agent.run(q, { session });
      return audits.slice(1).map((a) => a.prefix!);
    };
    for (const p of await prefixes(clock('per-run'))) {
      // everything up to the previous run's per-run context repeats: instructions and the history
      expect(p.firstChange).toBe('messages');
      expect(p.repeatedTokens / p.totalTokens).toBeGreaterThan(0.5);
    }
    for (const p of await prefixes(clock())) expect(p).toMatchObject({ firstChange: 'instructions', repeatedTokens: 0 });
  });

  it('keeps the order of a pipeline without declarations as it was: history, then context in source order', async () => {
    const client = new ScriptedChatClient({ replies: ['a', 'b'] });
    const agent = createAgent({ client, contextProviders: [new InMemoryHistoryProvider({ sourceId: 'history' }), rag] });
    const session = agent.createSession();
    await agent.run('one', { session });
    await agent.run('two', { session });
    expect(texts(client.calls[1]!.messages)).toEqual(['user:one', 'assistant:a', 'user:document for two', 'user:two']);
  });
});
