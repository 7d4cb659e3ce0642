import { ContextWindowExceededError, describe } from '../errors.js';
import type { Message } from '../messages/message.js';
import type { CompactionStrategy, CompactOptions } from '../contracts/compaction-strategy.js';
import { hasOrphans } from './message-groups.js';

/**
 * Runs a strategy the way the agent and `CompactionProvider` do: compaction is an optimisation, so
 * a strategy that throws, or returns a list that separates a call from its result when its input
 * did not, leaves `messages` as they were and is reported as `compaction-failed`. Only an abort
 * and `ContextWindowExceededError` (the list cannot fit the model at all) propagate.
 */
export async function runCompaction(
  strategy: CompactionStrategy,
  messages: readonly Message[],
  options: CompactOptions,
): Promise<Message[]> {
  const report = options.report ?? (() => {});
  let compacted: Message[];
  try {
    compacted = await strategy.compact(messages, options);
  } catch (error) {
    if (options.signal?.aborted || ContextWindowExceededError.isInstance(error)) throw error;
    report({ code: 'compaction-failed', message: `Compaction failed, so the uncompacted list was used: ${describe(error)}`, error });
    return [...messages];
  }
  if (!Array.isArray(compacted)) {
    report({ code: 'compaction-failed', message: 'The compaction strategy returned no list, so the uncompacted list was used.' });
    return [...messages];
  }
  if (compacted !== messages && hasOrphans(compacted) && !hasOrphans(messages)) {
    report({
      code: 'compaction-failed',
      message: 'The compaction strategy separated a function call from its result, so the uncompacted list was used.',
    });
    return [...messages];
  }
  return compacted;
}
