import { ConfigurationError } from '../errors.js';
import type { Message } from '../messages/message.js';
import type { CompactionStrategy } from '../spec/compaction-strategy.js';
import type { FunctionResultContent } from '../spec/message.js';
import type { Tokenizer } from '../spec/tokenizer.js';
import { countTokens, defaultTokenizer, messageTokens } from '../tokens/token-cache.js';
import { flattenGroups, groupMessages, type MessageGroup, splitProtected } from './message-groups.js';
import { type CompactionTrigger, compactWhen } from './triggers.js';

/** Options every built-in strategy takes. */
export interface StrategyOptions {
  /** Run only when this fires. Default: whenever the strategy has something to do. */
  trigger?: CompactionTrigger;
}

function withTrigger(options: StrategyOptions, strategy: CompactionStrategy): CompactionStrategy {
  return options.trigger ? compactWhen(options.trigger, strategy) : strategy;
}

/** Token counts per group (through the per-message cache), so dropping groups needs no recount. */
function groupTokens(tokenizer: Tokenizer, groups: readonly MessageGroup[]): { total: number; of: Map<MessageGroup, number> } {
  let total = tokenizer.countMessageTokens([]);
  const of = new Map<MessageGroup, number>();
  for (const g of groups) {
    let n = 0;
    for (const m of g.messages) n += messageTokens(tokenizer, m);
    of.set(g, n);
    total += n;
  }
  return { total, of };
}

/** Keeps `keep` groups (by identity) in their original order. */
function keepOnly(groups: readonly MessageGroup[], keep: ReadonlySet<MessageGroup>): Message[] {
  return flattenGroups(groups.filter((g) => keep.has(g)));
}

/** Options of `truncation`. */
export interface TruncationOptions extends StrategyOptions {
  /** Keep at most this many messages. */
  maxMessages?: number;
  /** Keep at most this many tokens. */
  maxTokens?: number;
  /** Counts `maxTokens`. Default: the character estimator. */
  tokenizer?: Tokenizer;
}

/**
 * Drops the oldest groups until the conversation fits `maxMessages` and `maxTokens`. System
 * messages and everything from the newest user turn on are always kept, even if they alone exceed
 * the limits.
 */
export function truncation(options: TruncationOptions): CompactionStrategy {
  const { maxMessages, maxTokens } = options;
  const tokenizer = options.tokenizer ?? defaultTokenizer();
  return withTrigger(options, {
    compact(messages) {
      const groups = groupMessages(messages);
      const { older } = splitProtected(groups);
      const tokens = maxTokens === undefined ? undefined : groupTokens(tokenizer, groups);
      let messageCount = messages.length;
      let tokenCount = tokens?.total ?? 0;
      const fits = () => (maxMessages === undefined || messageCount <= maxMessages) && (maxTokens === undefined || tokenCount <= maxTokens);
      const dropped = new Set<MessageGroup>();
      for (const group of older) {
        if (fits()) break;
        dropped.add(group);
        messageCount -= group.messages.length;
        if (tokens) tokenCount -= tokens.of.get(group)!;
      }
      if (dropped.size === 0) return [...messages];
      return keepOnly(groups, new Set(groups.filter((g) => !dropped.has(g))));
    },
  });
}

/** Options of `slidingWindow`. */
export interface SlidingWindowOptions extends StrategyOptions {
  /** Keep the newest this many groups (system messages do not count and are always kept). */
  maxGroups: number;
}

/** Keeps the newest `maxGroups` groups, and never less than the newest user turn and what follows it. */
export function slidingWindow(options: SlidingWindowOptions): CompactionStrategy {
  return withTrigger(options, {
    compact(messages) {
      const groups = groupMessages(messages);
      const { system, older, recent } = splitProtected(groups);
      const room = Math.max(0, options.maxGroups - recent.length);
      if (older.length <= room) return [...messages];
      return keepOnly(groups, new Set([...system, ...older.slice(older.length - room), ...recent]));
    },
  });
}

/** Options of `toolResultCollapse`. */
export interface ToolResultCollapseOptions extends StrategyOptions {
  /** The newest tool exchanges left intact. Default 1. */
  keepRecent?: number;
  /**
   * Also collapse earlier tool exchanges of the turn in progress (after the newest user message).
   * Default false: the model is still working with them.
   */
  includeCurrentTurn?: boolean;
  /** Results shorter than this (as JSON text) are left alone. Default 200 characters. */
  minChars?: number;
}

