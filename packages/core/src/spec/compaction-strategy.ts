import type { Message } from './message.js';

/**
 * Rewrites a conversation to fit a budget. The same object runs inside the tool loop (the agent's
 * `compaction` option, before every model call) and at the run boundary (`CompactionProvider`).
 * A strategy returns its input unchanged when there is nothing to do, and never separates a
 * function call from its result.
 */
export interface CompactionStrategy {
  /** The contract version this strategy implements. Absent means `'v1'`. */
  readonly specificationVersion?: 'v1';
  compact(messages: readonly Message[], options: { signal?: AbortSignal }): Message[] | Promise<Message[]>;
}
