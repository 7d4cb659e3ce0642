import { checkInteger, checkOptionNames, checkPositiveNumber, optionNames } from '../backend/checks.js';
import { ConfigurationError, describe } from '../errors.js';
import type { Message } from '../messages/message.js';
import type { CompactionStrategy } from '../contracts/compaction-strategy.js';
import type { Content, FunctionResultContent } from '../contracts/message.js';
import type { Tokenizer } from '../contracts/tokenizer.js';
import { countTokens, defaultTokenizer, messageTokens } from '../tokens/token-cache.js';
import { flattenGroups, groupMessages, type MessageGroup, sentMessagesOf, splitProtected } from './message-groups.js';
import { withoutCompacted } from './service-compaction.js';
import { type CompactionTrigger, compactWhen } from './triggers.js';

/** Options every built-in strategy takes. */
export interface StrategyOptions {
  /** Run only when this fires. Default: whenever the strategy has something to do. */
  trigger?: CompactionTrigger;
}

function withTrigger(options: StrategyOptions, strategy: CompactionStrategy): CompactionStrategy {
  return options.trigger ? compactWhen(options.trigger, strategy) : strategy;
}

/** A built-in strategy's work on a conversation already grouped, returning the result with its groups. */
type GroupedCompact = (messages: readonly Message[], groups: MessageGroup[]) => { messages: Message[]; groups: MessageGroup[] };

/** The grouped form of built-in strategies without a trigger, so `tokenBudget` groups a conversation once, not once per strategy. */
const groupedForms = new WeakMap<CompactionStrategy, GroupedCompact>();

/** A built-in strategy from its grouped form. */
function grouped(options: StrategyOptions, run: GroupedCompact): CompactionStrategy {
  const strategy: CompactionStrategy = { compact: (messages) => run(messages, groupMessages(messages)).messages };
  if (!options.trigger) groupedForms.set(strategy, run);
  return withTrigger(options, strategy);
}

/**
 * Token counts per group (through the per-message cache), so dropping groups needs no recount. Only
 * what is sent counts: not the messages a service compaction item stands for.
 */
