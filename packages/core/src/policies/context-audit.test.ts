import { Message } from '../messages/message.js';
import { createAgent } from '../run/create-agent.js';
import type { AgentEvent } from '../contracts/events.js';
import type { ContextProvider } from '../contracts/run-view.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { createCharacterTokenizer } from '../tokens/character-tokenizer.js';
import { defineTool } from '../tools/define-tool.js';
import { countToolTokens } from './budget.js';
import { type ContextAudit, createAuditProvider } from './context-audit.js';
import { withPolicies } from './with-policies.js';
import { describe, expect, it } from 'vitest';

const tokenizer = createCharacterTokenizer();

describe('auditContext and createAuditProvider', () => {
  it('reports per source what entered the model call, with tokens that add up to what was sent', async () => {
    const agentTool = defineTool({ name: 'clock', description: 'Current time.', parameters: { type: 'object' }, execute: () => 'noon' });
    const docTool = defineTool({
      name: 'open_doc',
      description: 'Opens a document by id.',
      parameters: { type: 'object', properties: { id: { type: 'string' } } },
      execute: () => 'doc',
    });
    const rag: ContextProvider = {
      sourceId: 'rag',
      beforeRun({ context }) {
        context.extendMessages('rag', [Message.user('SECRET document text one'), Message.user('document two')]);
        context.extendTools('rag', [docTool]);
      },
    };
    const persona: ContextProvider = {
      sourceId: 'persona',
      beforeRun: ({ context }) => context.extendInstructions('persona', 'Speak like a pirate.'),
    };
    const audits: ContextAudit[] = [];
    const client = new ScriptedChatClient({ replies: ['a', 'b'] });
    const agent = createAgent({
      client,
      instructions: 'You help.',
      tools: [agentTool],
      contextProviders: [
        rag,
        withPolicies(persona, { budget: { maxTokens: 100, tokenizer } }),
        createAuditProvider({ tokenizer, onAudit: (a) => void audits.push(a) }),
      ],
    });
    const session = agent.createSession();
    await agent.run('first', { session });
    await agent.run('second question', { session });

    const audit = audits[1]!;
    expect(audit.sessionId).toBe(session.sessionId);
    expect(audit.sources.map((s) => s.sourceId)).toEqual(['agent', 'memory', 'rag', 'persona', 'input']);
    const by = Object.fromEntries(audit.sources.map((s) => [s.sourceId, s]));
    const call = client.calls[1]!;
    const sent = (id: string) => call.messages.filter((m) => Message.source(m)?.sourceId === id);
    expect(by.rag!.messageIds).toEqual(sent('rag').map((m) => m.id));
    expect(by.rag!.messageTokens).toBe(tokenizer.countMessageTokens(sent('rag')));
    expect(by.rag!.toolNames).toEqual(['open_doc']);
    expect(by.rag!.toolTokens).toBe(countToolTokens(docTool, tokenizer));
    expect(by.memory!.messages).toBe(2); // the first turn, loaded as history
    expect(by.agent!).toMatchObject({ instructions: 1, instructionTokens: tokenizer.countTokens('You help.'), toolNames: ['clock'] });
    expect(by.persona!).toMatchObject({ instructions: 1, messages: 0, budget: { maxTokens: 100, dropped: 0 } });
    expect(by.input!.messageTokens).toBe(tokenizer.countMessageTokens(call.messages.slice(-1)));
    const allTools = call.options.tools!.reduce((sum, t) => sum + countToolTokens(t, tokenizer), 0);
    const allInstructions = ['You help.', 'Speak like a pirate.'].reduce((sum, t) => sum + tokenizer.countTokens(t), 0);
    expect(audit.totalTokens).toBe(tokenizer.countMessageTokens(call.messages) + allTools + allInstructions);
    expect(JSON.stringify(audit)).not.toContain('SECRET'); // ids and counts, never text
  });

  it('a failing onAudit is skipped by default and the run goes on', async () => {
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: ['ok'] }),
      contextProviders: [
        createAuditProvider({
          onAudit: () => {
            throw new Error('sink down');
          },
        }),
      ],
    });
    expect((await agent.run('hi')).text).toBe('ok');
  });

  it('audits a run with no other provider: only the input', async () => {
    const audits: ContextAudit[] = [];
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: ['ok'] }),
      contextProviders: [createAuditProvider({ onAudit: (a) => void audits.push(a) })],
    });
    await agent.run('hi');
    expect(audits[0]!.sources.map((s) => s.sourceId)).toEqual(['input']);
    expect(audits[0]!.totalTokens).toBe(tokenizer.countMessageTokens([Message.user('hi')]));
  });

  it('reports every audit to onEvent as a context-audit diagnostic', async () => {
    const events: AgentEvent[] = [];
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: ['ok'] }),
      contextProviders: [createAuditProvider({})],
      onEvent: (e) => events.push(e),
    });
    await agent.run('hi');
    const audit = events.find((e) => e.type === 'provider-diagnostic' && e.code === 'context-audit');
    expect(audit).toMatchObject({ sourceId: 'audit', data: { totalTokens: tokenizer.countMessageTokens([Message.user('hi')]) } });
  });

  it("says how many tokens of each run repeat the previous run's last request from the start, and what broke the prefix", async () => {
    const audits: ContextAudit[] = [];
    let now = 0;
    const clock: ContextProvider = {
      sourceId: 'clock',
      beforeRun: ({ context }) => context.extendInstructions('clock', `It is ${now++}:00.`),
    };
    const ping = defineTool({ name: 'ping', parameters: { type: 'object' }, execute: () => 'pong' });
    const run = async (providers: ContextProvider[]) => {
      audits.length = 0;
      const client = new ScriptedChatClient({ replies: [{ toolCalls: [{ name: 'ping' }] }, 'one', 'two', 'three'] });
      const agent = createAgent({
        client,
        instructions: 'You help.',
        tools: [ping],
        contextProviders: [...providers, createAuditProvider({ tokenizer, onAudit: (a) => void audits.push(a) })],
      });
      const session = agent.createSession();
      for (const q of ['first', 'second', 'third']) await agent.run(q, { session });
      return audits.map((a) => a.prefix!);
    };

    const stable = await run([]);
    expect(stable[0]).toMatchObject({ repeatedTokens: 0 });
    expect(stable[0]!.firstChange).toBeUndefined(); // nothing to compare with
    // the second run repeats everything the first run's last call sent: tools, instructions, the
    // question, the call and its result; only the final answer and the new question are new
    const [first, second] = [stable[1]!, stable[2]!];
    for (const p of [first, second]) {
      expect(p.firstChange).toBeUndefined();
      expect(p.repeatedTokens).toBeGreaterThan(0);
      expect(p.totalTokens - p.repeatedTokens).toBe(
        tokenizer.countMessageTokens([Message.assistant(p === first ? 'one' : 'two')]) +
          tokenizer.countMessageTokens([Message.user(p === first ? 'second' : 'third')]),
      );
    }

    const clocked = await run([clock]);
    expect(clocked[1]).toMatchObject({ firstChange: 'instructions', repeatedTokens: countToolTokens(ping, tokenizer) });
  });
});
