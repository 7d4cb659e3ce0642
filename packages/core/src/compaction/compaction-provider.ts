import { checkOptionNames, optionNames } from '../backend/checks.js';
import { ConfigurationError } from '../errors.js';
import type { HistoryProvider } from '../history/history-provider.js';
import type { Message } from '../messages/message.js';
import { SemanticRecallProvider } from '../recall/semantic-recall-provider.js';
import type { CompactionArchive, CompactionStrategy, CompactOptions } from '../contracts/compaction-strategy.js';
import { findProvider, historiesIn } from '../policies/wrap-provider.js';
import type { ContextProvider, ProviderRunArgs } from '../contracts/run-view.js';
import { dropLeadingResults } from './message-groups.js';
import { runCompaction } from './run-compaction.js';

/** Options of `CompactionProvider`. */
export interface CompactionProviderOptions {
  /** How the history is compacted: `truncation`, `summarization`, or your own `CompactionStrategy`. */
  strategy: CompactionStrategy;
  /**
   * When it compacts. `'before-load'` (default): before the model call, on what the history loaded;
   * place it after the history provider. `'after-store'`: at the end of each run, once the history
   * provider has stored the turn, so stored history meets the policy between runs; place it before
   * the history provider (hooks run on the way out in reverse order), which must implement
   * `replaceMessages`.
   */
  when?: 'before-load' | 'after-store';
  /** Default `compaction`. */
  sourceId?: string;
  /**
   * The history to compact. Default: the first history provider of the run that loads (the
   * agent's default in-memory history when the agent added it).
   */
  history?: HistoryProvider;
  /**
   * Write the compacted history back (when the history provider implements `replaceMessages`).
   * Default true. A store-only audit provider is never touched. Always true for `'after-store'`.
   */
  rewriteStoredHistory?: boolean;
  /** What a failing history read or write does. Default `'throw'`. A failing strategy never fails the run. */
  onError?: 'throw' | 'skip';
}

const COMPACTION_PROVIDER_OPTIONS = optionNames<CompactionProviderOptions>()({
  strategy: true,
  when: true,
  sourceId: true,
  history: true,
  rewriteStoredHistory: true,
  onError: true,
});

/**
 * Compaction at the run boundary. Before the model call (`when: 'before-load'`) it compacts the
 * stored history and writes the result back through the history provider's `replaceMessages` (so a
 * summary is made once and reused by later runs), then gives the model the compacted window.
 * Without `replaceMessages` (or with `rewriteStoredHistory: false`) it compacts only the loaded
 * history the model sees. With `when: 'after-store'` it compacts what is stored once the turn is.
 * A strategy that fails (a summarizer that is down, a blank summary) changes nothing and is
 * reported as a `compaction-failed` or `summary-failed` diagnostic.
 */
export class CompactionProvider implements ContextProvider {
  readonly specificationVersion = 'v1';
  readonly sourceId: string;
  readonly onError: 'throw' | 'skip';
  readonly #strategy: CompactionStrategy;
  readonly #history: HistoryProvider | undefined;
  readonly #rewrite: boolean;
  readonly #afterStore: boolean;

  constructor(options: CompactionProviderOptions) {
    checkOptionNames('CompactionProvider', options, COMPACTION_PROVIDER_OPTIONS);
    if (typeof options?.strategy?.compact !== 'function')
      throw new ConfigurationError('CompactionProvider: strategy must be a CompactionStrategy (an object with compact).');
    if (options.when !== undefined && options.when !== 'before-load' && options.when !== 'after-store')
      throw new ConfigurationError(`CompactionProvider: when must be 'before-load' or 'after-store', got ${JSON.stringify(options.when)}.`);
    this.sourceId = options.sourceId ?? 'compaction';
    this.onError = options.onError ?? 'throw';
    this.#strategy = options.strategy;
    this.#history = options.history;
    this.#afterStore = options.when === 'after-store';
    this.#rewrite = this.#afterStore || (options.rewriteStoredHistory ?? true);
  }

