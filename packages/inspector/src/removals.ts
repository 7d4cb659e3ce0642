import type { RemovedView, SentCall } from './call-views.js';

/**
 * What happened to one source's messages between two calls, read from what the calls sent: the
 * messages' ids, and `metadata.ctx.summary.replaces` of a summary (the ids it stands for, those of a
 * summary it folded in included), which is how compaction leaves its mark in a run's events.
 */
export interface Removal {
  /** The source whose messages were removed (a history). */
  sourceId: string;
  /**
   * `front`: the oldest messages were cut (truncation, a sliding window, a history's window);
   * `summary`: a new summary replaced them; `middle`: some were left out, newer ones kept (a budget).
   */
  kind: 'front' | 'summary' | 'middle';
  /** Messages the previous call sent that this one does not. */
  messages: number;
  /** Their tokens. */
  tokens: number;
  /** With `summary`: earlier summaries among them, folded into the new one. */
  foldedSummaries: number;
  /** With `summary`: how many messages the new summary stands for (those of a summary it folded in included). */
  summaryOf?: number;
  /** Ids of the messages removed. */
  ids: ReadonlySet<string>;
}

/**
 * The sources whose messages carry on from call to call (a history) and lost some since the
 * previous call, in the order they were sent, with what happened to them. A source that makes its
 * messages anew every run (retrieved documents, per-run context) replaces them, which is no removal.
 */
export function removalsSince(previous: SentCall, current: SentCall): Removal[] {
  const carriesOn = new Set<string>();
  for (const [id, m] of current.messageIds) if (previous.messageIds.has(id)) carriesOn.add(m.sourceId);
  const summaries = new Map<string, number>();
  for (const [id, m] of current.messageIds) if (m.summary && !previous.messageIds.has(id)) summaries.set(m.sourceId, m.summary.length);

  // The previous call's messages per source, in order, each marked kept or removed.
  const bySource = new Map<string, Array<{ id: string; tokens: number; kept: boolean; summary: boolean }>>();
  for (const [id, m] of previous.messageIds) {
    if (!(carriesOn.has(m.sourceId) || summaries.has(m.sourceId))) continue;
    let list = bySource.get(m.sourceId);
    if (!list) bySource.set(m.sourceId, (list = []));
    list.push({ id, tokens: m.tokens, kept: current.messageIds.has(id), summary: m.summary !== undefined });
  }
  const out: Removal[] = [];
  for (const [sourceId, list] of bySource) {
    const removed = list.filter((m) => !m.kept);
    if (!removed.length) continue;
    const firstKept = list.findIndex((m) => m.kept);
    const fromFront = firstKept === -1 || list.slice(firstKept).every((m) => m.kept);
    const summaryOf = summaries.get(sourceId);
    out.push({
      sourceId,
      kind: summaryOf !== undefined ? 'summary' : fromFront ? 'front' : 'middle',
      messages: removed.length,
      tokens: removed.reduce((a, m) => a + m.tokens, 0),
      foldedSummaries: summaryOf !== undefined ? removed.filter((m) => m.summary).length : 0,
      ...(summaryOf !== undefined ? { summaryOf } : {}),
      ids: new Set(removed.map((m) => m.id)),
    });
  }
  return out;
}

const REASONS: Record<Removal['kind'], string> = {
  front: "removed from the front (compaction: truncation or a sliding window, or the history's window)",
  summary: 'compaction: replaced by a summary',
  middle: 'left out, newer messages kept (a budget, or compaction)',
};

/** What a call left out that the session's previous call had sent, per source, and why. */
export function removedSince(previous: SentCall, current: SentCall): RemovedView[] {
  return removalsSince(previous, current).map((r) => ({
    sourceId: r.sourceId,
    messages: r.messages,
    tokens: r.tokens,
    reason: r.foldedSummaries ? `${REASONS.summary} (the previous summary folded in)` : REASONS[r.kind],
  }));
}
