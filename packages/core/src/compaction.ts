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
  if (trigger.tokens !== undefined) return countTokens(trigger.tokenizer ?? defaultTokenizer(), messages) > trigger.tokens;
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

const caches = new WeakMap<Tokenizer, { base: number; byContents: WeakMap<object, { role: string; name: string | undefined; n: number }> }>();

/**
 * Tokens of one message as part of a list (its share beyond the list's constant overhead),
 * remembered per `contents` array: attributed copies of a message (which share it) are counted once,
 * and a rewritten message (which gets a new one) is counted again.
 */
export function messageTokens(tokenizer: Tokenizer, message: Message): number {
  let cache = caches.get(tokenizer);
  if (!cache) caches.set(tokenizer, (cache = { base: tokenizer.countMessageTokens([]), byContents: new WeakMap() }));
  const hit = cache.byContents.get(message.contents);
  if (hit && hit.role === message.role && hit.name === message.authorName) return hit.n;
  const n = tokenizer.countMessageTokens([message]) - cache.base;
  cache.byContents.set(message.contents, { role: message.role, name: message.authorName, n });
  return n;
}

/**
 * `tokenizer.countMessageTokens(messages)` through the per-message cache. Exact for tokenizers that
 * count a list as a constant plus a sum over its messages (both shipped tokenizers do).
 */
export function countTokens(tokenizer: Tokenizer, messages: readonly Message[]): number {
  let total = tokenizer.countMessageTokens([]);
  for (const m of messages) total += messageTokens(tokenizer, m);
  return total;
}
