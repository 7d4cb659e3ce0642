import { checkOptionNames, optionNames } from '../backend/checks.js';
import { ConfigurationError } from '../errors.js';
import { HistoryProvider } from '../history/history-provider.js';
import { Message } from '../messages/message.js';
import type { JsonObject } from '../contracts/json.js';
import type { ContextProvider, ProviderRunArgs, SessionContext } from '../contracts/run-view.js';
import {
  type BudgetItem,
  type BudgetPolicy,
  budgetReportOf,
  countToolTokens,
  fitToBudget,
  priorityOf,
  recordBudget,
  resolveBudget,
  type ResolvedBudget,
} from './budget.js';
import { type ProviderGate, RunGate } from './gate.js';
import { findProvider, wrapProvider } from './wrap-provider.js';

/** The policies `withPolicies` adds to a provider. */
export interface ProviderPolicies {
  /** Gating: evaluated once per run before the provider's hooks; `false` and none of them run. */
  when?: ProviderGate;
  /** A token cap on what the provider adds before the model call. */
  budget?: BudgetPolicy;
}

const POLICY_NAMES = optionNames<ProviderPolicies>()({ when: true, budget: true });

/**
 * Gives any provider, yours or a third party's, the `when` and `budget` policies. Returns a
 * provider (`wrapProvider`) that is the same provider for every member but its run hooks: the
 * same `sourceId`, `onError`, `stability` and `timeoutMs`, so it keeps the same state slot and
 * attribution, and every other hook (`onTurnStored`, `flush`, `mergeState`, `validateState`, the
 * session, rewind, fork and user-data hooks), none of them gated. Capabilities of the provider (the
 * recall archive compaction uses) are found through it.
 *
 * - `when`: decided in `beforeRun` (or before `wrap`); when it declines, the inner provider's hooks
 *   do not run in that run, its `afterRun` included.
 * - `budget`: right after the inner provider's `beforeRun` (or when its `wrap` calls `next()`), what
 *   it added is weighed: each message, instructions text and tool is one item, counted with the
 *   budget's tokenizer (a tool by the JSON of its name, description and parameters). If the total is
 *   over `maxTokens`, the least valuable items are removed until it fits. An item's value is
 *   `budget.priority(item)`, else `metadata.priority` of a message or tool when it is a number, else 0;
 *   on equal values the item added later goes first, and messages go before tools before instructions.
 *   The outcome is recorded for `auditContext`.
 *
 * @throws ConfigurationError for a history provider (wrapping would hide it from the default-history
 *   rule; bound history with `maxMessages` or compaction), or an invalid budget.
 */
export function withPolicies<TState extends JsonObject = JsonObject>(
  provider: ContextProvider<TState>,
  policies: ProviderPolicies,
): ContextProvider<TState> {
  const { sourceId } = provider;
  checkOptionNames(`withPolicies("${sourceId}")`, policies, POLICY_NAMES);
  if (findProvider([provider], HistoryProvider.isInstance)) {
    throw new ConfigurationError(
      `withPolicies cannot wrap history provider "${sourceId}": the agent would no longer see it as history and would add a default one. ` +
        'Gate loading with `loadMessages` or an overridden `shouldLoad`, and bound it with `maxMessages` or compaction.',
    );
  }
  const budget = resolveBudget(`withPolicies("${sourceId}")`, policies.budget);
  const gate = new RunGate(policies.when);
  if (provider.wrap) {
    return wrapProvider(provider, {
      wrap: async (args, next) => {
        if (!(await gate.enter(args))) return next();
        await provider.wrap!(args, async () => {
          if (budget) enforceBudget(sourceId, args.context, budget);
          await next();
        });
      },
    });
  }
  const overrides: Partial<ContextProvider<TState>> = {};
  if (provider.beforeRun || gate.gated || budget) {
    overrides.beforeRun = async (args: ProviderRunArgs<TState>) => {
      if (!(await gate.enter(args))) return;
      await provider.beforeRun?.(args);
      if (budget) enforceBudget(sourceId, args.context, budget);
    };
  }
  if (provider.afterRun) {
    overrides.afterRun = async (args: ProviderRunArgs<TState>) => {
      if (gate.isOpen(args.context)) await provider.afterRun!(args);
    };
  }
  return wrapProvider(provider, overrides);
}

function toolSource(metadata: JsonObject | undefined): string | undefined {
  const ctx = metadata?.ctx as { sourceId?: unknown } | undefined;
  return typeof ctx?.sourceId === 'string' ? ctx.sourceId : undefined;
}

/** Trims what `sourceId` added to `context` to the budget, lowest value first. */
function enforceBudget(sourceId: string, context: SessionContext, budget: ResolvedBudget): void {
  const { tokenizer, maxTokens } = budget;
  // Built in the order ties are broken: on equal value, later items go first.
  const items: BudgetItem[] = [];
  for (const i of context.instructions)
    if (i.sourceId === sourceId) items.push({ kind: 'instructions', text: i.text, tokens: tokenizer.countTokens(i.text) });
  for (const tool of context.tools)
    if (toolSource(tool.metadata) === sourceId) items.push({ kind: 'tool', tool, tokens: countToolTokens(tool, tokenizer) });
  for (const message of context.contextMessages.get(sourceId) ?? [])
    items.push({ kind: 'message', message, tokens: tokenizer.countMessageTokens([message]) });
  let total = 0;
  for (const item of items) total += item.tokens;
  if (total <= maxTokens) {
    if (items.length && !budgetReportOf(context.metadata, sourceId))
      recordBudget(context.metadata, sourceId, { maxTokens, tokens: total, dropped: 0 });
    return;
  }
  const priority = budget.priority ?? defaultValue;
  const fit = fitToBudget(items, { maxTokens, tokensOf: (item) => item.tokens, priority: (item) => priority(item) });
  context.removeSource(sourceId);
  const instructions: string[] = [];
  for (const item of fit.kept) if (item.kind === 'instructions') instructions.push(item.text);
  context.extendInstructions(sourceId, instructions);
  context.extendTools(
    sourceId,
    fit.kept.flatMap((item) => (item.kind === 'tool' ? [item.tool] : [])),
  );
  for (const item of fit.kept) {
    if (item.kind === 'message') context.extendMessages(sourceId, [item.message], Message.source(item.message)?.sourceType ?? 'context');
  }
  const earlier = budgetReportOf(context.metadata, sourceId)?.dropped ?? 0; // a built-in provider's own trimming
  recordBudget(context.metadata, sourceId, { maxTokens, tokens: fit.tokens, dropped: earlier + fit.dropped.length });
}

function defaultValue(item: BudgetItem): number {
  if (item.kind === 'instructions') return 0;
  return priorityOf(item.kind === 'message' ? item.message : item.tool) ?? 0;
}
