import type { CacheView, SentCall } from './call-views.js';
import type { Removal } from './removals.js';

type FirstChange = NonNullable<CacheView['firstChange']>;

const PER_RUN = "declare it per-run (stability: 'per-run') so it goes after the history";

/** What the model knows of the history's removals: since the previous call, and run after run. */
export interface RemovalContext {
  /** What each history lost since the previous call, and how (`removalsSince`). */
  removals: readonly Removal[];
  /** Per source: in how many runs in a row (this one included) its history was cut from the front. */
  frontCuts: ReadonlyMap<string, number>;
}

/**
 * Why a call's prefix stops repeating the previous call at item `at` (in prompt order: tools,
 * instructions, messages), which source caused it, and what to do about it.
 */
export function explainFirstChange(
  current: SentCall,
  previous: SentCall,
  at: number,
  history: ReadonlyMap<string, { text: string; changes: number }>,
  removals: RemovalContext,
): FirstChange {
  const kind = current.kinds[at] ?? previous.kinds[at] ?? 'messages';
  if (at >= current.kinds.length) {
    const sourceId = previous.owners[at] ?? 'unknown';
    return { kind, sourceId, reason: `${sourceId}: sent less than the previous call (${previous.kinds[at]} left out)` };
  }
  const before = previous.kinds[at];
  if (kind === 'tools' || before === 'tools') return toolChange(current, previous, at);
  if (kind === 'instructions' || before === 'instructions') return instructionChange(current, previous, history);
  return messageChange(current, previous, at, removals);
}

function toolChange(current: SentCall, previous: SentCall, at: number): FirstChange {
  const names = (s: SentCall) => s.items.filter((i) => i.kind === 'tool');
  const now = names(current)[at];
  const then = names(previous)[at];
  const advice = `offer the same tools on every call, or ${PER_RUN.replace('it goes', 'its tools go')}`;
  if (now && !names(previous).some((t) => t.label === now.label))
    return {
      kind: 'tools',
      sourceId: now.sourceId,
      reason: `${now.sourceId}: tool "${now.label}" added`,
      advice: `${now.sourceId}: ${advice}`,
    };
  if (then && !names(current).some((t) => t.label === then.label))
    return {
      kind: 'tools',
      sourceId: then.sourceId,
      reason: `${then.sourceId}: tool "${then.label}" removed`,
      advice: `${then.sourceId}: ${advice}`,
    };
  const tool = now ?? then!;
  const moved = then && now && then.label !== now.label;
  return {
    kind: 'tools',
    sourceId: tool.sourceId,
    reason: `${tool.sourceId}: tool "${tool.label}" ${moved ? 'moved' : 'changed its description or parameters'}`,
    advice: `${tool.sourceId}: ${advice}`,
  };
}

function instructionChange(
  current: SentCall,
  previous: SentCall,
  history: ReadonlyMap<string, { text: string; changes: number }>,
): FirstChange {
  const a = current.instructionParts;
  const b = previous.instructionParts;
  let i = 0;
  while (i < a.length && i < b.length && a[i]!.sourceId === b[i]!.sourceId && a[i]!.text === b[i]!.text) i++;
  const part = a[i] ?? b[i];
  const sourceId = part?.sourceId ?? 'agent';
  if (!a[i]) return { kind: 'instructions', sourceId, reason: `${sourceId}: instruction left out`, advice: `${sourceId}: ${PER_RUN}` };
  if (!b[i] || b[i]!.sourceId !== a[i]!.sourceId)
    return { kind: 'instructions', sourceId, reason: `${sourceId}: instruction added`, advice: `${sourceId}: ${PER_RUN}` };
  const every = (history.get(sourceId)?.changes ?? 0) >= 2;
  return {
    kind: 'instructions',
    sourceId,
    reason: `${sourceId}: instruction ${every ? 'changes every run' : 'changed since the previous call'}`,
    advice: `${sourceId}: ${every ? '' : 'if it changes every run, '}${PER_RUN}`,
  };
}

