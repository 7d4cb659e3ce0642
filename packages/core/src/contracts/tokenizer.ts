import type { Message } from './message.js';

/** Counts tokens, so budgets and compaction can measure what they send. */
export interface Tokenizer {
  /** The contract version this tokenizer implements. Absent means `'v1'`. */
  readonly specificationVersion?: 'v1';
  /** Tokens in a piece of text. */
  countTokens(text: string): number;
  /** Tokens of whole messages as the service counts them, including per-message overhead. */
  countMessageTokens(messages: readonly Message[]): number;
}
