import { describe, expect, it } from 'vitest';
import { ConfigurationError, ProviderError } from '../errors.js';
import { Message } from '../messages/message.js';
import type { Tool } from '../contracts/run-view.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { defineTool } from '../tools/define-tool.js';
import { createAgent } from './create-agent.js';
import { RunContext } from './run-context.js';

const tool = (name: string, execute: () => unknown = () => name): Tool => defineTool({ name, parameters: { type: 'object' }, execute });
const base = { sessionId: 's', inputMessages: [] };
const thrownBy = (fn: () => unknown): Error => {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('did not throw');
};

describe('RunContext: one name, one tool', () => {
  it("offers the agent's tools, then the run's", () => {
    const context = new RunContext({ ...base, tools: [tool('a'), tool('b')], runTools: [tool('c')] });
    expect(context.tools.map((t) => t.name)).toEqual(['a', 'b', 'c']);
  });

  it('refuses a run tool with the name of an agent tool: a ConfigurationError naming the tool, both owners and the fix', () => {
    const error = thrownBy(() => new RunContext({ ...base, tools: [tool('search')], runTools: [tool('search')] }));
    expect(ConfigurationError.isInstance(error)).toBe(true);
    expect(error.message).toBe(
      "Tool \"search\" from this run's options.tools has the name of a tool of the agent (createAgent({ tools })); the model is offered each name once: rename it, or leave the agent's tool out of createAgent and pass the variant you want in each run's options.tools.",
    );
  });

  it('refuses two run tools with one name', () => {
    const error = thrownBy(() => new RunContext({ ...base, runTools: [tool('x'), tool('x')] }));
    expect(ConfigurationError.isInstance(error)).toBe(true);
    expect(error.message).toMatch(/^Tool "x" from this run's options.tools has the name of a tool of this run's options.tools;/);
  });

  it.each([
    ['the agent', 'agent_tool', 'the agent (createAgent({ tools }))'],
    ["the run's options.tools", 'run_tool', "this run's options.tools"],
    ['another provider', 'other_tool', 'context provider "other"'],
  ])('extendTools refuses a name already taken by %s, names who holds it, and adds none of the list', (_, name, owner) => {
    const context = new RunContext({ ...base, tools: [tool('agent_tool')], runTools: [tool('run_tool')] });
    context.extendTools('other', [tool('other_tool')]);
    const error = thrownBy(() => context.extendTools('rag', [tool('fresh'), tool(name)]));
    expect(ConfigurationError.isInstance(error)).toBe(true);
    expect(error.message).toBe(
      `Tool "${name}" from context provider "rag" has the name of a tool of ${owner}; the model is offered each name once: give the provider's tool another name, or leave one of them out.`,
    );
    expect(context.tools.map((t) => t.name)).toEqual(['agent_tool', 'run_tool', 'other_tool']);
    expect(context.contributionOf('rag').tools).toBe(0);
  });

  it('extendTools refuses a list that names one tool twice, and adds none of it', () => {
    const context = new RunContext(base);
    expect(() => context.extendTools('rag', [tool('search'), tool('search')])).toThrow(
      /^Tool "search" from context provider "rag" has the name of a tool of context provider "rag" \(the same call\)/,
    );
    expect(context.tools).toEqual([]);
    // once the first provider is removed (onError: 'skip'), its name is free again
    context.extendTools('rag', [tool('search')]);
    context.removeSource('rag');
    context.extendTools('other', [tool('search')]);
    expect(context.tools.map((t) => t.metadata)).toEqual([{ ctx: { sourceId: 'other' } }]);
  });
});

