import { HistoryProvider } from '../history/history-provider.js';
import type { Message } from '../messages/message.js';
import type { CompactionStrategy } from '../spec/compaction-strategy.js';
import type { ContextProvider, ProviderRunArgs } from '../spec/run-view.js';
import { dropLeadingResults } from './message-groups.js';

/** Options of `CompactionProvider`. */
export interface CompactionProviderOptions {
  strategy: CompactionStrategy;
  /** Default `compaction`. */
  sourceId?: string;
  /**
   * The history to compact. Default: the first history provider of the run that loads (the
   * agent's default in-memory history when the agent added it).
   */
  history?: HistoryProvider;
  /**
   * Write the compacted history back (when the history provider implements `replaceMessages`).
   * Default true. A store-only audit provider is never touched.
   */
  rewriteStoredHistory?: boolean;
  /** Default `'throw'`. */
  onError?: 'throw' | 'skip';
}

/**
 * Compaction at the run boundary. Place it after the history provider. Before the model call it
 * compacts the stored history and writes the result back through the history provider's
 * `replaceMessages` (so a summary is made once and reused by later runs), then gives the model the
 * compacted window. Without `replaceMessages` (or with `rewriteStoredHistory: false`) it compacts
 * only the loaded history the model sees.
 */
export class CompactionProvider implements ContextProvider {
  readonly specificationVersion = 'v1';
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
    const { context, session, signal } = args;
    const history =
      this.#history ??
      args.agent.contextProviders.find((p): p is HistoryProvider => HistoryProvider.isInstance(p) && p.loadMessages !== false);
    const loaded = history && context.contextMessages.get(history.sourceId);
    if (!history || !loaded?.length) return; // nothing loaded this run (or the service keeps the conversation)
    if (this.#rewrite && history.replaceMessages) {
      const state = session.stateOf(history.sourceId);
      const stored = await history.getMessages(context.sessionId, { state, signal });
      const compacted = await this.#strategy.compact(stored, { signal });
      if (same(stored, compacted)) return;
      await history.replaceMessages(context.sessionId, compacted, { state, signal });
      const window = history.maxMessages === undefined ? compacted : compacted.slice(-history.maxMessages);
      context.replaceMessages(history.sourceId, dropLeadingResults(window));
      return;
    }
    const compacted = await this.#strategy.compact(loaded, { signal });
    if (!same(loaded, compacted)) context.replaceMessages(history.sourceId, compacted);
  }
}

function same(a: readonly Message[], b: readonly Message[]): boolean {
  return a.length === b.length && a.every((m, i) => m === b[i]);
}
