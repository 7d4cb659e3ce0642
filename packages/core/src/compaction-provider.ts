import type { CompactionStrategy } from './compaction.js';
import type { ContextProvider, ProviderRunArgs } from './context-provider.js';
import { HistoryProvider } from './history-provider.js';
import { InMemoryHistoryProvider } from './in-memory-history-provider.js';

/** Options of `CompactionProvider`. */
export interface CompactionProviderOptions {
  strategy: CompactionStrategy;
  /** Default `compaction`. */
  sourceId?: string;
  /**
   * The history to compact. Default: the first history provider of the agent that loads, else the
   * agent's default in-memory history.
   */
  history?: HistoryProvider;
  /**
   * After a successful run, also rewrite the stored history (when the history provider implements
   * `replaceMessages`). Default true. A store-only audit provider is never touched.
   */
  rewriteStoredHistory?: boolean;
  /** Default `'throw'`. */
  onError?: 'throw' | 'skip';
}

/**
 * Compaction at the run boundary. Place it after the history provider: before the model call it
 * compacts the loaded history the model will see; after a successful run it compacts the stored
 * history in place (the new turn is then appended by the history provider, and compacted at the next run).
 */
export class CompactionProvider implements ContextProvider {
  readonly sourceId: string;
  readonly onError: 'throw' | 'skip';
  readonly #strategy: CompactionStrategy;
  readonly #history: HistoryProvider | undefined;
  readonly #rewrite: boolean;

  constructor(options: CompactionProviderOptions) {
    this.sourceId = options.sourceId ?? 'compaction';
    this.onError = options.onError ?? 'throw';
    this.#strategy = options.strategy;
    this.#history = options.history;
    this.#rewrite = options.rewriteStoredHistory ?? true;
  }

  async beforeRun(args: ProviderRunArgs): Promise<void> {
    const { context, signal } = args;
    const history = this.#target(args);
    const loaded = context.contextMessages.get(history.sourceId);
    if (!loaded?.length) return;
    const compacted = await this.#strategy.compact(loaded, { signal });
    if (compacted.length !== loaded.length || compacted.some((m, i) => m !== loaded[i])) context.replaceMessages(history.sourceId, compacted);
  }

  async afterRun(args: ProviderRunArgs): Promise<void> {
    const { context, session, signal } = args;
    const history = this.#target(args);
    if (!this.#rewrite || context.error !== undefined || !history.replaceMessages) return;
    const state = session.stateOf(history.sourceId);
    const stored = await history.getMessages(context.sessionId, { state, signal });
    const compacted = await this.#strategy.compact(stored, { signal });
    if (compacted.length === stored.length && compacted.every((m, i) => m === stored[i])) return;
    await history.replaceMessages(context.sessionId, compacted, { state, signal });
  }

  #target({ agent }: ProviderRunArgs): HistoryProvider {
    return this.#history ?? agent.contextProviders.find((p): p is HistoryProvider => HistoryProvider.isInstance(p) && p.loadMessages !== false) ?? defaultHistory;
  }
}

/** State lives in the session, so any in-memory provider with the default id reaches the default history. */
const defaultHistory = new InMemoryHistoryProvider();
