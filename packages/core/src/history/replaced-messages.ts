import { idOf, type StoredTurn } from './retried-turn.js';

/** The `SessionContext.metadata` key of the stored messages this run's turn replaces. */
const REPLACED = 'ctx.replaced-messages';

/**
 * Notes in the run's `context.metadata`, for the run's other providers, the ids of the stored
 * entries of an earlier attempt of this run's turn (`stored` from `span.start` to `span.end`),
 * which the turn replaces when stored: a recall index drops what it derived from them.
 */
export function noteReplacedMessages(metadata: Record<string, unknown>, stored: readonly unknown[], span: StoredTurn): void {
  const ids = new Set(replacedMessagesOf(metadata));
  for (const entry of stored.slice(span.start, span.end)) {
    const id = idOf(entry);
    if (id !== undefined) ids.add(id);
  }
  metadata[REPLACED] = [...ids];
}

/** The ids `noteReplacedMessages` noted in this run (none when the turn is not a retry). */
export function replacedMessagesOf(metadata: Record<string, unknown>): readonly string[] {
  const ids = metadata[REPLACED];
  return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string') : [];
}