  async beforeRun(args: ProviderRunArgs): Promise<void> {
    const { context, session, signal, report } = args;
    const history = this.#historyOf(args);
    if (history?.replaceMessages && this.#rewrite) this.#archiveOf(args);
    if (this.#afterStore) {
      this.#checkAfterStore(args, history);
      return;
    }
    const loaded = history && context.contextMessages.get(history.sourceId);
    if (!history || !loaded?.length) return; // nothing loaded this run (or the service keeps the conversation)
    if (this.#rewrite && history.replaceMessages) {
      const state = session.stateOf(history.sourceId);
      const stored = await history.getMessages(context.sessionId, { state, signal });
      const compacted = await runCompaction(this.#strategy, stored, this.#rewriteOptions(args));
      if (same(stored, compacted)) return;
      await history.replaceMessages(context.sessionId, compacted, { state, signal });
      const window = history.maxMessages === undefined ? compacted : compacted.slice(-history.maxMessages);
      context.replaceMessages(history.sourceId, dropLeadingResults(window));
      return;
    }
    const compacted = await runCompaction(this.#strategy, loaded, { signal, report });
    if (!same(loaded, compacted)) context.replaceMessages(history.sourceId, compacted);
  }

  async afterRun(args: ProviderRunArgs): Promise<void> {
    if (!this.#afterStore || args.context.error !== undefined) return; // a failed run stored nothing new
    const { context, session, signal } = args;
    const history = this.#historyOf(args);
    if (!history?.replaceMessages) return;
    const state = session.stateOf(history.sourceId);
    const stored = await history.getMessages(context.sessionId, { state, signal });
    const compacted = await runCompaction(this.#strategy, stored, this.#rewriteOptions(args));
    if (!same(stored, compacted)) await history.replaceMessages(context.sessionId, compacted, { state, signal });
  }

  /**
   * Options of a compaction that rewrites stored history: with the archive of the run's first
   * `SemanticRecallProvider` (found through wrappers), so a strategy with `archive: true` keeps what
   * it replaces findable.
   */
  #rewriteOptions(args: ProviderRunArgs): CompactOptions {
    const { signal, report } = args;
    const archive = this.#archiveOf(args);
    return { signal, report, ...(archive ? { archive } : {}) };
  }

  /**
   * The archive of the run's first recall provider, wrapped or not.
   * @throws ConfigurationError when the strategy archives what it replaces and the run has none.
   */
  #archiveOf(args: ProviderRunArgs): CompactionArchive | undefined {
    const recall = findProvider(args.agent.contextProviders, SemanticRecallProvider.isInstance);
    if (recall) return recall.archiveFor(args);
    if (this.#strategy.archives)
      throw new ConfigurationError(
        `CompactionProvider "${this.sourceId}": its strategy archives what it replaces (archive: true), but this run has no SemanticRecallProvider to archive into, so the replaced messages would be lost for good. Add one to contextProviders (wrapped or not), or make the strategy without archive: true.`,
      );
    return undefined;
  }

  #historyOf(args: ProviderRunArgs): HistoryProvider | undefined {
    if (this.#history) return this.#history;
    return historiesIn(args.agent.contextProviders).find((p) => p.loadMessages !== false);
  }

  /** After-store compaction must run after the history stored the turn: before it in the list, so after it on the way out. */
  #checkAfterStore(args: ProviderRunArgs, history: HistoryProvider | undefined): void {
    if (!history) return;
    if (!history.replaceMessages)
      throw new ConfigurationError(
        `CompactionProvider "${this.sourceId}" compacts after storing, but history provider "${history.sourceId}" cannot rewrite stored history (no replaceMessages).`,
      );
    const providers = args.agent.contextProviders;
    const own = providers.findIndex((p) => p.sourceId === this.sourceId);
    const theirs = providers.findIndex((p) => p.sourceId === history.sourceId);
    if (theirs !== -1 && theirs < own)
      throw new ConfigurationError(
        `CompactionProvider "${this.sourceId}" compacts after storing, so it must come before history provider "${history.sourceId}" in contextProviders (hooks run on the way out in reverse order). The agent's default history always comes first: list your own InMemoryHistoryProvider after this provider instead.`,
      );
  }
}

function same(a: readonly Message[], b: readonly Message[]): boolean {
  return a.length === b.length && a.every((m, i) => m === b[i]);
}
