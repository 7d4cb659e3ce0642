import { checkOptionNames, optionNames } from '../backend/checks.js';
import { ConfigurationError } from '../errors.js';
import { isPlainObject } from '../messages/json.js';
import type { Message } from '../messages/message.js';
import type { JsonObject } from '../contracts/json.js';
import type { Tool } from '../contracts/run-view.js';
import type { Tokenizer } from '../contracts/tokenizer.js';
import { createCharacterTokenizer } from '../tokens/character-tokenizer.js';

/**
 * A token cap on what one provider contributes to a run (its messages, instructions and tools).
 * What goes over the cap is dropped, lowest value first; the kept items are always the most
 * valuable ones (see `fitToBudget`).
 */
export interface BudgetPolicy {
  /** The most tokens the provider's contribution may take. A non-negative integer. */
  maxTokens: number;
  /** Counts the tokens. Default `createCharacterTokenizer()` (4 characters a token, 4 tokens a message). */
  tokenizer?: Tokenizer;
  /**
   * The value of one contribution (higher is kept longer). Used by `withPolicies` only; built-in
   * providers rank their own entries. Default: `metadata.priority` of a message or tool when it is
   * a finite number, else 0 (see `withPolicies` for how ties are broken).
   */
  priority?: (item: BudgetItem) => number;
}

/** One contribution of a provider, as `withPolicies` weighs it against a budget. */
export type BudgetItem =
  | {
      /** A message. */
      kind: 'message';
      /** The message. */
      message: Message;
      /** Its tokens. */
      tokens: number;
    }
  | {
      /** An instructions text. */
      kind: 'instructions';
      /** The text. */
      text: string;
      /** Its tokens. */
      tokens: number;
    }
  | {
      /** A tool. */
      kind: 'tool';
      /** The tool. */
      tool: Tool;
      /** Its tokens. */
      tokens: number;
    };

/** How `fitToBudget` weighs items. */
export interface FitToBudgetOptions<T> {
  /** The cap. */
  maxTokens: number;
  /** Tokens of one item. */
  tokensOf: (item: T) => number;
  /** Value of one item; higher is kept longer. Default: the item's position (earlier is worth more). */
  priority?: (item: T, index: number) => number;
}

/** What `fitToBudget` kept and dropped, each in the original order. */
export interface BudgetFit<T> {
  /** What fits, in ranking order. */
  kept: T[];
  /** What was left out. */
  dropped: T[];
  /** Tokens of the kept items. */
  tokens: number;
}

/**
 * Keeps the most valuable items whose tokens sum to at most `maxTokens`, dropping the least
 * valuable first. Items are ranked by value, highest first, ties by position (earlier first); the
 * kept set is the longest prefix of that ranking that fits, so a dropped item is never worth more
 * than a kept one (a large valuable item that does not fit also stops the smaller ones below it).
 */
export function fitToBudget<T>(items: readonly T[], options: FitToBudgetOptions<T>): BudgetFit<T> {
  const { maxTokens, tokensOf } = options;
  const priority = options.priority ?? ((_item: T, index: number) => -index);
  const ranked = items.map((item, index) => ({ item, index, value: priority(item, index) }));
  ranked.sort((a, b) => b.value - a.value || a.index - b.index);
  const keep = new Set<number>();
  let tokens = 0;
  for (const r of ranked) {
    const t = tokensOf(r.item);
    if (tokens + t > maxTokens) break;
    tokens += t;
    keep.add(r.index);
  }
  const kept: T[] = [];
  const dropped: T[] = [];
  items.forEach((item, index) => (keep.has(index) ? kept : dropped).push(item));
  return { kept, dropped, tokens };
}

/**
 * The longest prefix of `ranked` (most valuable first) whose rendering fits `maxTokens`, measured
 * by `measure` on the whole prefix (so headers and separators are counted exactly). Returns its length.
 */
export function fitPrefix<T>(ranked: readonly T[], maxTokens: number, measure: (prefix: readonly T[]) => number): number {
  let k = 0;
  while (k < ranked.length && measure(ranked.slice(0, k + 1)) <= maxTokens) k++;
  return k;
}

/** Tokens of a tool definition as sent to a model: its name, description and parameters as JSON. */
export function countToolTokens(tool: Pick<Tool, 'name' | 'description' | 'parameters'>, tokenizer: Tokenizer): number {
  return tokenizer.countTokens(JSON.stringify({ name: tool.name, description: tool.description ?? '', parameters: tool.parameters }));
}

/**
 * The value a message or tool declares for budgets: `metadata.priority` when it is a finite
 * number, else `undefined`. Providers set it so `withPolicies({ budget })` trims their lowest-value
 * items first.
 */
export function priorityOf(item: { metadata?: JsonObject | undefined }): number | undefined {
  const p = isPlainObject(item.metadata) ? item.metadata.priority : undefined;
  return typeof p === 'number' && Number.isFinite(p) ? p : undefined;
}

/** A checked budget with its tokenizer resolved (internal). */
export interface ResolvedBudget {
  maxTokens: number;
  tokenizer: Tokenizer;
  priority: ((item: BudgetItem) => number) | undefined;
}

const BUDGET_NAMES = optionNames<BudgetPolicy>()({ maxTokens: true, tokenizer: true, priority: true });

/**
 * Checks a budget option and fills in the default tokenizer (internal).
 * @throws ConfigurationError when `maxTokens` is not a non-negative integer.
 */
export function resolveBudget(owner: string, budget: BudgetPolicy | undefined): ResolvedBudget | undefined {
  if (budget === undefined) return undefined;
  checkOptionNames(`${owner}: budget`, budget, BUDGET_NAMES);
  if (!Number.isInteger(budget.maxTokens) || budget.maxTokens < 0) {
    throw new ConfigurationError(`${owner}: budget.maxTokens must be a non-negative integer, got ${String(budget.maxTokens)}.`);
  }
  return { maxTokens: budget.maxTokens, tokenizer: budget.tokenizer ?? createCharacterTokenizer(), priority: budget.priority };
}

/** How a budget was applied to one provider in one run, kept in `context.metadata['ctx.budget'][sourceId]`. */
export interface BudgetReport {
  /** The cap. */
  maxTokens: number;
  /** Tokens of what was kept. */
  tokens: number;
  /** How many items (messages, instructions, tools, or a provider's own entries) were dropped. */
  dropped: number;
}

const BUDGET_KEY = 'ctx.budget';

/** Records how a budget was applied, for `auditContext` (internal). */
export function recordBudget(metadata: Record<string, unknown>, sourceId: string, report: BudgetReport): void {
  const all = (metadata[BUDGET_KEY] ??= Object.create(null)) as Record<string, BudgetReport>;
  all[sourceId] = report;
}

/** How a budget was applied to `sourceId` in the run `metadata` belongs to, if one was. */
export function budgetReportOf(metadata: Readonly<Record<string, unknown>>, sourceId: string): BudgetReport | undefined {
  const all = metadata[BUDGET_KEY] as Record<string, BudgetReport> | undefined;
  return all?.[sourceId];
}
