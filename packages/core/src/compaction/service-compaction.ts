import type { Message } from '../messages/message.js';
import type { Content, HostedToolContent } from '../contracts/message.js';

/**
 * The metadata key that marks a message as part of the window a standalone compaction returned
 * (e.g. the user messages the OpenAI `/responses/compact` endpoint keeps before its compaction
 * item); its value is the id of that compaction item. Such messages are sent with the item.
 */
export const COMPACTION_WINDOW = 'compactionWindow';

/**
 * Whether `content` is a service's compaction item: a `hosted-tool` content whose item has
 * `type: 'compaction'` (the OpenAI Responses API returns one when it compacts the conversation). The
 * item is opaque and stands for everything before it.
 */
export function isCompactionItem(content: Content): content is HostedToolContent {
  return content.type === 'hosted-tool' && content.item.type === 'compaction';
}

/** Whether a message holds a service compaction item. */
export function holdsCompaction(message: Message): boolean {
  return message.contents.some(isCompactionItem);
}

/** Where the newest message holding a compaction item sits in `messages`, or -1. */
export function newestCompactionIndex(messages: readonly Message[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (holdsCompaction(messages[i]!)) return i;
  return -1;
}

/** The id of the newest compaction item of a message, if it has one. */
function compactionIdOf(message: Message): string | undefined {
  const items = message.contents.filter(isCompactionItem);
  const id = items.at(-1)?.item.id;
  return typeof id === 'string' ? id : undefined;
}

/**
 * Whether a message that sits before the newest compaction item still goes to the service: context
 * a provider added to this request (`metadata.ctx.sourceType` `'context'`, but not a summary
 * compaction made), or a message of the window the compaction item came with (`COMPACTION_WINDOW`
 * set to its id). Everything else before it is what the item stands for, and is not sent again.
 */
export function keptBeforeCompaction(message: Message, compaction: Message): boolean {
  const window = message.metadata?.[COMPACTION_WINDOW];
  if (typeof window === 'string' && window === compactionIdOf(compaction)) return true;
  const ctx = message.metadata?.ctx as { sourceType?: unknown; summary?: unknown } | undefined;
  return ctx?.sourceType === 'context' && ctx.summary === undefined;
}

/**
 * The messages a service that compacts still needs: those from the newest message holding a
 * compaction item on, and before it only what `keptBeforeCompaction` keeps. Without a compaction
 * item, `messages` as they are. Token counts and budgets of the built-in strategies count these.
 */
export function withoutCompacted(messages: readonly Message[]): Message[] {
  const at = newestCompactionIndex(messages);
  if (at <= 0) return [...messages];
  const compaction = messages[at]!;
  return [...messages.slice(0, at).filter((m) => keptBeforeCompaction(m, compaction)), ...messages.slice(at)];
}
