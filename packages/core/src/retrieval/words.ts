/** Short list of English function words left out of hashing and keyword scoring by default (internal). */
export const DEFAULT_STOP_WORDS: readonly string[] = [
  'a',
  'an',
  'and',
  'are',
  'as',
  'at',
  'be',
  'by',
  'can',
  'do',
  'for',
  'from',
  'has',
  'have',
  'i',
  'in',
  'is',
  'it',
  'its',
  'me',
  'my',
  'of',
  'on',
  'or',
  'our',
  'please',
  'so',
  'that',
  'the',
  'this',
  'to',
  'us',
  'was',
  'we',
  'what',
  'when',
  'which',
  'will',
  'with',
  'would',
  'you',
  'your',
];

const WORD = /[\p{L}\p{N}]+/gu;

/** Lower-case words of `text` (letters and digits), for keyword scoring and hashing. */
export function words(text: string): string[] {
  return text.toLowerCase().match(WORD) ?? [];
}