function groupTokens(tokenizer: Tokenizer, groups: readonly MessageGroup[]): { total: number; of: Map<MessageGroup, number> } {
  let total = tokenizer.countMessageTokens([]);
  const of = new Map<MessageGroup, number>();
  for (const g of groups) {
    let n = 0;
    for (const m of sentMessagesOf(g)) n += messageTokens(tokenizer, m);
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
  /**
   * Once a limit is crossed, cut down to this share of it, so the start of the conversation (and the
   * provider's prompt cache) then stays the same for several turns instead of shifting every turn.
   * Default 0.5; 1 cuts just enough.
   */
  target?: number;
  /** Counts `maxTokens`. Default: the character estimator. */
  tokenizer?: Tokenizer;
}

const TRUNCATION_OPTIONS = optionNames<TruncationOptions>()({
  trigger: true,
  maxMessages: true,
  maxTokens: true,
  target: true,
  tokenizer: true,
});

/**
 * Drops the oldest groups once the conversation passes `maxMessages` or `maxTokens`, down to
 * `target` of each limit. System messages and everything from the newest user turn on are always
 * kept, even if they alone exceed the limits.
 */
export function truncation(options: TruncationOptions): CompactionStrategy {
  checkOptionNames('truncation', options, TRUNCATION_OPTIONS);
  const { maxMessages, maxTokens } = options;
  if (maxMessages === undefined && maxTokens === undefined)
    throw new ConfigurationError('truncation: give maxMessages, maxTokens or both.');
  if (maxMessages !== undefined) checkInteger('truncation', 'maxMessages', maxMessages, 0);
  if (maxTokens !== undefined) checkInteger('truncation', 'maxTokens', maxTokens);
  const target = checkShare('truncation', 'target', options.target ?? 0.5);
  const tokenizer = options.tokenizer ?? defaultTokenizer();
  return grouped(options, (messages, groups) => {
    const { older } = splitProtected(groups);
    const tokens = maxTokens === undefined ? undefined : groupTokens(tokenizer, groups);
    const sent = (g: MessageGroup) => sentMessagesOf(g).length;
    let messageCount = groups.reduce((n, g) => n + sent(g), 0);
    let tokenCount = tokens?.total ?? 0;
    const within = (share: number) =>
      (maxMessages === undefined || messageCount <= Math.floor(maxMessages * share)) &&
      (maxTokens === undefined || tokenCount <= Math.floor(maxTokens * share));
    if (within(1)) return { messages: [...messages], groups };
    const dropped = new Set<MessageGroup>();
    for (const group of older) {
      if (within(target)) break;
      dropped.add(group);
      messageCount -= sent(group);
      if (tokens) tokenCount -= tokens.of.get(group)!;
    }
    if (dropped.size === 0) return { messages: [...messages], groups };
    const kept = groups.filter((g) => !dropped.has(g));
    return { messages: flattenGroups(kept), groups: kept };
  });
}

/** Options of `slidingWindow`. */
export interface SlidingWindowOptions extends StrategyOptions {
  /** Keep the newest this many groups (system messages do not count and are always kept). */
  maxGroups: number;
}

const SLIDING_WINDOW_OPTIONS = optionNames<SlidingWindowOptions>()({ trigger: true, maxGroups: true });

/** Keeps the newest `maxGroups` groups, and never less than the newest user turn and what follows it. */
export function slidingWindow(options: SlidingWindowOptions): CompactionStrategy {
  checkOptionNames('slidingWindow', options, SLIDING_WINDOW_OPTIONS);
  checkInteger('slidingWindow', 'maxGroups', options.maxGroups, 0);
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
  /** Characters of the start of each collapsed result that are kept, so the model keeps the gist. Default 160; 0 keeps none. */
  gistChars?: number;
  /**
   * Keep the full results findable: the tool messages collapsed go to the run's recall index
   * (`CompactOptions.archive`, which `CompactionProvider` sets when the run has a
   * `SemanticRecallProvider`) before they are collapsed, and the marker says the result can be
   * searched. When archiving fails nothing is collapsed (`archive-failed` is reported). Default false.
   */
  archive?: boolean;
}

/**
 * The collapsed form of a message's contents (null: nothing to collapse) per `minChars/gistChars`,
 * made once per `contents` array: every later call on the same history returns the same array, so it
 * sizes no result again and hits the per-message token cache instead of recounting each collapsed message.
 */
const collapsedByOptions = new Map<string, WeakMap<readonly Content[], Content[] | null>>();

const TOOL_RESULT_COLLAPSE_OPTIONS = optionNames<ToolResultCollapseOptions>()({
  trigger: true,
  keepRecent: true,
  includeCurrentTurn: true,
  minChars: true,
  gistChars: true,
  archive: true,
});

/**
 * Replaces the results of older tool exchanges with their first `gistChars` characters and a
 * marker that says what was removed (`[collapsed: 5,210 characters of search_docs result; the first
 * 160 follow]`). Calls and results stay paired.
 */
export function toolResultCollapse(options: ToolResultCollapseOptions = {}): CompactionStrategy {
  checkOptionNames('toolResultCollapse', options, TOOL_RESULT_COLLAPSE_OPTIONS);
  const keepRecent = checkInteger('toolResultCollapse', 'keepRecent', options.keepRecent ?? 1, 0);
  const minChars = checkInteger('toolResultCollapse', 'minChars', options.minChars ?? 200, 0);
  const gistChars = checkInteger('toolResultCollapse', 'gistChars', options.gistChars ?? 160, 0);
  const plain = collapseResults({ keepRecent, minChars, gistChars, includeCurrentTurn: options.includeCurrentTurn === true }, '');
  if (!options.archive) return grouped(options, plain);
  const byNote = new Map<string, GroupedCompact>();
  return withTrigger(options, {
    archives: true,
    async compact(messages, compactOptions) {
      const { archive, signal, report } = compactOptions;
      if (!archive) return plain(messages, groupMessages(messages)).messages;
      const note = archive.toolName
        ? `, archived: call the \`${archive.toolName}\` tool to search it for exact details`
        : ', archived: exact details are recalled when relevant';
      let run = byNote.get(note);
      if (!run)
        byNote.set(
          note,
          (run = collapseResults({ keepRecent, minChars, gistChars, includeCurrentTurn: options.includeCurrentTurn === true }, note)),
        );
      const out = run(messages, groupMessages(messages)).messages;
      const replaced = messages.filter((m, i) => out[i] !== m);
      if (!replaced.length) return out;
      try {
        await archive.store(replaced, signal ? { signal } : {});
      } catch (error) {
        if (signal?.aborted) throw error;
        report?.({
          code: 'archive-failed',
          message: `Archiving ${replaced.length} tool messages failed, so their results were not collapsed: ${describe(error)}`,
          error,
        });
        return [...messages];
      }
      return out;
    },
  });
}

/** The grouped form of `toolResultCollapse`; `note` follows the size in each marker. */
function collapseResults(
  options: { keepRecent: number; minChars: number; gistChars: number; includeCurrentTurn: boolean },
  note: string,
): GroupedCompact {
  const { keepRecent, minChars, gistChars } = options;
  const large = (c: Content): c is FunctionResultContent => c.type === 'function-result' && size(c) >= minChars && !isCollapsed(c);
  const key = `${minChars}/${gistChars}/${note}`;
  const made = collapsedByOptions.get(key) ?? new WeakMap<readonly Content[], Content[] | null>();
  collapsedByOptions.set(key, made);
  const collapsedContents = (contents: readonly Content[]): Content[] | null => {
    let out = made.get(contents);
    if (out === undefined) {
      out = contents.some(large) ? contents.map((c) => (large(c) ? collapse(c, gistChars, note) : c)) : null;
      made.set(contents, out);
    }
    return out;
  };
  return (messages, groups) => {
    const exchanges = groups.filter((g) => g.kind === 'tool-exchange');
    const current = options.includeCurrentTurn ? new Set<MessageGroup>() : new Set(splitProtected(groups).recent);
    const replaced = new Map<Message, Message>();
    // Collapsing keeps every call id and result id, so the groups stay the same with the new messages.
    const regrouped = new Map<MessageGroup, MessageGroup>();
    for (const g of exchanges.slice(0, Math.max(0, exchanges.length - keepRecent))) {
      if (current.has(g)) continue;
      let changed = false;
      const inGroup = g.messages.map((m) => {
        const contents = collapsedContents(m.contents);
        if (!contents) return m;
        changed = true;
        const collapsed = { ...m, contents };
        replaced.set(m, collapsed);
        return collapsed;
      });
      if (changed) regrouped.set(g, { ...g, messages: inGroup });
    }
    if (!replaced.size) return { messages: [...messages], groups };
    return { messages: messages.map((m) => replaced.get(m) ?? m), groups: groups.map((g) => regrouped.get(g) ?? g) };
  };
}

function resultText(c: FunctionResultContent): string {
  return typeof c.result === 'string' ? c.result : JSON.stringify(c.result);
}

function size(c: FunctionResultContent): number {
  return resultText(c).length;
}

function isCollapsed(c: FunctionResultContent): boolean {
  return typeof c.result === 'string' && c.result.startsWith('[collapsed:');
}

function collapse(c: FunctionResultContent, gistChars: number, note: string): FunctionResultContent {
  const text = resultText(c);
  const what = `${text.length.toLocaleString('en-US')} characters of ${c.name ?? 'tool'} result${note}`;
  const gist = text.slice(0, gistChars);
  return { ...c, result: gist ? `[collapsed: ${what}; the first ${gist.length} follow]\n${gist}…` : `[collapsed: ${what}]` };
}

/**
 * Removes reasoning from the turns before the newest user message, as reasoning models need it only
 * within the turn that produced it; a message left with no contents is dropped. The turn in progress
 * keeps its reasoning (a model continuing a tool loop may need it).
 */
export function pruneReasoning(options: StrategyOptions = {}): CompactionStrategy {
  return withTrigger(options, {
    compact(messages) {
      let cut = -1;
      for (let i = messages.length - 1; i >= 0; i--) {
        const m = messages[i]!;
        if (m.role === 'user' && !m.contents.some((c) => c.type === 'function-result')) {
          cut = i;
          break;
        }
      }
      const out: Message[] = [];
      let changed = false;
      messages.forEach((m, i) => {
        if (i >= cut || !m.contents.some((c) => c.type === 'reasoning')) return out.push(m);
        changed = true;
        const contents = m.contents.filter((c) => c.type !== 'reasoning');
        if (contents.length) out.push({ ...m, contents });
      });
      return changed ? out : [...messages];
    },
  });
}

/** Options of `tokenBudget`. */
export interface TokenBudgetOptions extends StrategyOptions {
  /** Compact once the messages pass this many tokens. */
  maxTokens: number;
  /**
   * Then compact down to this share of `maxTokens`, so the start of the conversation (and the
   * provider's prompt cache) stays the same for the turns it takes to grow back. Default 0.5; 1
   * compacts just enough.
   */
  target?: number;
  /** Default: the character estimator. */
  tokenizer?: Tokenizer;
  /**
   * Tried in order until the target holds. Default: collapse tool results of earlier turns, then
   * those of the turn in progress but the newest exchange; truncation always comes last.
   */
  strategies?: readonly CompactionStrategy[];
}

const TOKEN_BUDGET_OPTIONS = optionNames<TokenBudgetOptions>()({
  trigger: true,
  maxTokens: true,
  target: true,
  tokenizer: true,
  strategies: true,
});

/**
 * Past `maxTokens`, applies strategies in order until the conversation fits `target` of it, then
 * truncates as a last resort. Leaves a conversation within `maxTokens` untouched. System messages
 * and the newest user turn (with the tool exchanges after it) are never dropped: when they alone
 * exceed the budget, the result is over budget too, and a list over the model's window then fails
 * at the model call with `ContextWindowExceededError`.
 */
export function tokenBudget(options: TokenBudgetOptions): CompactionStrategy {
  checkOptionNames('tokenBudget', options, TOKEN_BUDGET_OPTIONS);
  const maxTokens = checkInteger('tokenBudget', 'maxTokens', options.maxTokens);
  const goal = Math.floor(maxTokens * checkShare('tokenBudget', 'target', options.target ?? 0.5));
  const tokenizer = options.tokenizer ?? defaultTokenizer();
  const last = truncation({ maxTokens: Math.max(1, goal), target: 1, tokenizer });
  const strategies = options.strategies ?? [toolResultCollapse(), toolResultCollapse({ includeCurrentTurn: true })];
  return withTrigger(options, {
    ...(strategies.some((s) => s.archives) ? { archives: true } : {}),
    async compact(messages, context) {
      let tokens = countTokens(tokenizer, withoutCompacted(messages));
      if (tokens <= maxTokens) return [...messages];
      let current = [...messages];
      /** The groups of `current`, kept while built-in strategies run back to back. */
      let groups: MessageGroup[] | undefined;
      for (const strategy of [...strategies, last]) {
        if (tokens <= goal) break;
        const form = groupedForms.get(strategy);
        if (form) ({ messages: current, groups } = form(current, groups ?? groupMessages(current)));
        else {
          current = await strategy.compact(current, context);
          groups = undefined;
        }
        if (strategy !== last) tokens = countTokens(tokenizer, withoutCompacted(current));
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
  /** Compact down to this share of the usable window (at most `threshold`). Default 0.4. */
  target?: number;
  /** Default: the character estimator; use `@ctx/openai/tokenizer` for exact counts. */
  tokenizer?: Tokenizer;
  /** As in `tokenBudget`. */
  strategies?: readonly CompactionStrategy[];
}

const CONTEXT_WINDOW_OPTIONS = optionNames<ContextWindowOptions>()({
  contextWindow: true,
  reserveTokens: true,
  threshold: true,
  target: true,
  tokenizer: true,
  strategies: true,
});

/** Keeps a conversation inside a model's window: past `threshold` of it, compacts down to `target`. */
export function contextWindow(options: ContextWindowOptions): CompactionStrategy {
  checkOptionNames('contextWindow', options, CONTEXT_WINDOW_OPTIONS);
  const window = checkInteger('contextWindow', 'contextWindow', options.contextWindow);
  const usable = window - checkInteger('contextWindow', 'reserveTokens', options.reserveTokens ?? 4096, 0);
  if (usable <= 0)
    throw new ConfigurationError(`contextWindow: reserveTokens must be smaller than the window (${window}); lower reserveTokens.`);
  const threshold = checkShare('contextWindow', 'threshold', options.threshold ?? 0.8);
  const target = checkShare('contextWindow', 'target', options.target ?? 0.4);
  if (target > threshold)
    throw new ConfigurationError(
      `contextWindow: target (${target}) must not be above threshold (${threshold}); it is the level compaction cuts down to.`,
    );
  return tokenBudget({
    maxTokens: Math.max(1, Math.floor(usable * threshold)),
    target: target / threshold,
    tokenizer: options.tokenizer ?? defaultTokenizer(),
    ...(options.strategies ? { strategies: options.strategies } : {}),
  });
}

/** Checks a share of a limit: a number above 0 and at most 1. */
function checkShare(owner: string, name: string, value: unknown): number {
  const share = checkPositiveNumber(owner, name, value);
  if (share > 1) throw new ConfigurationError(`${owner}: ${name} must be a share of the limit, above 0 and at most 1; got ${share}.`);
  return share;
}
