import { checkId, checkOptionNames, checkPositiveNumber, optionNames } from '../backend/checks.js';
import { ConfigurationError } from '../errors.js';
import { describeValue } from '../messages/json.js';
import type { ContextProvider } from '../contracts/run-view.js';
import { checkUniqueToolNames, compileToolChecks } from '../tools/tool-validator.js';
import type { AgentOptions } from './agent.js';
import { type CheckedLimits, checkLimits } from './limits.js';
import { type CheckedRunningTurns, checkRunningTurns } from './running-turns.js';

/** Source ids the engine itself uses for attribution. */
const RESERVED_SOURCE_IDS = new Set(['agent', 'input', 'response']);

/** `AgentOptions` checked, with defaults filled in. */
export interface CheckedAgentOptions extends AgentOptions {
  name: string;
  /** The `name` the agent was given, if any: its response messages carry it as `authorName`. */
  authorName: string | undefined;
  contextProviders: readonly ContextProvider[];
  maxToolRoundtrips: number;
  persistence: 'run' | 'model-call';
  limits: CheckedLimits;
  runningTurns: CheckedRunningTurns;
}

const AGENT_OPTIONS = optionNames<AgentOptions>()({
  client: true,
  name: true,
  instructions: true,
  tools: true,
  toolValidator: true,
  contextProviders: true,
  sessionStore: true,
  runningTurns: true,
  compaction: true,
  maxToolRoundtrips: true,
  providerTimeoutMs: true,
  persistence: true,
  redact: true,
  limits: true,
  onEvent: true,
});

/**
 * Checks what `createAgent` was given.
 * @throws ConfigurationError for a missing client, a bad `maxToolRoundtrips`, `persistence`, `redact`, `limits` or `runningTurns`, duplicate or reserved
 *   source ids, two tools with one name, a `toolValidator` that cannot compile a tool's schema, or
 *   a contract version this copy of `@ctx/core` does not implement.
 */
export function checkAgentOptions(options: AgentOptions): CheckedAgentOptions {
  checkOptionNames('createAgent', options, AGENT_OPTIONS);
  const { client } = options;
  if (!client || typeof client.getResponse !== 'function')
    throw new ConfigurationError('createAgent needs a `client` implementing ChatClient.');
  checkSpecificationVersion('The chat client', client);
  if (options.sessionStore) checkSpecificationVersion('The session store', options.sessionStore);
  if (options.compaction) checkSpecificationVersion('The compaction strategy', options.compaction);
  const maxToolRoundtrips = options.maxToolRoundtrips ?? 10;
  if (!Number.isInteger(maxToolRoundtrips) || maxToolRoundtrips < 0)
    throw new ConfigurationError(`maxToolRoundtrips must be a non-negative integer, got ${maxToolRoundtrips}.`);
  if (options.providerTimeoutMs !== undefined) checkPositiveNumber('createAgent', 'providerTimeoutMs', options.providerTimeoutMs);
  const persistence = options.persistence ?? 'run';
  if (persistence !== 'run' && persistence !== 'model-call')
    throw new ConfigurationError(`createAgent: persistence must be 'run' or 'model-call', got ${JSON.stringify(persistence)}.`);
  if (options.redact !== undefined && typeof options.redact !== 'function') {
    throw new ConfigurationError(
      `createAgent: redact must be a function (messages, info) => messages, got ${describeValue(options.redact)}.`,
    );
  }
  const limits = checkLimits(options.limits);
  const runningTurns = checkRunningTurns(options.runningTurns);
  checkTools(options);
  const contextProviders = checkContextProviders(options.contextProviders ?? []);
  return {
    ...options,
    name: options.name ?? 'agent',
    authorName: options.name,
    contextProviders,
    maxToolRoundtrips,
    persistence,
    limits,
    runningTurns,
  };
}

/**
 * Checks a pipeline: the agent's, or one run's (`agent.run(input, { contextProviders })`).
 * @throws ConfigurationError for a list that is not an array, duplicate, blank or reserved source
 *   ids, or a contract version this copy of `@ctx/core` does not implement.
 */
export function checkContextProviders(providers: readonly ContextProvider[]): readonly ContextProvider[] {
  if (!Array.isArray(providers)) throw new ConfigurationError('contextProviders must be an array of context providers.');
  const seen = new Set<string>();
  for (const p of providers) {
    checkId(p?.sourceId, 'sourceId of every context provider');
    if (seen.has(p.sourceId))
      throw new ConfigurationError(`Two context providers share the sourceId "${p.sourceId}"; give each a unique sourceId.`);
    if (RESERVED_SOURCE_IDS.has(p.sourceId)) throw new ConfigurationError(`The sourceId "${p.sourceId}" is reserved; choose another.`);
    checkSpecificationVersion(`Context provider "${p.sourceId}"`, p);
    if (p.timeoutMs !== undefined) checkPositiveNumber(`Context provider "${p.sourceId}"`, 'timeoutMs', p.timeoutMs);
    if (p.stability !== undefined && p.stability !== 'stable' && p.stability !== 'per-run')
      throw new ConfigurationError(
        `Context provider "${p.sourceId}": stability must be 'stable' or 'per-run', got ${JSON.stringify(p.stability)}.`,
      );
    seen.add(p.sourceId);
  }
  return [...providers];
}

/** The agent's tools: a list of unique names, each schema compiled by the `toolValidator` if there is one. */
function checkTools(options: AgentOptions): void {
  const { tools = [], toolValidator } = options;
  if (!Array.isArray(tools)) throw new ConfigurationError('createAgent: `tools` must be an array of tools from defineTool.');
  tools.forEach((tool, i) => {
    if (typeof tool?.name !== 'string') throw new ConfigurationError(`createAgent: tools[${i}] has no name; define tools with defineTool.`);
  });
  checkUniqueToolNames(tools, 'createAgent({ tools })');
  if (toolValidator === undefined) return;
  if (typeof toolValidator?.compile !== 'function') {
    throw new ConfigurationError(
      'createAgent: `toolValidator` must implement ToolValidator (a `compile` method), e.g. jsonSchemaValidator() from @ctx/core/json-schema.',
    );
  }
  checkSpecificationVersion('The tool validator', toolValidator);
  compileToolChecks(tools, toolValidator);
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