describe('the agent: one name, one tool', () => {
  it("a run's options.tools reusing an agent tool's name fails the run before any provider or model call", async () => {
    const client = new ScriptedChatClient({ replies: ['never'] });
    let providerRan = false;
    const agent = createAgent({
      client,
      tools: [tool('lookup', () => 'agent')],
      contextProviders: [{ sourceId: 'probe', beforeRun: () => void (providerRan = true) }],
    });
    const session = agent.createSession();
    const run = agent.run('go', { session, options: { tools: [tool('lookup', () => 'run')] } });
    await expect(run).rejects.toThrow(ConfigurationError);
    await expect(run).rejects.toThrow(/Tool "lookup" from this run's options.tools has the name of a tool of the agent/);
    const stream = agent.runStream('go', { session, options: { tools: [tool('lookup', () => 'run')] } });
    await expect(stream.response).rejects.toThrow(/Tool "lookup" from this run's options.tools/);
    expect(client.calls).toHaveLength(0);
    expect(providerRan).toBe(false);
    expect(session.state).toEqual({});
  });

  it("a provider adding a tool with the name of a run tool fails as that provider (or is skipped with onError: 'skip')", async () => {
    const adds = (onError: 'throw' | 'skip') => ({
      sourceId: 'rag',
      onError,
      beforeRun: ({ context }: { context: { extendTools(id: string, tools: Tool[]): void } }) =>
        context.extendTools('rag', [tool('search')]),
    });
    const client = new ScriptedChatClient({ replies: ['answered without rag'] });
    const failing = createAgent({ client, contextProviders: [adds('throw')] });
    const error = await failing.run('go', { options: { tools: [tool('search')] } }).catch((e: unknown) => e);
    expect(ProviderError.isInstance(error)).toBe(true);
    expect(ConfigurationError.isInstance((error as ProviderError).cause)).toBe(true);
    expect((error as Error).message).toMatch(
      /Tool "search" from context provider "rag" has the name of a tool of this run's options.tools/,
    );
    const skipping = createAgent({ client, contextProviders: [adds('skip')] });
    const res = await skipping.run('go', { options: { tools: [tool('search')] } });
    expect(res.text).toBe('answered without rag');
    expect(client.calls[0]!.options.tools?.map((t) => [t.name, t.metadata])).toEqual([['search', undefined]]);
  });
});

describe('RunContext: what each source added', () => {
  it('counts the instructions, tools and messages of a source, and forgets them with removeSource, among many tools', () => {
    const agentTools = Array.from({ length: 300 }, (_, i) => tool(`agent_${i}`));
    const context = new RunContext({ ...base, instructions: 'be brief', tools: agentTools });
    context.extendInstructions('rag', ['one', '', 'two']);
    context.extendTools('rag', [tool('search'), tool('fetch')]);
    context.extendTools('other', [tool('lookup')]);
    context.extendMessages('rag', [Message.system('found')]);
    expect(context.contributionOf('rag')).toEqual({ messages: 1, instructions: 2, tools: 2 });
    expect(context.contributionOf('agent')).toEqual({ messages: 0, instructions: 1, tools: 0 });
    expect(context.contributionOf('nobody')).toEqual({ messages: 0, instructions: 0, tools: 0 });

    context.removeSource('rag');
    expect(context.contributionOf('rag')).toEqual({ messages: 0, instructions: 0, tools: 0 });
    expect(context.tools.map((t) => t.name)).toEqual([...agentTools.map((t) => t.name), 'lookup']);
    expect(context.instructions.map((i) => i.text)).toEqual(['be brief']);
    context.extendTools('rag', [tool('search')]);
    expect(context.contributionOf('rag').tools).toBe(1);
    expect(() => context.extendTools('late', [tool('lookup')])).toThrow(/of context provider "other"/);
  });

  it("counts a tool taken from another run's context as its provider's, as before", () => {
    const first = new RunContext(base);
    first.extendTools('rag', [tool('search')]);
    const second = new RunContext({ ...base, tools: first.tools });
    expect(second.contributionOf('rag').tools).toBe(1);
    expect(() => second.extendTools('other', [tool('search')])).toThrow(/of context provider "rag"/);
    second.removeSource('rag');
    expect(second.tools).toEqual([]);
  });
});
