import type { Message } from '../messages/message.js';
import type { Tokenizer } from '../contracts/tokenizer.js';
import { createCharacterTokenizer } from './character-tokenizer.js';

let characterTokenizer: Tokenizer | undefined;
/** The estimator strategies use when given no tokenizer. */
export function defaultTokenizer(): Tokenizer {
  return (characterTokenizer ??= createCharacterTokenizer());
}

const caches = new WeakMap<
  Tokenizer,
  { base: number; byContents: WeakMap<object, { role: string; name: string | undefined; n: number }> }
>();

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
