import { checkId } from '../backend/checks.js';
import { ConfigurationError } from '../errors.js';
import type { ContextProvider } from '../spec/run-view.js';
import type { AgentOptions } from './agent.js';

/** Source ids the engine itself uses for attribution. */
const RESERVED_SOURCE_IDS = new Set(['agent', 'input', 'response']);

/** `AgentOptions` checked, with defaults filled in. */
export interface CheckedAgentOptions extends AgentOptions {
  name: string;
  contextProviders: readonly ContextProvider[];
  maxToolRoundtrips: number;
}

/**
 * Checks what `createAgent` was given.
 * @throws ConfigurationError for a missing client, a bad `maxToolRoundtrips`, duplicate or reserved
 *   source ids, or a contract version this copy of `@ctx/core` does not implement.
 */
export function checkAgentOptions(options: AgentOptions): CheckedAgentOptions {
  const { client } = options;
  if (!client || typeof client.getResponse !== 'function')
    throw new ConfigurationError('createAgent needs a `client` implementing ChatClient.');
  checkSpecificationVersion('The chat client', client);
  if (options.sessionStore) checkSpecificationVersion('The session store', options.sessionStore);
  if (options.compaction) checkSpecificationVersion('The compaction strategy', options.compaction);
  const maxToolRoundtrips = options.maxToolRoundtrips ?? 10;
  if (!Number.isInteger(maxToolRoundtrips) || maxToolRoundtrips < 0)
    throw new ConfigurationError(`maxToolRoundtrips must be a non-negative integer, got ${maxToolRoundtrips}.`);
  const contextProviders = [...(options.contextProviders ?? [])];
  const seen = new Set<string>();
  for (const p of contextProviders) {
    checkId(p?.sourceId, 'sourceId of every context provider');
    if (seen.has(p.sourceId))
      throw new ConfigurationError(`Two context providers share the sourceId "${p.sourceId}"; give each a unique sourceId.`);
    if (RESERVED_SOURCE_IDS.has(p.sourceId)) throw new ConfigurationError(`The sourceId "${p.sourceId}" is reserved; choose another.`);
    checkSpecificationVersion(`Context provider "${p.sourceId}"`, p);
    seen.add(p.sourceId);
  }
  return { ...options, name: options.name ?? 'agent', contextProviders, maxToolRoundtrips };
}

/**
 * Checks that an implementation of a contract speaks a version this copy of `@ctx/core` runs
 * (absent means `'v1'`).
 * @throws ConfigurationError naming the version and what to do.
 */
export function checkSpecificationVersion(what: string, implementation: { readonly specificationVersion?: unknown }): void {
  const version = implementation.specificationVersion;
  if (version === undefined || version === 'v1') return;
  throw new ConfigurationError(
    `${what} implements specification ${JSON.stringify(version)}, but this copy of @ctx/core runs "v1": upgrade @ctx/core, or wrap it in a v1 adapter.`,
  );
}
