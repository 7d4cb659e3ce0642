import { ConfigurationError, SessionStateError } from '../errors.js';
import { formatPath, isPlainObject, pathJoin } from '../messages/json.js';
import type { JsonObject, JsonValue } from '../contracts/json.js';

/** When entries a provider keeps in its state expire. Without either limit nothing expires. */
export interface DecayPolicy {
  /** An entry expires once this many milliseconds have passed since it was added or refreshed. */
  ttlMs?: number;
  /** At most this many entries are kept; the oldest (by `addedAt`) go first. */
  maxEntries?: number;
}

/** Options of `DecayingList`. */
export interface DecayingListOptions extends DecayPolicy {
  /** The clock, in milliseconds since the epoch. Default `Date.now`; inject one in tests. */
  now?: () => number;
  /** JSON path of the list, for error messages (e.g. `$.state.whiteboard.entries`). Default `$.<key>`. */
  path?: string;
  /** Checks each stored value when the list is opened; throw `SessionStateError` at `path` when malformed. */
  validateValue?: (value: JsonValue, path: string) => void;
}

/** One entry of a `DecayingList` as stored in state: the value and when it was added (ms since the epoch). */
export type AgedEntry<T extends JsonValue = JsonValue> = {
  /** The entry. */
  value: T;
  /** When it was added or last refreshed (ms since the epoch). */
  addedAt: number;
};

/**
 * A list of entries in a provider's state slot (`state[key]`, plain JSON) that carry their age and
 * expire by TTL or by count. Reading never changes state; `prune()` removes what expired. Create
 * one per run over the run's `state`; it holds no data of its own.
 *
 * @throws SessionStateError (from the constructor) when `state[key]` exists and is not a list of
 *   `{ value, addedAt }` entries.
 */
export class DecayingList<T extends JsonValue = JsonValue> {
  readonly #state: JsonObject;
  readonly #key: string;
  readonly #ttlMs: number | undefined;
  readonly #maxEntries: number | undefined;
  readonly #now: () => number;

  constructor(state: JsonObject, key: string, options: DecayingListOptions = {}) {
    checkDecayPolicy('DecayingList', options);
    this.#state = state;
    this.#key = key;
    this.#ttlMs = options.ttlMs;
    this.#maxEntries = options.maxEntries;
    this.#now = options.now ?? Date.now;
    DecayingList.validate(state[key], options.path ?? pathJoin('$', key), options.validateValue);
  }

  /**
   * Checks that `value` is absent or a well-formed list, and each value with `checkValue`.
   * @throws SessionStateError naming the offending path under `path`.
   */
  static validate(value: unknown, path: string, checkValue?: (value: JsonValue, path: string) => void): void {
    if (value === undefined) return;
    if (!Array.isArray(value)) throw new SessionStateError(path, 'must be an array of { value, addedAt } entries');
    value.forEach((entry, i) => {
      if (!isPlainObject(entry) || !('value' in entry))
        throw new SessionStateError(formatPath(path, [i]), 'must be an object with "value" and "addedAt"');
      if (typeof entry.addedAt !== 'number' || !Number.isFinite(entry.addedAt))
        throw new SessionStateError(formatPath(path, [i, 'addedAt']), 'must be a finite number (ms since the epoch)');
      checkValue?.(entry.value as JsonValue, formatPath(path, [i, 'value']));
    });
  }

  /** The clock's current time. */
  now(): number {
    return this.#now();
  }

  /** Milliseconds since `entry` was added or refreshed (never negative). */
  ageOf(entry: AgedEntry<T>): number {
    return Math.max(0, this.#now() - entry.addedAt);
  }

  /** Every stored entry, expired or not, in stored order. */
  all(): readonly AgedEntry<T>[] {
    return (this.#state[this.#key] as AgedEntry<T>[] | undefined) ?? [];
  }

  /** The entries that have not expired, in stored order. Changes nothing. */
  entries(): AgedEntry<T>[] {
    const all = this.all();
    const live = this.#liveIndexes(all);
    return all.filter((_, i) => live.has(i));
  }

  /** The values of the entries that have not expired. */
  values(): T[] {
    return this.entries().map((e) => e.value);
  }

  /** Appends a value, aged from now. Returns the stored entry. */
  add(value: T): AgedEntry<T> {
    const entry: AgedEntry<T> = { value, addedAt: this.#now() };
    this.#list().push(entry);
    return entry;
  }

  /** Resets the age of the entries `match` selects (a value that was confirmed again). Returns how many. */
  refresh(match: (value: T) => boolean): number {
    const now = this.#now();
    let n = 0;
    for (const e of this.all()) {
      if (!match(e.value)) continue;
      e.addedAt = now;
      n++;
    }
    return n;
  }

  /** Replaces the value of the entries `match` selects, keeping their age. Returns how many. */
  update(match: (value: T) => boolean, next: (value: T) => T): number {
    let n = 0;
    for (const e of this.all()) {
      if (!match(e.value)) continue;
      e.value = next(e.value);
      n++;
    }
    return n;
  }

  /** Removes the entries `match` selects. Returns them. */
  remove(match: (value: T) => boolean): AgedEntry<T>[] {
    const removed: AgedEntry<T>[] = [];
    const kept: AgedEntry<T>[] = [];
    for (const e of this.all()) (match(e.value) ? removed : kept).push(e);
    if (removed.length) this.#state[this.#key] = kept;
    return removed;
  }

  /** Removes expired entries (by TTL, then by count, oldest first) from state. Returns them. */
  prune(): AgedEntry<T>[] {
    const all = this.all();
    const live = this.#liveIndexes(all);
    if (live.size === all.length) return [];
    this.#state[this.#key] = all.filter((_, i) => live.has(i));
    return all.filter((_, i) => !live.has(i));
  }

  #list(): AgedEntry<T>[] {
    return ((this.#state[this.#key] as AgedEntry<T>[] | undefined) ??= []);
  }

  #liveIndexes(all: readonly AgedEntry<T>[]): Set<number> {
    const now = this.#now();
    const ttl = this.#ttlMs;
    let live = all.map((e, i) => ({ i, at: e.addedAt })).filter((e) => ttl === undefined || now - e.at < ttl);
    const max = this.#maxEntries;
    if (max !== undefined && live.length > max) {
      // Newest first (a later position wins a tie), keep `max`.
      live = [...live].sort((a, b) => b.at - a.at || b.i - a.i).slice(0, max);
    }
    return new Set(live.map((e) => e.i));
  }
}

/**
 * Checks a decay policy (internal).
 * @throws ConfigurationError when `ttlMs` is not a positive number or `maxEntries` not a non-negative integer.
 */
export function checkDecayPolicy(owner: string, policy: DecayPolicy | undefined): void {
  if (!policy) return;
  if (policy.ttlMs !== undefined && !(typeof policy.ttlMs === 'number' && policy.ttlMs > 0)) {
    throw new ConfigurationError(`${owner}: ttlMs must be a positive number of milliseconds, got ${String(policy.ttlMs)}.`);
  }
  if (policy.maxEntries !== undefined && !(Number.isInteger(policy.maxEntries) && policy.maxEntries >= 0)) {
    throw new ConfigurationError(`${owner}: maxEntries must be a non-negative integer, got ${String(policy.maxEntries)}.`);
  }
}
