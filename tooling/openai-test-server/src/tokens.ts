/** Deterministic stand-in for a tokenizer: one token per four characters, rounded up. */
export function countTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** Tokens charged per message or item on top of its text, as the service adds for roles and separators. */
export const PER_MESSAGE_TOKENS = 4;

/** All text in a content value: a string, or an array of parts with `text` / `refusal` / `output` fields. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const part of content) {
    if (typeof part === 'string') text += part;
    else if (isObject(part)) {
      if (typeof part.text === 'string') text += part.text;
      else if (typeof part.refusal === 'string') text += part.refusal;
    }
  }
  return text;
}

/** Whether a value is a plain (non-array) object. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Splits text into stream deltas the way a tokenizer would: each word with its leading
 * whitespace, long words in four-character pieces. The pieces concatenate to `text`.
 */
export function splitIntoDeltas(text: string): string[] {
  const pieces: string[] = [];
  for (const word of text.match(/\s*\S+|\s+$/g) ?? []) {
    if (word.length <= 8) pieces.push(word);
    else for (let i = 0; i < word.length; i += 4) pieces.push(word.slice(i, i + 4));
  }
  return pieces;
}

/** Splits tool-call arguments into stream pieces of at most `size` characters (at least one piece). */
export function splitArguments(args: string, size = 10): string[] {
  if (args.length === 0) return [''];
  const pieces: string[] = [];
  for (let i = 0; i < args.length; i += size) pieces.push(args.slice(i, i + size));
  return pieces;
}
