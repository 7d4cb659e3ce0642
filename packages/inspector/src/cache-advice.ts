import type { CacheView, SentCall } from './model.js';

type FirstChange = NonNullable<CacheView['firstChange']>;

const PER_RUN = "declare it per-run (stability: 'per-run') so it goes after the history";

/**
 * Why a call's prefix stops repeating the previous call at item `at` (in prompt order: tools,
 * instructions, messages), which source caused it, and what to do about it.
 */
export function explainFirstChange(
  current: SentCall,
  previous: SentCall,
  at: number,
  history: ReadonlyMap<string, { text: string; changes: number }>,
): FirstChange {
  const kind = current.kinds[at] ?? previous.kinds[at] ?? 'messages';
  if (at >= current.kinds.length) {
    const sourceId = previous.owners[at] ?? 'unknown';
    return { kind, sourceId, reason: `${sourceId}: sent less than the previous call (${previous.kinds[at]} left out)` };
  }
  const before = previous.kinds[at];
  if (kind === 'tools' || before === 'tools') return toolChange(current, previous, at);
  if (kind === 'instructions' || before === 'instructions') return instructionChange(current, previous, history);
  return messageChange(current, previous, at);
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

function messageChange(current: SentCall, previous: SentCall, at: number): FirstChange {
  const firstMessage = current.kinds.indexOf('messages');
  const item = current.items.filter((i) => i.kind === 'message')[at - firstMessage];
  const sourceId = current.owners[at] ?? 'unknown';
  if (item?.summaryOf !== undefined)
    return {
      kind: 'messages',
      sourceId,
      reason: `${sourceId}: history compacted, a summary replaced ${item.summaryOf} messages`,
      advice: 'expected once per compaction; a target well below the trigger makes it rare',
    };
  const prevMessages = previous.items.filter((i) => i.kind === 'message');
  const prevAt = at - previous.kinds.indexOf('messages');
  const gone = prevMessages[prevAt];
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
