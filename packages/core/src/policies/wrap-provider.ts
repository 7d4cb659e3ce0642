import { ConfigurationError } from '../errors.js';
import { HistoryProvider } from '../history/history-provider.js';
import type { JsonObject } from '../contracts/json.js';
import type { ContextProvider } from '../contracts/run-view.js';

/** Where a wrapper made by `wrapProvider` keeps the provider it wraps (shared by every copy of `@ctx/core`). */
const wrappedKey = Symbol.for('ctx.wrapped-provider');

/**
 * Every member of `ContextProvider`, and whether it is a plain value or a hook (a method). The
 * `satisfies` clause is the guard: a member added to the contract and missing here, or one listed
 * here that the contract no longer has, fails the build.
 */
export const CONTEXT_PROVIDER_MEMBERS = {
  specificationVersion: 'value',
  sourceId: 'value',
  onError: 'value',
  stability: 'value',
  timeoutMs: 'value',
  beforeRun: 'hook',
  afterRun: 'hook',
  wrap: 'hook',
  onTurnStored: 'hook',
  flush: 'hook',
  mergeState: 'hook',
  onSessionCreated: 'hook',
  onSessionDeleted: 'hook',
  onRewind: 'hook',
  onSessionForked: 'hook',
  exportUserData: 'hook',
  deleteUserData: 'hook',
  validateState: 'hook',
} as const satisfies { readonly [K in keyof Required<ContextProvider>]: 'value' | 'hook' };

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * Makes a provider that behaves as `inner` for every member of the contract it does not override:
 * the values (`sourceId`, `onError`, `stability`, `timeoutMs`) and every hook, the session,
 * rewind, fork, user-data and merge hooks among them. A hook in `overrides` replaces the inner
 * one (call `inner`'s yourself); an override set to `undefined` removes the member. Code that needs
 * a capability of the inner provider (the recall archive, "is this the history") finds it through
 * the wrapper with `unwrapProvider` or `findProvider`. `withPolicies` is built on it; use it for
 * wrappers of your own.
 */
export function wrapProvider<TState extends JsonObject = JsonObject>(
  inner: ContextProvider<TState>,
  overrides: Partial<ContextProvider<TState>> = {},
): ContextProvider<TState> {
  const wrapper = { [wrappedKey]: inner } as unknown as Mutable<ContextProvider<TState>>;
  const target = wrapper as Record<string, unknown>;
  const from = inner as unknown as Record<string, unknown>;
  for (const [name, kind] of Object.entries(CONTEXT_PROVIDER_MEMBERS)) {
    if (Object.hasOwn(overrides, name)) {
      const value = (overrides as Record<string, unknown>)[name];
      if (value !== undefined) target[name] = value;
      continue;
    }
    const value = from[name];
    if (value === undefined) continue;
    target[name] = kind === 'hook' && typeof value === 'function' ? (...args: unknown[]) => value.apply(inner, args) : value;
  }
  if (typeof wrapper.sourceId !== 'string')
    throw new ConfigurationError('wrapProvider: the wrapped provider has no sourceId (a string is required).');
  return wrapper;
}

/** How deep `unwrapProvider` and `findProvider` look: no real chain is this long, a hand-made cycle could be. */
const MAX_DEPTH = 64;

/**
 * The chain of providers `provider` stands for: itself, then what it wraps (`wrapProvider`), and
 * so on inwards. A provider that wraps nothing gives `[provider]`.
 */
export function unwrapProvider(provider: ContextProvider): ContextProvider[] {
  const chain: ContextProvider[] = [];
  for (let p: unknown = provider; isObject(p) && chain.length < MAX_DEPTH; p = p[wrappedKey]) chain.push(p as unknown as ContextProvider);
  return chain;
}

/**
 * The first provider of `providers` that is, or is wrapped inside one of them, what `is` accepts
 * (e.g. `SemanticRecallProvider.isInstance`), in list order; undefined when none is.
 */
export function findProvider<T extends ContextProvider>(
  providers: readonly ContextProvider[],
  is: (provider: ContextProvider) => provider is T,
): T | undefined {
  for (const outer of providers) {
    const found = inside(outer, is);
    if (found) return found;
  }
  return undefined;
}

/** The history provider `provider` is or wraps, if any: how the agent tells history apart, through wrappers. */
export function historyIn(provider: ContextProvider): HistoryProvider | undefined {
  return inside(provider, HistoryProvider.isInstance);
}

/** The history providers among `providers`, wrapped or not, in list order. */
export function historiesIn(providers: readonly ContextProvider[]): HistoryProvider[] {
  const out: HistoryProvider[] = [];
  for (const p of providers) {
    const history = historyIn(p);
    if (history) out.push(history);
  }
  return out;
}

/** `provider` or the first provider inside it that `is` accepts. Allocates nothing: it runs on every run. */
function inside<T extends ContextProvider>(provider: ContextProvider, is: (provider: ContextProvider) => provider is T): T | undefined {
  let p: unknown = provider;
  for (let depth = 0; isObject(p) && depth < MAX_DEPTH; depth++, p = p[wrappedKey])
    if (is(p as unknown as ContextProvider)) return p as unknown as T;
  return undefined;
}

function isObject(value: unknown): value is Record<symbol, unknown> {
  return typeof value === 'object' && value !== null;
}
