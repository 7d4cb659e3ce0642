import type { Message } from '../messages/message.js';
import { sameMessageContent } from './message-conflict.js';

/** The `metadata.ctx.sourceType` of a stored entry, read defensively (stored data may be anything). */
function ctxOf(entry: unknown): { sourceType?: unknown; summary?: unknown } | undefined {
  const metadata = (entry as { metadata?: unknown } | null)?.metadata;
  const ctx = typeof metadata === 'object' && metadata !== null ? (metadata as { ctx?: unknown }).ctx : undefined;
  return typeof ctx === 'object' && ctx !== null ? ctx : undefined;
}

function sourceTypeOf(entry: unknown): unknown {
  return ctxOf(entry)?.sourceType;
}

/** Context stored with a turn (`storeContextMessages`): not a compaction summary, which stands for the turns before it. */
function storedWithTurn(entry: unknown): boolean {
  const ctx = ctxOf(entry);
  return ctx?.sourceType === 'context' && ctx.summary === undefined;
}

/** The `id` of a stored entry when it is a string, read defensively. */
export function idOf(entry: unknown): string | undefined {
  const id = (entry as { id?: unknown } | null)?.id;
  return typeof id === 'string' ? id : undefined;
}

/** Where a turn sits in a stored history: the entries `start` (inclusive) to `end` (exclusive). */
export interface StoredTurn {
  /** Index of its first entry (a context message stored with it, else its first input). */
  start: number;
  /** Index just past its last entry (its last response, else its last input). */
  end: number;
}

/**
 * Where a turn is stored in a history, wherever it sits, or undefined when it is not. A turn is
 * identified by its input message ids: its stored span starts at the oldest stored message with
 * one of those ids and runs on over the others and the responses stored after them
 * (`metadata.ctx.sourceType: 'response'`) up to the next message that is neither (the next turn),
 * extended back over the context messages stored just before it (`sourceType: 'context'`, stored
 * with `storeContextMessages`). It is the turn only when it holds every one of those ids and no
 * other input; with `inputs` (the turn's input messages), also only when each is stored with the
 * same content (`sameMessageContent`). Otherwise (a message reused in another turn) undefined.
 *
 * Used on load (a retried run must not see its own earlier attempt; the turns after it stay) and
 * by backends on every batch a run stores (`SaveHistoryArgs.turn`): the opening batch replaces an
 * earlier attempt in place (entries `start` to `end`), and a later batch of the turn (`persistence:
 * 'model-call'`) goes at `end`, so the turn stays in one piece even when other turns were stored
 * after it.
 */
export function findRetriedTurn(
  stored: readonly Message[] | readonly unknown[],
  inputIds: readonly string[],
  inputs?: readonly Message[],
): StoredTurn | undefined {
  if (inputIds.length === 0) return undefined;
  const ids = new Set(inputIds);
  let first = -1;
  for (let i = 0; i < stored.length; i++) {
    const id = idOf(stored[i]);
    if (id !== undefined && ids.has(id)) {
      first = i;
      break;
    }
  }
  if (first < 0) return undefined;
  return storedTurnAt(stored, first, ids, inputs);
}

/**
 * `findRetriedTurn` when the index of the oldest stored input (`first`) is known: the span from
 * there, or undefined when it is not this turn.
 */
export function storedTurnAt(
  stored: readonly Message[] | readonly unknown[],
  first: number,
  ids: ReadonlySet<string>,
  inputs?: readonly Message[],
): StoredTurn | undefined {
  const given = inputs && new Map(inputs.map((m) => [m.id, m]));
  const found = new Set<string>();
  let replied = false;
  let end = first;
  for (; end < stored.length; end++) {
    const entry = stored[end];
    const id = idOf(entry);
    if (id !== undefined && ids.has(id) && !found.has(id)) {
      const input = given?.get(id);
      if (input !== undefined && !sameMessageContent(entry, input)) return undefined;
      found.add(id);
    } else if (sourceTypeOf(entry) === 'response') replied = true;
    else if (!replied && sourceTypeOf(entry) === 'input')
      return undefined; // stored with other inputs: another turn
    else break;
  }
  // A turn stored with only some of these inputs is another turn that reused a message.
  if (found.size !== ids.size) return undefined;
  let start = first;
  while (start > 0 && storedWithTurn(stored[start - 1])) start--;
  return { start, end };
}
