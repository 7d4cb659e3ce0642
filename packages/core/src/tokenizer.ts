import type { Message } from './message.js';

/** Counts tokens, so budgets and compaction can measure what they send. */
export interface Tokenizer {
  /** Tokens in a piece of text. */
  countTokens(text: string): number;
  /** Tokens of whole messages as the service counts them, including per-message overhead. */
  countMessageTokens(messages: readonly Message[]): number;
}

/** Options of `createCharacterTokenizer`. */
export interface CharacterTokenizerOptions {
  /** Characters per token. Default 4 (English prose with GPT-style tokenizers). */
  charsPerToken?: number;
  /** Tokens added per message for role and framing. Default 4. */
  perMessageOverhead?: number;
}

/**
 * A dependency-free estimate: characters divided by `charsPerToken`, rounded up. Good enough for
 * budgets with headroom; use the exact tokenizer of `@ctx/openai` where counts must match the service.
 */
export function createCharacterTokenizer(options: CharacterTokenizerOptions = {}): Tokenizer {
  const perToken = options.charsPerToken ?? 4;
  const overhead = options.perMessageOverhead ?? 4;
  const countTokens = (text: string) => Math.ceil(text.length / perToken);
  return {
    countTokens,
    countMessageTokens(messages) {
      let total = 0;
      for (const m of messages) {
        total += overhead;
        for (const c of m.contents) {
          switch (c.type) {
            case 'text':
            case 'reasoning':
              total += countTokens(c.text);
              break;
            case 'function-call':
              total += countTokens(c.name) + countTokens(c.arguments);
              break;
            case 'function-result':
              total += countTokens(typeof c.result === 'string' ? c.result : JSON.stringify(c.result));
              break;
            case 'data':
              total += countTokens(c.uri ?? '') + 85;
              break;
          }
        }
      }
      return total;
    },
  };
}
