import { storedWithSource } from '../messages/frozen.js';
import type { Message } from '../messages/message.js';
import { CallScan, markSettled } from '../messages/settled-calls.js';

interface Views {
  /** Index in the stored list of `sources[0]`. */
  from: number;
  /** The stored messages the views were made from, to tell when one was replaced. */
  sources: unknown[];
  /** `sources[i]` attributed to the history source, deep-frozen. */
  views: Message[];
  /** How far `scan` has read `views`, and whether it is settled that far (see `CallScan`). */
  scanned: number;
  scan: CallScan;
  /** The index in `views` of the first message that broke the rule, when one did. */
  brokenAt: number | undefined;
}

/**
 * Stored messages as runs see them: each a deep-frozen copy attributed to the history source
 * (`metadata.ctx`), made once per stored message and reused while that message stays at its
 * index, so loading costs one identity check per message instead of a copy. Whether the loaded
 * messages are settled (every call answered in place, see `CallScan`) is read once per message
 * too, so a run repairs calls only when there is something to repair.
 */
export class HistoryViews {
  readonly #bySession = new WeakMap<readonly unknown[], Views>();

  constructor(private readonly sourceId: string) {}

  /**
   * The views of `stored[start..]`, oldest first, in a new array. `prepare(i, entry)` checks the
   * stored `entry` at `i` when it was not seen before (it may throw, or put a frozen copy in its
   * place) and returns what is stored at `i` now, typed. Each stored entry is read once.
   */
  of(stored: readonly unknown[], start: number, prepare: (index: number, entry: unknown) => Message): Message[] {
    let entry = this.#bySession.get(stored);
    // A window moved back by more than the views held (a long rewind) starts over.
    if (!entry || entry.from - start > entry.sources.length) this.#bySession.set(stored, (entry = fresh(start)));
    else if (start < entry.from) unreadBefore(entry, start);
    const skip = start - entry.from;
    // Views before the window are dropped once they outnumber those in it (a sliding window moves by a turn per run).
    if (skip > entry.sources.length - skip) {
      entry.sources.splice(0, skip);
      entry.views.splice(0, skip);
      entry.from = start;
      entry.scanned = 0;
      entry.scan = new CallScan();
      entry.brokenAt = undefined;
    }
    const { from, sources, views } = entry;
    sources.length = views.length = Math.min(sources.length, stored.length - from);
    let changed = views.length;
    for (let i = start; i < stored.length; i++) {
      const k = i - from;
      const entry = stored[i];
      if (k < sources.length && sources[k] === entry) continue;
      const message = prepare(i, entry);
      sources[k] = message;
      views[k] = storedWithSource(message, this.sourceId, 'history');
      if (k < changed) changed = k;
    }
    if (changed < entry.scanned) scanBackTo(entry, changed);
    const window = views.slice(start - from);
    // The scan reads from the first stored view: it answers for the whole list when the window starts there.
    if (start !== from) return window;
    for (; entry.scanned < views.length; entry.scanned++) {
      entry.scan.add(views[entry.scanned]!);
      if (entry.brokenAt === undefined && !entry.scan.ok) entry.brokenAt = entry.scanned;
    }
    return entry.scan.settled ? markSettled(window) : window;
  }
}

/** Stands for a stored message not seen yet, in `Views.sources`: no stored entry is it. */
const UNSEEN: unknown = Object.freeze({});

/**
 * Moves the start of `entry` back to `start` (the window grew towards older messages: a rewind
 * cut the newest), keeping the views it holds: the slots before them are marked unseen, to be
 * made as the window is read, and the scan starts over from the new first view.
 */
function unreadBefore(entry: Views, start: number): void {
  const added = entry.from - start;
  entry.sources.unshift(...new Array<unknown>(added).fill(UNSEEN));
  entry.views.unshift(...new Array<Message>(added));
  entry.from = start;
  entry.scanned = 0;
  entry.scan = new CallScan();
  entry.brokenAt = undefined;
}

function fresh(from: number): Views {
  return { from, sources: [], views: [], scanned: 0, scan: new CallScan(), brokenAt: undefined };
}

/**
 * Puts the scan back to where it stood after `views[0..at)` (the list was cut or changed from
 * `at`), reading back only to the last message that is not a tool message of results: a scan that
 * kept the rule up to there had no call waiting before it. A scan broken before `at` stays broken.
 */
function scanBackTo(entry: Views, at: number): void {
  entry.scanned = at;
  if (entry.brokenAt !== undefined && entry.brokenAt < at) return;
  entry.brokenAt = undefined;
  let from = at - 1;
  while (from > 0 && isResultsOnly(entry.views[from]!)) from--;
  entry.scan = new CallScan();
  for (let i = Math.max(0, from); i < at; i++) {
    entry.scan.add(entry.views[i]!);
    if (entry.brokenAt === undefined && !entry.scan.ok) entry.brokenAt = i;
  }
}

/** Whether `message` is a tool message holding only function results (it answers calls before it). */
function isResultsOnly(message: Message): boolean {
  const { contents } = message;
  if (message.role !== 'tool' || contents.length === 0) return false;
  for (let i = 0; i < contents.length; i++) if (contents[i]!.type !== 'function-result') return false;
  return true;
}
