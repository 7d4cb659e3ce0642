import type { Message } from './message.js';

/**
 * Rewrites a conversation to fit a budget. The agent's `compaction` option runs one before every
 * model call of the tool loop; it receives the messages about to be sent and returns those to send.
 */
export interface CompactionStrategy {
  compact(messages: readonly Message[], options: { signal?: AbortSignal }): Message[] | Promise<Message[]>;
}
