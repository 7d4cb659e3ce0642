import { ConfigurationError } from '../errors.js';

/**
 * An id quoted and shortened for error messages: `"abc"`, or its first `max` characters and its
 * length. Ids only: never pass message text or secrets.
 */
export function shortId(id: string, max = 80): string {
  return JSON.stringify(id.length <= max ? id : `${id.slice(0, max)}…(${id.length} chars)`);
}

/**
 * Checks an id handed to a store or provider (a session id, a source id): a string with at least
 * one character that is not whitespace. Any other string is kept exactly as given.
 * @throws ConfigurationError naming `what` otherwise.
 */
export function checkId(value: unknown, what = 'session id'): string {
  if (typeof value === 'string' && value.trim() !== '') return value;
  const got = typeof value === 'string' ? (value === '' ? 'an empty string' : `only whitespace (${shortId(value)})`) : typeof value;
  throw new ConfigurationError(`The ${what} must be a string with at least one non-whitespace character; got ${got}.`);
}

/**
 * Checks a session id handed to a backend (see `checkId`).
 * @throws ConfigurationError for an empty or whitespace-only id, or a non-string.
 */
export function checkSessionId(sessionId: unknown): string {
  return checkId(sessionId, 'session id');
}

/**
 * Checks an integer option: at least `min` (default 1).
 * @throws ConfigurationError naming `owner` and `name` otherwise.
 */
export function checkInteger(owner: string, name: string, value: unknown, min = 1): number {
  if (typeof value === 'number' && Number.isInteger(value) && value >= min) return value;
  const what = min === 0 ? 'a non-negative integer' : min === 1 ? 'a positive integer' : `an integer of at least ${min}`;
  throw new ConfigurationError(`${owner}: ${name} must be ${what}, got ${describeValue(value)}.`);
}

/**
 * Checks a positive finite number option (a timeout, a threshold).
 * @throws ConfigurationError naming `owner` and `name` otherwise.
 */
export function checkPositiveNumber(owner: string, name: string, value: unknown): number {
  if (typeof value === 'number' && Number.isFinite(value) && value > 0) return value;
  throw new ConfigurationError(`${owner}: ${name} must be a positive number, got ${describeValue(value)}.`);
}

/**
 * The names of every option of `T`, each once: `optionNames<MyOptions>()({ a: true, b: true })`.
 * A missing or extra name is a compile error, so the list cannot fall behind the options type.
 */
export function optionNames<T extends object>(): (names: OptionFlags<T>) => readonly string[] {
  return (names) => Object.keys(names);
}

/** Every option name of `T` as `{ name: true }`: what `optionNames` takes, and what option types built on others spread. */
export type OptionFlags<T extends object> = { readonly [K in keyof Required<T>]: true };

/**
 * Refuses options a constructor does not know (a misspelled `topk`, an option of another
 * provider), so a setting is never silently ignored. `known` comes from `optionNames`. `undefined`
 * or `null` options pass (the constructor checks what it requires).
 * @throws ConfigurationError naming `owner`, the unknown option and the known ones.
 */
export function checkOptionNames(owner: string, options: unknown, known: readonly string[]): void {
  if (typeof options !== 'object' || options === null) return;
  for (const name of Object.keys(options)) {
    if (!known.includes(name)) {
      const near = known.find((k) => k.toLowerCase() === name.toLowerCase()) ?? known.find((k) => editDistance(k, name) <= 2);
      throw new ConfigurationError(
        `${owner}: unknown option ${JSON.stringify(name)}${near ? ` (did you mean ${JSON.stringify(near)}?)` : ''}. Known options: ${known.join(', ')}.`,
      );
    }
  }
}

/** Levenshtein distance of two short names (option names). */
function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = row;
  }
  return previous[b.length]!;
}

function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  try {
    return String(value);
  } catch {
    return typeof value;
  }
}
