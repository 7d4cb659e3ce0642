import type { Message } from './message.js';
import { groupMessages } from './message-groups.js';
import { createCharacterTokenizer, type Tokenizer } from './tokenizer.js';

/**
 * Rewrites a conversation to fit a budget. The same object runs inside the tool loop (the agent's
 * `compaction` option, before every model call) and at the run boundary (`CompactionProvider`).
 * A strategy returns its input unchanged when there is nothing to do, and never separates a
 * function call from its result.
 */
export interface CompactionStrategy {
  compact(messages: readonly Message[], options: { signal?: AbortSignal }): Message[] | Promise<Message[]>;
}

/**
 * When a strategy runs: above a token, message or turn (user message) count, or when a predicate
 * says so. Counts are "more than".
 */
export type CompactionTrigger = { tokens?: number; messages?: number; turns?: number; tokenizer?: Tokenizer } | ((messages: readonly Message[]) => boolean);

/** Whether `trigger` fires for `messages`. */
export function isTriggered(trigger: CompactionTrigger, messages: readonly Message[]): boolean {
  if (typeof trigger === 'function') return trigger(messages);
  if (trigger.messages !== undefined && messages.length > trigger.messages) return true;
  if (trigger.turns !== undefined && groupMessages(messages).filter((g) => g.kind === 'user').length > trigger.turns) return true;
  if (trigger.tokens !== undefined) return (trigger.tokenizer ?? defaultTokenizer()).countMessageTokens(messages) > trigger.tokens;
  return false;
}

/** Runs `strategy` only when `trigger` fires; otherwise returns the messages unchanged. */
export function compactWhen(trigger: CompactionTrigger, strategy: CompactionStrategy): CompactionStrategy {
  return {
    compact: (messages, options) => (isTriggered(trigger, messages) ? strategy.compact(messages, options) : [...messages]),
  };
}

let characterTokenizer: Tokenizer | undefined;
/** The estimator strategies use when given no tokenizer. */
export function defaultTokenizer(): Tokenizer {
  return (characterTokenizer ??= createCharacterTokenizer());
}
