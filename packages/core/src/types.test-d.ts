import { describe, expectTypeOf, it } from 'vitest';
import { Message } from './messages/message.js';
import { createAgent } from './run/create-agent.js';
import type { AgentSession } from './session/agent-session.js';
import type { JsonValue } from './contracts/json.js';
import type { ContextProvider, Tool } from './contracts/run-view.js';
import { createProviderRunArgs } from './testing/create-provider-run-args.js';
import { ScriptedChatClient } from './testing/scripted-chat-client.js';
import { defineTool, type StandardSchemaV1 } from './tools/define-tool.js';

describe('public types', () => {
  it('a Message is JSON', () => {
    expectTypeOf(Message.user('hi')).toExtend<JsonValue>();
  });

  it('defineTool types arguments from a Standard Schema and from a declared type', () => {
    const schema = {} as StandardSchemaV1<unknown, { city: string }>;
    defineTool({
      name: 'weather',
      parameters: schema,
      jsonSchema: { type: 'object' },
      execute: (args) => {
        expectTypeOf(args).toEqualTypeOf<{ city: string }>();
        return 1;
      },
    });
    const typed = defineTool<{ n: number }, number>({ name: 'n', parameters: { type: 'object' }, execute: ({ n }) => n });
    expectTypeOf(typed).toExtend<Tool>();
  });
});

describe('providers with typed state', () => {
  it('fit in an agent pipeline without casts', () => {
    const profile: ContextProvider<{ name?: string; visits?: number }> = {
      sourceId: 'profile',
      beforeRun: ({ state }) => {
        expectTypeOf(state.name).toEqualTypeOf<string | undefined>();
        state.visits = (state.visits ?? 0) + 1;
      },
    };
    createAgent({ client: new ScriptedChatClient({ replies: [] }), contextProviders: [profile] });
  });
});

describe('hosted sessions', () => {
  it('getSession may resolve to undefined; a typed provider merges its own state type', () => {
    const agent = createAgent({ client: new ScriptedChatClient({ replies: [] }) });
    expectTypeOf(agent.getSession('s', { userId: 'u' })).resolves.toEqualTypeOf<AgentSession | undefined>();
    const counter: ContextProvider<{ runs?: number }> = {
      sourceId: 'counter',
      mergeState: ({ base, ours, theirs }) => {
        expectTypeOf(ours.runs).toEqualTypeOf<number | undefined>();
        return { runs: (ours.runs ?? 0) + (theirs.runs ?? 0) - (base.runs ?? 0) };
      },
    };
    createAgent({ client: new ScriptedChatClient({ replies: [] }), contextProviders: [counter] });
  });
});

describe('provider hook arguments', () => {
  it('redact is optional, so a test can build ProviderRunArgs without it; createProviderRunArgs types the state slot', () => {
    type Args = import('./contracts/run-view.js').ProviderRunArgs;
    expectTypeOf<Omit<Args, 'redact'>>().toExtend<Args>();
    const args = createProviderRunArgs<{ count: number }>({ state: { count: 1 } });
    expectTypeOf(args.state).toEqualTypeOf<{ count: number }>();
    expectTypeOf(args).toExtend<Args>();
  });

  it('limits take byte counts', () => {
    createAgent({ client: new ScriptedChatClient({ replies: [] }), limits: { maxMessageBytes: 1024 } });
    // @ts-expect-error a limit is a number of bytes
    createAgent({ client: new ScriptedChatClient({ replies: [] }), limits: { maxMessageBytes: '8mb' } });
  });
});