/**
 * Replaces the results of older tool exchanges with a short marker that says what was removed
 * (`[collapsed: 5,210 characters of search_docs result]`). Calls and results stay paired.
 */
export function toolResultCollapse(options: ToolResultCollapseOptions = {}): CompactionStrategy {
  const keepRecent = options.keepRecent ?? 1;
  const minChars = options.minChars ?? 200;
  return withTrigger(options, {
    compact(messages) {
      const groups = groupMessages(messages);
      const exchanges = groups.filter((g) => g.kind === 'tool-exchange');
      const current = options.includeCurrentTurn ? new Set<MessageGroup>() : new Set(splitProtected(groups).recent);
      const collapsible = new Set(exchanges.slice(0, Math.max(0, exchanges.length - keepRecent)).filter((g) => !current.has(g)));
      let changed = false;
      const out = groups.flatMap((g) => {
        if (!collapsible.has(g)) return g.messages;
        return g.messages.map((m) => {
          if (!m.contents.some((c) => c.type === 'function-result' && size(c) >= minChars)) return m;
          changed = true;
          return { ...m, contents: m.contents.map((c) => (c.type === 'function-result' && size(c) >= minChars ? collapse(c) : c)) };
        });
      });
      return changed ? out : [...messages];
    },
  });
}

function size(c: FunctionResultContent): number {
  return typeof c.result === 'string' ? c.result.length : JSON.stringify(c.result).length;
}

function collapse(c: FunctionResultContent): FunctionResultContent {
  if (typeof c.result === 'string' && c.result.startsWith('[collapsed:')) return c;
  return { ...c, result: `[collapsed: ${size(c).toLocaleString('en-US')} characters of ${c.name ?? 'tool'} result]` };
}

/** Options of `tokenBudget`. */
export interface TokenBudgetOptions extends StrategyOptions {
  maxTokens: number;
  /** Default: the character estimator. */
  tokenizer?: Tokenizer;
  /**
   * Tried in order until the budget holds. Default: collapse tool results of earlier turns, then
   * those of the turn in progress but the newest exchange; truncation always comes last.
   */
  strategies?: readonly CompactionStrategy[];
}

/**
 * Applies strategies in order until the conversation fits `maxTokens`, then truncates as a last
 * resort. Leaves a conversation already within budget untouched.
 */
export function tokenBudget(options: TokenBudgetOptions): CompactionStrategy {
  const tokenizer = options.tokenizer ?? defaultTokenizer();
  const last = truncation({ maxTokens: options.maxTokens, tokenizer });
  const strategies = options.strategies ?? [toolResultCollapse(), toolResultCollapse({ includeCurrentTurn: true })];
  return withTrigger(options, {
    async compact(messages, context) {
      let current = [...messages];
      for (const strategy of [...strategies, last]) {
        if (countTokens(tokenizer, current) <= options.maxTokens) break;
        current = await strategy.compact(current, context);
      }
      return current;
    },
  });
}

/** Options of `contextWindow`. */
export interface ContextWindowOptions {
  /** The model's context window in tokens, e.g. 128000. */
  contextWindow: number;
  /** Tokens kept free for the answer (and for instructions and tools, which are not messages). Default 4096. */
  reserveTokens?: number;
  /** Compact when the messages pass this share of the usable window. Default 0.8. */
  threshold?: number;
  /** Compact down to this share of the usable window. Default 0.6. */
  target?: number;
  /** Default: the character estimator; use `@ctx/openai/tokenizer` for exact counts. */
  tokenizer?: Tokenizer;
  /** As in `tokenBudget`. */
  strategies?: readonly CompactionStrategy[];
}

/** Keeps a conversation inside a model's window: past `threshold` of it, compacts down to `target`. */
export function contextWindow(options: ContextWindowOptions): CompactionStrategy {
  const usable = options.contextWindow - (options.reserveTokens ?? 4096);
  if (usable <= 0)
    throw new ConfigurationError(
      `contextWindow: reserveTokens must be smaller than the window (${options.contextWindow}); lower reserveTokens.`,
    );
  const tokenizer = options.tokenizer ?? defaultTokenizer();
  return tokenBudget({
    maxTokens: Math.floor(usable * (options.target ?? 0.6)),
    tokenizer,
    trigger: { tokens: Math.floor(usable * (options.threshold ?? 0.8)), tokenizer },
    ...(options.strategies ? { strategies: options.strategies } : {}),
  });
}
