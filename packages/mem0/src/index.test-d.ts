import { createAgent } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import type { MemoryClient } from 'mem0ai';
import type { Memory } from 'mem0ai/oss';
import { describe, expectTypeOf, it } from 'vitest';
import { Mem0ContextProvider, type Mem0Adapter, type Mem0ContextProviderOptions, type Mem0SessionState } from './index.js';

describe('public types', () => {
  it('both mem0ai clients and an adapter fit `client` without casts', () => {
    expectTypeOf<MemoryClient>().toExtend<NonNullable<Mem0ContextProviderOptions['client']>>();
    expectTypeOf<Memory>().toExtend<NonNullable<Mem0ContextProviderOptions['client']>>();
    expectTypeOf<Mem0Adapter>().toExtend<NonNullable<Mem0ContextProviderOptions['client']>>();
  });

  it('the provider fits an agent pipeline and its state fits createSession', () => {
    const provider = new Mem0ContextProvider({ client: {} as MemoryClient });
    const agent = createAgent({ client: new ScriptedChatClient({ replies: [] }), contextProviders: [provider] });
    const state: Mem0SessionState = { userId: 'u-1' };
    agent.createSession({ state: { mem0: state } });
    expectTypeOf(provider.flush).returns.resolves.toHaveProperty('failed');
  });

  it('scope keys are checked at compile time', () => {
    // @ts-expect-error: not a scope key
    new Mem0ContextProvider({ client: {} as MemoryClient, searchScopes: [['user']] });
  });
});