function messageChange(current: SentCall, previous: SentCall, at: number, context: RemovalContext): FirstChange {
  const firstMessage = current.kinds.indexOf('messages');
  const item = current.items.filter((i) => i.kind === 'message')[at - firstMessage];
  const sourceId = current.owners[at] ?? 'unknown';
  const prevMessages = previous.items.filter((i) => i.kind === 'message');
  const prevAt = at - previous.kinds.indexOf('messages');
  const gone = prevMessages[prevAt];
  // Compaction first: the message the previous call sent here was cut from its history, or a new
  // summary stands here. Whatever follows a removal is sent anew: that is the break, not the history.
  const isNewSummary = item?.summaryOf !== undefined && !previous.messageIds.has(item.id ?? '');
  const removal = context.removals.find(
    (r) =>
      r.kind !== 'middle' &&
      ((gone?.id !== undefined && r.ids.has(gone.id)) || (isNewSummary && r.kind === 'summary' && r.sourceId === sourceId)),
  );
  if (removal) return compactionChange(removal, context.frontCuts.get(removal.sourceId) ?? 0);
  if (item?.summaryOf !== undefined)
    return {
      kind: 'messages',
      sourceId,
      reason: `${sourceId}: compaction put a summary of ${plural(item.summaryOf, 'message')} here`,
      advice: `${sourceId}: ${SUMMARIZE_RARELY}`,
    };
  if (gone?.id !== undefined && !current.messageIds.has(gone.id) && gone.sourceId !== sourceId) {
    // What the previous call had here is not sent again. After the history (only the input behind
    // it), that is per-run context made anew each run: the prefix before it holds, as designed.
    const tail = prevMessages
      .slice(prevAt + 1)
      .every((m) => m.sourceId === 'input' || (m.id !== undefined && !current.messageIds.has(m.id)));
    if (tail)
      return {
        kind: 'messages',
        sourceId: gone.sourceId,
        reason: `${gone.sourceId}: per-run context after the history, new each run (expected)`,
      };
    return {
      kind: 'messages',
      sourceId: gone.sourceId,
      reason: `${gone.sourceId}: a message ahead of the history changed or was left out`,
      advice: `${gone.sourceId}: ${PER_RUN}`,
    };
  }
  // A history carries its messages on from call to call (same ids); other sources make theirs anew.
  const carriesOn = current.items.some(
    (i) => i.kind === 'message' && i.sourceId === sourceId && i.id !== undefined && previous.messageIds.has(i.id),
  );
  const wasThere = item?.id !== undefined && previous.messageIds.has(item.id);
  if (carriesOn && !wasThere && sourceId !== 'input')
    return {
      kind: 'messages',
      sourceId,
      reason: `${sourceId}: earlier messages were removed or rewritten (compaction, a window, a budget)`,
      advice: `${sourceId}: trim in steps (compaction with a target below its trigger) so the prefix holds for several runs`,
    };
  return {
    kind: 'messages',
    sourceId,
    reason: `${sourceId}: context message changes between runs, ahead of the history`,
    advice: `${sourceId}: ${PER_RUN}`,
  };
}

const SUMMARIZE_RARELY =
  "expected once per summary; summarize rarely, with a trigger well above what it keeps (compactWhen's trigger, summarization's keepRecentGroups), so the history grows for several runs between summaries";

/** The first change is compaction's: what it removed, and how to make it break the prefix rarely. */
function compactionChange(removal: Removal, runsInARow: number): FirstChange {
  const { sourceId, summaryOf } = removal;
  if (removal.kind === 'summary') {
    const replaced = removal.messages - removal.foldedSummaries;
    const reason = removal.foldedSummaries
      ? `${sourceId}: compaction folded the previous summary and ${plural(replaced, 'more message')} into a new summary${summaryOf !== undefined ? ` (of ${plural(summaryOf, 'message')} now)` : ''}`
      : `${sourceId}: compaction replaced ${plural(replaced, 'earlier message')} with a summary`;
    return { kind: 'messages', sourceId, reason, advice: `${sourceId}: ${SUMMARIZE_RARELY}` };
  }
  const reason = `${sourceId}: compaction removed ${plural(removal.messages, 'message')} from the front (truncation, a sliding window or the history's maxMessages), so everything after is sent anew`;
  const advice =
    runsInARow >= 2
      ? `${sourceId}: the front was cut in ${runsInARow} runs in a row (a sliding window, or truncation with target: 1), so the prefix breaks every run: cut in steps instead, e.g. truncation({ maxMessages, target: 0.5 }) cuts to half its limit and the front then holds for several runs`
      : `${sourceId}: expected once per cut; keep compaction's target well below its limit (truncation's target, default 0.5) so it cuts rarely and the front holds for several runs`;
  return { kind: 'messages', sourceId, reason, advice };
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
