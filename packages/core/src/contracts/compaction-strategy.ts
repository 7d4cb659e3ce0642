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
  /**
   * Where a strategy made with `archive: true` keeps the messages it replaces, so they stay
   * findable. Set by `CompactionProvider` when it rewrites stored history and the run has a
   * `SemanticRecallProvider` (found through wrappers); absent otherwise, where a strategy that
   * `archives` is refused, and the originals of any other stay in the stored history.
   */
  archive?: CompactionArchive;
}

/** A store for the messages compaction replaces: the recall index of a `SemanticRecallProvider`. */
export interface CompactionArchive {
  /**
   * Keeps `messages` (the originals a strategy is about to replace) findable. Resolves once they are
   * stored; a strategy that sees it reject replaces nothing, so nothing is lost.
   */
  store(messages: readonly Message[], options: { signal?: AbortSignal }): Promise<void>;
  /** The tool the model searches the archive with, when the run offers one (e.g. `recall`). */
  readonly toolName?: string;
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
  /**
   * True when the strategy replaces messages only once `CompactOptions.archive` has kept them (made
   * with `archive: true`, or built on such a strategy). `CompactionProvider` then refuses, with a
   * `ConfigurationError` at the start of a run, to rewrite stored history where no archive (a
   * `SemanticRecallProvider`, wrapped or not) is reachable, instead of replacing the detail for good.
   */
  readonly archives?: boolean;
  /** Returns the compacted list (or `messages` unchanged). */
  compact(messages: readonly Message[], options: CompactOptions): Message[] | Promise<Message[]>;
}
