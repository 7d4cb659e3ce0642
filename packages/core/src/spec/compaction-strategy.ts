import type { Message } from './message.js';
import type { ProviderDiagnostic } from './run-view.js';

/** What a strategy gets besides the messages. */
export interface CompactOptions {
  /** Aborts the compaction (e.g. a summarizing model call). */
  signal?: AbortSignal;
  /**
   * Receives what the strategy wants known without failing: a blank or failed summary, a setting it
   * could not honour. Never put message text in it.
   */
  report?: (diagnostic: ProviderDiagnostic) => void;
}

/**
 * Rewrites a conversation to fit a budget. The same object runs inside the tool loop (the agent's
 * `compaction` option, before every model call) and at the run boundary (`CompactionProvider`).
 * A strategy returns its input unchanged when there is nothing to do, and never separates a
 * function call from its result. Compaction is an optimisation: when a strategy throws (other than
 * an abort or `ContextWindowExceededError`), the agent sends the uncompacted list and reports it.
 */
export interface CompactionStrategy {
  /** The contract version this strategy implements. Absent means `'v1'`. */
  readonly specificationVersion?: 'v1';
  /** Returns the compacted list (or `messages` unchanged). */
  compact(messages: readonly Message[], options: CompactOptions): Message[] | Promise<Message[]>;
}
