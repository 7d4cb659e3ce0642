import { describe, expect, it } from 'vitest';
import { ConfigurationError, ProviderError } from '../errors.js';
import { InMemoryHistoryProvider } from '../history/in-memory-history-provider.js';
import { Message } from '../messages/message.js';
import { createAgent } from '../run/create-agent.js';
import type { AgentEvent } from '../contracts/events.js';
import type { ContextProvider } from '../contracts/run-view.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { createCharacterTokenizer } from '../tokens/character-tokenizer.js';
import { defineTool } from '../tools/define-tool.js';
import { budgetReportOf } from './budget.js';
import { withPolicies } from './with-policies.js';

const tokenizer = createCharacterTokenizer(); // 4 chars a token, 4 tokens a message
const fromSource = (messages: readonly Message[], sourceId: string) => messages.filter((m) => Message.source(m)?.sourceId === sourceId);

/** A third-party style provider: hooks that record calls and touch their state. */
function spy(sourceId: string, log: string[]): ContextProvider<{ runs?: number }> {
  return {
    sourceId,
    beforeRun({ context, state }) {
      log.push('before');
      state.runs = (state.runs ?? 0) + 1;
      context.extendMessages(sourceId, [Message.system(`${sourceId} says hi`)]);
    },
    afterRun() {
      log.push('after');
    },
  };
}

describe('withPolicies: when', () => {
  it('skips every hook of a provider that declines, and runs them when it accepts', async () => {
    const log: string[] = [];
    const gated = withPolicies(spy('notes', log), { when: (context) => Message.text(context.inputMessages[0]!).includes('notes') });
    const client = new ScriptedChatClient({ replies: ['a', 'b'] });
    const agent = createAgent({ client, contextProviders: [gated] });
    const session = agent.createSession();

    await agent.run('hello', { session });
    expect(log).toEqual([]);
    expect(session.state.notes?.runs).toBeUndefined(); // the inner provider never touched its state
    expect(fromSource(client.calls[0]!.messages, 'notes')).toHaveLength(0);

    await agent.run('show my notes', { session });
    expect(log).toEqual(['before', 'after']);
    expect(session.state.notes?.runs).toBe(1);
    expect(fromSource(client.calls[1]!.messages, 'notes').map(Message.text)).toEqual(['notes says hi']);
  });

  it("keeps the provider's mergeState, so a wrapped slot still merges when two saves changed it", () => {
    const merging: ContextProvider<{ runs?: number }> = {
      ...spy('counted', []),
      mergeState: ({ base, ours, theirs }) => ({ runs: (ours.runs ?? 0) + (theirs.runs ?? 0) - (base.runs ?? 0) }),
    };
    const gated = withPolicies(merging, { when: () => false });
    expect(
      gated.mergeState?.({ base: { runs: 1 }, ours: { runs: 2 }, theirs: { runs: 3 }, path: '$.state.counted', sessionId: 's' }),
    ).toEqual({
      runs: 4,
    });
    expect(withPolicies(spy('plain', []), {}).mergeState).toBeUndefined();
  });

  it('gates a wrap provider too', async () => {
    const log: string[] = [];
    const around: ContextProvider = {
      sourceId: 'around',
      async wrap({ context }, next) {
        log.push('enter');
        context.extendInstructions('around', 'be brief');
        await next();
        log.push('exit');
      },
    };
    const client = new ScriptedChatClient({ replies: ['a', 'b'] });
    let open = false;
    const agent = createAgent({ client, contextProviders: [withPolicies(around, { when: () => open })] });
    const session = agent.createSession();
    expect((await agent.run('x', { session })).text).toBe('a');
    expect(log).toEqual([]);
    expect(client.calls[0]!.options.instructions).toBeUndefined();
    open = true;
    await agent.run('y', { session });
    expect(log).toEqual(['enter', 'exit']);
    expect(client.calls[1]!.options.instructions).toBe('be brief');
  });

  it('treats a throwing gate as the provider failing, under its onError', async () => {
    const events: AgentEvent[] = [];
    const failing = (onError: 'skip' | 'throw') =>
      withPolicies(
        { sourceId: 'g', onError, beforeRun: ({ context }) => context.extendInstructions('g', 'never') },
        {
          when: () => {
            throw new Error('gate down');
          },
        },
      );
    const skipping = createAgent({
      client: new ScriptedChatClient({ replies: ['ok'] }),
      contextProviders: [failing('skip')],
      onEvent: (e) => events.push(e),
    });
    expect((await skipping.run('hi')).text).toBe('ok');
    expect(events.some((e) => e.type === 'provider-skipped' && e.sourceId === 'g')).toBe(true);
    const throwing = createAgent({ client: new ScriptedChatClient({ replies: ['ok'] }), contextProviders: [failing('throw')] });
    expect(ProviderError.isInstance(await throwing.run('hi').catch((e: unknown) => e))).toBe(true);
  });

  it('refuses to wrap a history provider', () => {
    expect(() => withPolicies(new InMemoryHistoryProvider({ sourceId: 'h' }), { when: () => true })).toThrow(ConfigurationError);
  });
});

