import type { Message } from '../messages/message.js';

/** What a group holds. */
export type MessageGroupKind = 'system' | 'summary' | 'user' | 'assistant' | 'tool-exchange' | 'orphan-results';

/**
 * Messages that must be kept or dropped together: a system message, a summary, a user turn, an
 * assistant reply, or an assistant message with function calls plus every message holding their
 * results. Compaction works on groups, so it never orphans a call or a result.
 */
export interface MessageGroup {
  kind: MessageGroupKind;
  messages: Message[];
}

/** Whether a message is a summary written by compaction (`metadata.ctx.summary`). */
export function isSummary(message: Message): boolean {
  const ctx = message.metadata?.ctx as { summary?: unknown } | undefined;
  return ctx?.summary !== undefined;
}

const callIdsOf = (m: Message) => m.contents.flatMap((c) => (c.type === 'function-call' ? [c.callId] : []));
const resultIdsOf = (m: Message) => m.contents.flatMap((c) => (c.type === 'function-result' ? [c.callId] : []));

/** Splits messages into atomic groups, in order. `flattenGroups(groupMessages(m))` equals `m`. */
export function groupMessages(messages: readonly Message[]): MessageGroup[] {
  const groups: MessageGroup[] = [];
  let open: { group: MessageGroup; pending: Set<string> } | undefined;
  for (const m of messages) {
    const results = resultIdsOf(m);
    // A message of results joins the exchange whose calls it answers.
    if (results.length && open && results.every((id) => open!.pending.has(id)) && m.role !== 'assistant') {
      open.group.messages.push(m);
      for (const id of results) open.pending.delete(id);
      if (open.pending.size === 0) open = undefined;
      continue;
    }
    open = undefined;
    const calls = callIdsOf(m);
    if (calls.length) {
      const group: MessageGroup = { kind: 'tool-exchange', messages: [m] };
      groups.push(group);
      const pending = new Set(calls);
      for (const id of results) pending.delete(id); // results in the same message (server-side tools)
      if (pending.size) open = { group, pending };
      continue;
    }
    const kind: MessageGroupKind = isSummary(m)
      ? 'summary'
      : results.length
        ? 'orphan-results'
        : m.role === 'system'
          ? 'system'
          : m.role === 'user'
            ? 'user'
            : 'assistant';
    groups.push({ kind, messages: [m] });
  }
  return groups;
}

/** The messages of groups, in order. */
export function flattenGroups(groups: readonly MessageGroup[]): Message[] {
  return groups.flatMap((g) => g.messages);
}

/**
 * Splits groups into what compaction may drop and what it must keep: system messages are always
 * kept, and so is everything from the newest user turn on (the question being answered and the
 * tool exchanges of the current run), or the last group when there is no user turn.
 */
export function splitProtected(groups: readonly MessageGroup[]): { system: MessageGroup[]; older: MessageGroup[]; recent: MessageGroup[] } {
  let lastUser = -1;
  for (let i = groups.length - 1; i >= 0; i--) {
    if (groups[i]!.kind === 'user') {
      lastUser = i;
      break;
    }
  }
  const cut = lastUser === -1 ? Math.max(0, groups.length - 1) : lastUser;
  const system: MessageGroup[] = [];
  const older: MessageGroup[] = [];
  groups.slice(0, cut).forEach((g) => (g.kind === 'system' ? system : older).push(g));
  return { system, older, recent: groups.slice(cut) };
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
