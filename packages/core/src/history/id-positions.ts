import { idOf } from './retried-turn.js';

/** Slots a table starts with at least (a power of two). */
const MIN_SLOTS = 16;

/**
 * Where each message id of a stored list sits: the position of its first entry, in an
 * open-addressing table of positions (5 bytes a slot, 2 to 4 slots a message: 10 to 20 bytes, where
 * a `Map` from id to position takes about 46). The table keeps no strings: a slot holds a position
 * and 8 bits of the id's hash, and the id is read from the list itself, only when those bits match. A position counts only while it is indexed (below
 * `length`) and the entry there still has that id, so a list cut short needs no update: the ids past
 * its end are stale. Stale slots are dropped when the table is rebuilt, once three quarters of it
 * are used.
 */
export class IdPositions {
  /** Position + 1 of an indexed entry, or 0 for an empty slot. The length is a power of two. */
  #slots: Int32Array;
  /** The top 8 bits of the hash of the id in each slot. */
  #tags: Uint8Array;
  /** Slots in use, stale ones included. */
  #used = 0;
  /** How many entries, from the start of the list, are indexed. */
  length = 0;

  constructor(entries = 0) {
    this.#slots = new Int32Array(slotsFor(entries));
    this.#tags = new Uint8Array(this.#slots.length);
  }

  /** The position of the first indexed entry of `list` with message id `id`, or -1. */
  find(list: readonly unknown[], id: string): number {
    const slots = this.#slots;
    const mask = slots.length - 1;
    const h = hash(id);
    const tag = h >>> 24;
    let first = -1;
    // The whole run of used slots is read: a stale slot of the id may come before the live one.
    for (let s = h & mask; slots[s] !== 0; s = (s + 1) & mask) {
      const at = slots[s]! - 1;
      if (this.#tags[s] === tag && at < this.length && (first === -1 || at < first) && idOf(list[at]) === id) first = at;
    }
    return first;
  }

  /**
   * Indexes the entries of `list` from `from` to its end, whose positions are new or have moved
   * (entries stored or spliced in); the entries before `from` stay as indexed.
   */
  indexFrom(list: readonly unknown[], from: number): void {
    this.length = Math.min(this.length, from);
    if (4 * (this.#used + list.length - from) > 3 * this.#slots.length) this.#rebuild(list, from, list.length);
    for (let i = from; i < list.length; i++) this.#add(list, i);
  }

  /**
   * Indexes the entry at `i`, the first not yet indexed, unless an earlier entry has its id. A slot
   * of its id at a later position (stale, or a later entry of the id indexed before a splice moved
   * this one) is taken over rather than a new one used.
   */
  #add(list: readonly unknown[], i: number): void {
    const id = idOf(list[i]);
    this.length = i + 1;
    if (id === undefined) return;
    const slots = this.#slots;
    const mask = slots.length - 1;
    const h = hash(id);
    const tag = h >>> 24;
    let reuse = -1;
    let s = h & mask;
    for (; slots[s] !== 0; s = (s + 1) & mask) {
      if (this.#tags[s] !== tag) continue;
      const at = slots[s]! - 1;
      if (idOf(list[at]) !== id) continue;
      if (at < i) return;
      if (reuse === -1) reuse = s;
    }
    if (reuse !== -1) s = reuse;
    else this.#used++;
    slots[s] = i + 1;
    this.#tags[s] = tag;
  }

  /** A table sized for `entries`, holding the indexed entries before `from` (the live ones only). */
  #rebuild(list: readonly unknown[], from: number, entries: number): void {
    const kept = Math.min(this.length, from, list.length);
    this.#slots = new Int32Array(slotsFor(entries));
    this.#tags = new Uint8Array(this.#slots.length);
    this.#used = 0;
    this.length = 0;
    for (let i = 0; i < kept; i++) this.#add(list, i);
  }
}

/** A power of two of at least twice `entries` slots, so a new table is at most half used. */
function slotsFor(entries: number): number {
  let slots = MIN_SLOTS;
  while (slots < 2 * entries) slots *= 2;
  return slots;
}

/** FNV-1a over the UTF-16 code units of `id`. */
function hash(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
