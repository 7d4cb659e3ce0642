import type { Message } from '../messages/message.js';

/** The `metadata.ctx.sourceType` of a stored entry, read defensively (stored data may be anything). */
function sourceTypeOf(entry: unknown): unknown {
  const metadata = (entry as { metadata?: unknown } | null)?.metadata;
  const ctx = typeof metadata === 'object' && metadata !== null ? (metadata as { ctx?: unknown }).ctx : undefined;
  return typeof ctx === 'object' && ctx !== null ? (ctx as { sourceType?: unknown }).sourceType : undefined;
}

/**
 * Where a stored earlier attempt of a turn begins, or undefined when there is none. A turn is
 * identified by its input message ids; its stored attempt is the newest stored message with one of
 * those ids and everything after it, provided that everything after it is one of those inputs or a
 * response (`metadata.ctx.sourceType: 'response'`), extended back over the context messages stored
 * just before it (`sourceType: 'context'`, stored with `storeContextMessages`). An input id found
 * before another turn's messages is not a retry (the caller reused an id): undefined.
 *
 * Used on load (a retried run must not see its own earlier attempt) and by backends on the opening
 * batch of a turn (`SaveHistoryArgs.turn`), which replaces the attempt so the turn is stored once.
 */
export function findRetriedTurn(stored: readonly Message[] | readonly unknown[], inputIds: readonly string[]): number | undefined {
  if (inputIds.length === 0) return undefined;
  const inputs = new Set(inputIds);
  let start: number | undefined;
  for (let i = stored.length - 1; i >= 0; i--) {
    const id = (stored[i] as { id?: unknown } | null)?.id;
    if (typeof id === 'string' && inputs.has(id)) start = i;
    else if (sourceTypeOf(stored[i]) !== 'response') break;
  }
  if (start === undefined) return undefined;
  while (start > 0 && sourceTypeOf(stored[start - 1]) === 'context') start--;
  return start;
}
