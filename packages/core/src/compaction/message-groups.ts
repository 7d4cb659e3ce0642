import type { Message } from '../messages/message.js';
import type { Content } from '../contracts/message.js';
import { holdsCompaction, keptBeforeCompaction, newestCompactionIndex } from './service-compaction.js';

/**
 * What a group holds. `compaction`: the newest message holding a service compaction item together
 * with everything before it, which the item stands for (and any tool exchange it is part of).
 */
export type MessageGroupKind = 'system' | 'summary' | 'user' | 'assistant' | 'tool-exchange' | 'orphan-results' | 'compaction';

/**
 * Messages that must be kept or dropped together: a system message, a summary, a user turn, an
 * assistant reply, or an assistant message with function calls plus every message holding their
 * results, wherever those sit (another message may come between a call and its result, e.g. a
 * stored context message, or a result the caller sent in a later turn). A service compaction item
 * (see `isCompactionItem`) and everything before it are one group: the item stands for what came
 * before, so a strategy keeps or drops them together and never sends the replaced messages without
 * it. Compaction works on groups, so it never orphans a call or a result.
 */
export interface MessageGroup {
  /** What the group holds. */
  kind: MessageGroupKind;
  /** The group's messages, in conversation order. */
  messages: Message[];
  /** Where each of `messages` sits in the conversation, ascending; `flattenGroups` restores the order from it. */
  indices: number[];
}

/** Whether a message is a summary written by compaction (`metadata.ctx.summary`). */
export function isSummary(message: Message): boolean {
  const ctx = message.metadata?.ctx as { summary?: unknown } | undefined;
  return ctx?.summary !== undefined;
}

/** The call ids and result ids of a message, read once per `contents` array (strategies regroup the same history on every call). */
const idsByContents = new WeakMap<readonly Content[], { calls: string[]; results: string[] }>();
function idsOf(m: Message): { calls: string[]; results: string[] } {
  let ids = idsByContents.get(m.contents);
  if (!ids) {
    ids = { calls: [], results: [] };
    for (const c of m.contents) {
      if (c.type === 'function-call') ids.calls.push(c.callId);
      else if (c.type === 'function-result') ids.results.push(c.callId);
    }
    idsByContents.set(m.contents, ids);
  }
  return ids;
}
const callIdsOf = (m: Message) => idsOf(m).calls;
const resultIdsOf = (m: Message) => idsOf(m).results;

function kindOf(m: Message): MessageGroupKind {
  if (isSummary(m)) return 'summary';
  if (resultIdsOf(m).length) return 'orphan-results';
  return m.role === 'system' ? 'system' : m.role === 'user' ? 'user' : 'assistant';
}

/**
 * Splits messages into atomic groups, ordered by their first message. A message of results joins
 * the exchange whose calls it answers, by call id, however far after the call it sits; a message
 * that answers calls of several exchanges joins them into one. The newest message holding a
 * compaction item, every group that starts before it and the group it belongs to form one
 * `compaction` group. `flattenGroups(groupMessages(m))` equals `m`.
 */
export function groupMessages(messages: readonly Message[]): MessageGroup[] {
  const groups = groupByCalls(messages);
  const at = newestCompactionIndex(messages);
  if (at === -1) return groups;
  const merged: MessageGroup = { kind: 'compaction', messages: [], indices: [] };
  const rest: MessageGroup[] = [];
  for (const g of groups) {
    if (g.indices[0]! > at) rest.push(g);
    else {
      merged.messages.push(...g.messages);
      merged.indices.push(...g.indices);
    }
  }
  sortGroup(merged);
  return [merged, ...rest];
}

/**
 * The messages of a group that are sent to the service: all of them, except in a `compaction` group,
 * where those before the compaction item are not (but what `keptBeforeCompaction` keeps is).
 */
export function sentMessagesOf(group: MessageGroup): Message[] {
  if (group.kind !== 'compaction') return group.messages;
  let at = group.messages.length - 1;
  while (at >= 0 && !holdsCompaction(group.messages[at]!)) at--;
  if (at <= 0) return group.messages;
  const compaction = group.messages[at]!;
  return [...group.messages.slice(0, at).filter((m) => keptBeforeCompaction(m, compaction)), ...group.messages.slice(at)];
}

