import { describe, expectTypeOf, it } from 'vitest';
import type { ContextProvider } from '../contracts/run-view.js';
import { CONTEXT_PROVIDER_MEMBERS, wrapProvider } from './wrap-provider.js';

describe('wrapProvider', () => {
  it('knows every member of ContextProvider, and no other: a member added to the contract fails this build until the wrapper handles it', () => {
    expectTypeOf<keyof typeof CONTEXT_PROVIDER_MEMBERS>().toEqualTypeOf<keyof ContextProvider>();
  });

  it('returns a ContextProvider of the same state type', () => {
    const inner = {} as ContextProvider<{ next: number }>;
    expectTypeOf(wrapProvider(inner)).toEqualTypeOf<ContextProvider<{ next: number }>>();
  });
});