describe('withPolicies: budget', () => {
  /** Adds five 40-character messages with priorities, an instruction and a tool. */
  const noisy: ContextProvider = {
    sourceId: 'noisy',
    beforeRun({ context }) {
      const priorities = [3, 1, 5, 2, 4];
      context.extendMessages(
        'noisy',
        priorities.map((p) => Message.system(`priority ${p} `.padEnd(40, '.'), { metadata: { priority: p } })),
      );
    },
  };

  it('holds by exact count and drops the lowest-priority messages', async () => {
    const client = new ScriptedChatClient({ replies: ['ok'] });
    // each message: 4 overhead + 40/4 = 14 tokens; 45 tokens fit three of the five
    const agent = createAgent({ client, contextProviders: [withPolicies(noisy, { budget: { maxTokens: 45, tokenizer } })] });
    await agent.run('q', { session: agent.createSession() });
    const injected = fromSource(client.calls[0]!.messages, 'noisy');
    expect(tokenizer.countMessageTokens(injected)).toBeLessThanOrEqual(45);
    expect(injected.map((m) => m.metadata?.priority)).toEqual([3, 5, 4]); // 1 and 2 dropped, order kept
    expect(injected.every((m) => Message.source(m)?.sourceType === 'context')).toBe(true);
  });

  it('without priorities drops what the provider added last; messages before tools before instructions', async () => {
    const tool = defineTool({ name: 'lookup', description: 'Looks things up.', parameters: { type: 'object' }, execute: () => 'x' });
    const mixed: ContextProvider = {
      sourceId: 'mixed',
      beforeRun({ context }) {
        context.extendInstructions('mixed', 'Use lookup when unsure.'); // 6 tokens
        context.extendTools('mixed', [tool]);
        context.extendMessages('mixed', [Message.system('first fact'), Message.system('second fact')]); // 7 tokens each
      },
    };
    const toolTokens = tokenizer.countTokens(
      JSON.stringify({ name: tool.name, description: tool.description, parameters: tool.parameters }),
    );
    const client = new ScriptedChatClient({ replies: ['ok', 'ok'] });
    const budget = 6 + toolTokens + 7;
    const agent = createAgent({ client, contextProviders: [withPolicies(mixed, { budget: { maxTokens: budget, tokenizer } })] });
    const session = agent.createSession();
    const audit: Array<ReturnType<typeof budgetReportOf>> = [];
    const observer: ContextProvider = {
      sourceId: 'observer',
      beforeRun: ({ context }) => void audit.push(budgetReportOf(context.metadata, 'mixed')),
    };
    const observed = createAgent({
      client,
      contextProviders: [withPolicies(mixed, { budget: { maxTokens: budget, tokenizer } }), observer],
    });
    await agent.run('q', { session });
    const call = client.calls[0]!;
    expect(fromSource(call.messages, 'mixed').map(Message.text)).toEqual(['first fact']);
    expect(call.options.tools?.map((t) => t.name)).toEqual(['lookup']);
    expect(call.options.instructions).toBe('Use lookup when unsure.');
    await observed.run('q', { session: observed.createSession() });
    expect(audit[0]).toEqual({ maxTokens: budget, tokens: budget, dropped: 1 });
  });

  it('trims a wrap provider before the model call, and a custom priority decides the order', async () => {
    const around: ContextProvider = {
      sourceId: 'around',
      async wrap({ context }, next) {
        context.extendMessages('around', [Message.system('keep me please'), Message.system('drop me')]);
        await next();
      },
    };
    const client = new ScriptedChatClient({ replies: ['ok'] });
    const policy = withPolicies(around, {
      budget: {
        maxTokens: 8,
        tokenizer,
        priority: (item) => (item.kind === 'message' && Message.text(item.message).startsWith('keep') ? 1 : 0),
      },
    });
    const agent = createAgent({ client, contextProviders: [policy] });
    await agent.run('q');
    expect(fromSource(client.calls[0]!.messages, 'around').map(Message.text)).toEqual(['keep me please']);
  });

  it('leaves a contribution within budget untouched', async () => {
    const client = new ScriptedChatClient({ replies: ['ok'] });
    const agent = createAgent({ client, contextProviders: [withPolicies(noisy, { budget: { maxTokens: 70, tokenizer } })] });
    await agent.run('q');
    expect(fromSource(client.calls[0]!.messages, 'noisy').map((m) => m.metadata?.priority)).toEqual([3, 1, 5, 2, 4]);
  });

  it('rejects an invalid budget', () => {
    expect(() => withPolicies(noisy, { budget: { maxTokens: -1 } })).toThrow(ConfigurationError);
  });
});
