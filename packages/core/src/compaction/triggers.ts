import { checkInteger } from '../backend/checks.js';
import type { Message } from '../messages/message.js';
import type { CompactionStrategy } from '../contracts/compaction-strategy.js';
import type { Tokenizer } from '../contracts/tokenizer.js';
import { countTokens, defaultTokenizer } from '../tokens/token-cache.js';
import { groupMessages } from './message-groups.js';
import { withoutCompacted } from './service-compaction.js';

/**
 * When a strategy runs: above a token, message or turn (user message) count, or when a predicate
 * says so. Counts are "more than", and count what is sent: not the messages a service compaction
 * item stands for.
 */
export type CompactionTrigger =
  | {
      /** Fires when the messages count more than this many tokens. */
      tokens?: number;
      /** Fires past this many messages. */
      messages?: number;
      /** Fires past this many user turns. */
      turns?: number;
      /** Counts `tokens` (default: the character estimate). */
      tokenizer?: Tokenizer;
    }
  | ((messages: readonly Message[]) => boolean);

/** Whether `trigger` fires for `messages`. */
export function isTriggered(trigger: CompactionTrigger, messages: readonly Message[]): boolean {
  if (typeof trigger === 'function') return trigger(messages);
  messages = withoutCompacted(messages);
  if (trigger.messages !== undefined && messages.length > trigger.messages) return true;
  if (trigger.turns !== undefined && groupMessages(messages).filter((g) => g.kind === 'user').length > trigger.turns) return true;
  if (trigger.tokens !== undefined) return countTokens(trigger.tokenizer ?? defaultTokenizer(), messages) > trigger.tokens;
  return false;
}

/**
 * Runs `strategy` only when `trigger` fires; otherwise returns the messages unchanged.
 * @throws ConfigurationError for a count that is not a non-negative integer.
 */
export function compactWhen(trigger: CompactionTrigger, strategy: CompactionStrategy): CompactionStrategy {
  if (typeof trigger !== 'function') {
    for (const name of ['tokens', 'messages', 'turns'] as const) {
      if (trigger[name] !== undefined) checkInteger('compaction trigger', name, trigger[name], 0);
    }
  }
  return {
    specificationVersion: 'v1',
    ...(strategy.archives ? { archives: true } : {}),
    compact: (messages, options) => (isTriggered(trigger, messages) ? strategy.compact(messages, options) : [...messages]),
  };
}
