import type { Message } from '../messages/message.js';

/**
 * `messages` with every tool message that answers calls of an earlier message, but sits apart from
 * it, moved up to follow that message (after the tool messages already there), in order: a
 * conversation where results came later (approvals answered together with new input) reaches the
 * model with each call followed by its results, as every model API requires. Tool messages whose
 * calls are not all in the list stay where they are. Returns `messages` itself when nothing moved.
 */
export function pairResults(messages: Message[]): Message[] {
  /** The index of the message holding each call. */
  const holder = new Map<string, number>();
  /** Tool messages to move, by the index of the message they follow. */
  let moved: Map<number, Message[]> | undefined;
  /** The message whose results follow right now (the last one with calls, until something else comes). */
  let open = -1;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    const answers = answeredCalls(m);
    if (answers) {
      let target = -1;
      for (const callId of answers) {
        const at = holder.get(callId);
        if (at === undefined) {
          target = -1;
          break;
        }
        target = Math.max(target, at);
      }
      if (target !== -1 && target !== open) {
        moved ??= new Map();
        const list = moved.get(target);
        if (list) list.push(m);
        else moved.set(target, [m]);
      }
      continue;
    }
    open = -1;
    for (const c of m.contents) {
      if (c.type !== 'function-call') continue;
      holder.set(c.callId, i);
      open = i;
    }
  }
  if (!moved) return messages;
  const taken = new Set([...moved.values()].flat());
  const out: Message[] = [];
  let flush: Message[] | undefined;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (taken.has(m)) continue;
    if (flush && !answeredCalls(m)) {
      out.push(...flush);
      flush = undefined;
    }
    out.push(m);
    const list = moved.get(i);
    if (list) flush = flush ? [...flush, ...list] : list;
  }
  if (flush) out.push(...flush);
  return out;
}

/** The call ids a tool message answers, or undefined for any other message. */
function answeredCalls(m: Message): string[] | undefined {
  if (m.role !== 'tool' || m.contents.length === 0) return undefined;
  const ids: string[] = [];
  for (const c of m.contents) {
    if (c.type !== 'function-result') return undefined;
    ids.push(c.callId);
  }
  return ids;
}
