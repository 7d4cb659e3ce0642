import type { Content } from '../contracts/message.js';
import type { Tokenizer } from '../contracts/tokenizer.js';

/**
 * Tokens of one content part by its text: text, reasoning and refusals as is, a function call by
 * its name and arguments, a result or a hosted tool item by its JSON, data by its URI plus `dataTokens`. For tokenizer authors.
 */
export function countContentTokens(content: Content, countTokens: (text: string) => number, dataTokens = 85): number {
  switch (content.type) {
    case 'text':
    case 'reasoning':
      return countTokens(content.text);
    case 'function-call':
      return countTokens(content.name) + countTokens(content.arguments);
    case 'function-result':
      return countTokens(typeof content.result === 'string' ? content.result : JSON.stringify(content.result));
    case 'data':
      return countTokens(content.uri ?? '') + dataTokens;
    case 'refusal':
      return countTokens(content.refusal);
    case 'hosted-tool':
      return countTokens(JSON.stringify(content.item));
  }
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
    specificationVersion: 'v1',
    countTokens,
    countMessageTokens(messages) {
      let total = 0;
      for (const m of messages) {
        total += overhead;
        for (const c of m.contents) total += countContentTokens(c, countTokens);
      }
      return total;
    },
  };
}