function groupByCalls(messages: readonly Message[]): MessageGroup[] {
  const groups: MessageGroup[] = [];
  /** The exchange a call id belongs to; merged exchanges point at the survivor through `merged`. */
  const exchangeOf = new Map<string, MessageGroup>();
  const merged = new Map<MessageGroup, MessageGroup>();
  const resolve = (g: MessageGroup): MessageGroup => {
    let r = g;
    while (merged.has(r)) r = merged.get(r)!;
    return r;
  };
  messages.forEach((m, index) => {
    const { calls, results } = idsOf(m);
    if (!calls.length && !results.length) {
      groups.push({ kind: kindOf(m), messages: [m], indices: [index] });
      return;
    }
    const answered = new Set<MessageGroup>();
    for (const id of results) {
      const g = exchangeOf.get(id);
      if (g) answered.add(resolve(g));
    }
    if (!calls.length && !answered.size) {
      groups.push({ kind: kindOf(m), messages: [m], indices: [index] });
      return;
    }
    // Join the earliest exchange it answers (or start one for its own calls); fold the others in.
    const [target = { kind: 'tool-exchange' as const, messages: [], indices: [] }, ...others] = [...answered].sort(
      (a, b) => a.indices[0]! - b.indices[0]!,
    );
    if (!answered.size) groups.push(target);
    for (const other of others) {
      target.messages.push(...other.messages);
      target.indices.push(...other.indices);
      merged.set(other, target);
    }
    target.messages.push(m);
    target.indices.push(index);
    if (others.length) sortGroup(target);
    for (const id of calls) exchangeOf.set(id, target);
  });
  return merged.size ? groups.filter((g) => !merged.has(g)) : groups;
}

function sortGroup(group: MessageGroup): void {
  const order = group.indices.map((index, i) => [index, group.messages[i]!] as const).sort((a, b) => a[0] - b[0]);
  group.indices = order.map(([index]) => index);
  group.messages = order.map(([, m]) => m);
}

/** The messages of groups, in conversation order (groups may interleave). */
export function flattenGroups(groups: readonly MessageGroup[]): Message[] {
  if (groups.length < 2) return groups.flatMap((g) => g.messages);
  const entries = groups.flatMap((g) => g.messages.map((m, i) => [g.indices[i] ?? 0, m] as const));
  for (let i = 1; i < entries.length; i++) {
    if (entries[i]![0] < entries[i - 1]![0]) return entries.sort((a, b) => a[0] - b[0]).map(([, m]) => m);
  }
  return entries.map(([, m]) => m);
}

/**
 * Splits groups into what compaction may drop and what it must keep: system messages are always
 * kept, and so is every group with a message at or after the newest user message (the question
 * being answered, the tool exchanges of the current run, and an exchange whose results arrived in
 * this turn), or the last group when there is no user turn.
 */
export function splitProtected(groups: readonly MessageGroup[]): {
  /** System message groups: always kept. */
  system: MessageGroup[];
  /** Groups before the last user turn: what compaction may drop or summarize. */
  older: MessageGroup[];
  /** The last user turn and what follows it: always kept. */
  recent: MessageGroup[];
} {
  let cut = -1;
  for (const g of groups) {
    if (g.kind === 'user' && g.indices[0]! > cut) cut = g.indices[0]!;
    // A compaction group may hold the turn in progress (the service compacted inside this run).
    if (g.kind === 'compaction') {
      g.messages.forEach((m, i) => {
        if (m.role === 'user' && kindOf(m) === 'user' && g.indices[i]! > cut) cut = g.indices[i]!;
      });
    }
  }
  if (cut === -1) cut = groups.length ? Math.max(...groups.map((g) => g.indices[0]!)) : 0;
  const system: MessageGroup[] = [];
  const older: MessageGroup[] = [];
  const recent: MessageGroup[] = [];
  for (const g of groups) {
    if (g.indices[g.indices.length - 1]! >= cut) recent.push(g);
    else (g.kind === 'system' ? system : older).push(g);
  }
  return { system, older, recent };
}

/** Whether some function call lacks its result, or some result its call. */
export function hasOrphans(messages: readonly Message[]): boolean {
  const calls = new Set(messages.flatMap(callIdsOf));
  const results = new Set(messages.flatMap(resultIdsOf));
  for (const id of calls) if (!results.has(id)) return true;
  for (const id of results) if (!calls.has(id)) return true;
  return false;
}

/** A window may start in the middle of a tool exchange: drops leading messages of results whose call was cut off. */
export function dropLeadingResults<T extends Message>(messages: T[]): T[] {
  let start = 0;
  while (start < messages.length && messages[start]!.contents.some((c) => c.type === 'function-result')) start++;
  return start ? messages.slice(start) : messages;
}
