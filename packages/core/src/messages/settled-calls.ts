import type { Message } from '../contracts/message.js';

/**
 * Reads messages in order and tells whether they are settled: every function call is answered
 * right after the message holding it, by tool messages holding only results, before any other
 * message, and every result answers a call so placed (or a call of its own message). Settled
 * messages need no repair before they are sent: `pairResults` moves nothing in them and
 * `answerInterruptedCalls` answers nothing. The state between messages is only the calls still
 * waiting, so lists that are each settled are settled one after the other, and a scan can resume
 * where it stopped when a list grows.
 */
export class CallScan {
  /** False from the first message that breaks the rule on. */
  #ok = true;
  /** The calls of the last message with calls that no tool message has answered yet. */
  #waiting: Set<string> | undefined;

  /** Reads the next message. */
  add(message: Message): void {
    if (!this.#ok) return;
    const contents = message.contents;
    // Indexed loops: iterating frozen arrays (stored history) with for...of takes V8's slow path.
    if (message.role === 'tool' && contents.length > 0 && onlyResults(contents)) {
      for (let i = 0; i < contents.length; i++) {
        if (!this.#waiting?.delete((contents[i] as { callId: string }).callId)) {
          this.#ok = false;
          return;
        }
      }
      return;
    }
    if (this.#waiting?.size) {
      this.#ok = false;
      return;
    }
    let calls: Set<string> | undefined;
    let results: string[] | undefined;
    for (let i = 0; i < contents.length; i++) {
      const c = contents[i]!;
      if (c.type === 'function-call') (calls ??= new Set()).add(c.callId);
      else if (c.type === 'function-result') (results ??= []).push(c.callId);
    }
    if (results) {
      for (const callId of results) {
        // A result in another message answers a call of its own message only (server-side tools).
        if (!calls?.delete(callId)) {
          this.#ok = false;
          return;
        }
      }
    }
    this.#waiting = calls;
  }

  /** Whether no message read so far broke the rule (calls may still wait for their results). */
  get ok(): boolean {
    return this.#ok;
  }

  /** Whether every message read so far is settled and no call waits for its results. */
  get settled(): boolean {
    return this.#ok && !this.#waiting?.size;
  }
}

function onlyResults(contents: Message['contents']): boolean {
  for (let i = 0; i < contents.length; i++) if (contents[i]!.type !== 'function-result') return false;
  return true;
}

/** Lists known to be settled (see `CallScan`), marked by whoever made them. */
const settledLists = new WeakSet<readonly Message[]>();

/** Marks a list the caller made, and will not change, as settled (see `CallScan`). */
export function markSettled<T extends readonly Message[]>(list: T): T {
  settledLists.add(list);
  return list;
}

/** Whether `list` was marked settled (`markSettled`). */
export function isMarkedSettled(list: readonly Message[]): boolean {
  return settledLists.has(list);
}

/** Whether `messages` are settled (see `CallScan`): marked so, or found so by reading them. */
export function isSettled(messages: readonly Message[]): boolean {
  if (settledLists.has(messages)) return true;
  const scan = new CallScan();
  for (let i = 0; i < messages.length; i++) scan.add(messages[i]!);
  return scan.settled;
}
