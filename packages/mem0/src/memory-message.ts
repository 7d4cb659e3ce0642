import { Message, type Role, type Tokenizer } from '@ctx/core';
import { fitPrefix } from '@ctx/core/backend';
import type { Mem0Memory } from './mem0-adapter.js';

/** The first line of the memory message. */
export const DEFAULT_MEMORY_HEADER =
  'Memories about the user from earlier conversations, most relevant first. Use them when they help; they may be out of date, and what the user says now takes precedence.';

/** Turns the memories kept for one run into the text of the memory message. */
export type Mem0Render = (memories: readonly Mem0Memory[]) => string;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Collapses whitespace so one memory is one line and cannot fake the message's structure. */
function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** The default rendering: `header`, then one `- memory` line each. */
export function renderMemories(memories: readonly Mem0Memory[], header: string = DEFAULT_MEMORY_HEADER): string {
  return [header, ...memories.map((m) => `- ${oneLine(m.text)}`)].join('\n');
}

/** Builds the memory message: role `role`, the rendered text, and `metadata.mem0.memoryIds`. */
export function createMemoryMessage(memories: readonly Mem0Memory[], role: Extract<Role, 'user' | 'system'>, render: Mem0Render): Message {
  const text = render(memories);
  const metadata = { mem0: { memoryIds: memories.map((m) => m.id) } };
  return role === 'system' ? Message.system(text, { metadata }) : Message.user(text, { metadata });
}

/** Whether `message` is a memory message of this package (by its `metadata.mem0.memoryIds` marker). */
export function isMemoryMessage(message: Message): boolean {
  const mem0 = message.metadata?.mem0;
  return isObject(mem0) && Array.isArray(mem0.memoryIds);
}

/** What `fitMemories` kept. */
export interface MemoryFit {
  /** The most relevant memories whose message fits the budget, in rank order. */
  kept: Mem0Memory[];
  /** The message of the kept memories, or `undefined` when none fit. */
  message: Message | undefined;
  /** Tokens of `message` by `tokenizer` (0 without one). */
  tokens: number;
}

/**
 * Keeps the longest prefix of `ranked` (most relevant first, core's `fitPrefix`) whose whole message, measured with
 * `tokenizer.countMessageTokens` including the header and the per-message overhead, fits
 * `maxTokens` (all of them without a cap). Lowest-ranked memories go first; a memory that does not fit also stops the ones
 * ranked below it, so a dropped memory is never more relevant than a kept one.
 */
export function fitMemories(
  ranked: readonly Mem0Memory[],
  build: (memories: readonly Mem0Memory[]) => Message,
  tokenizer: Tokenizer,
  maxTokens?: number,
): MemoryFit {
  if (ranked.length === 0) return { kept: [], message: undefined, tokens: 0 };
  if (maxTokens === undefined) {
    const message = build(ranked);
    return { kept: [...ranked], message, tokens: tokenizer.countMessageTokens([message]) };
  }
  const k = fitPrefix(ranked, maxTokens, (prefix) => tokenizer.countMessageTokens([build(prefix)]));
  if (k === 0) return { kept: [], message: undefined, tokens: 0 };
  const kept = ranked.slice(0, k);
  const message = build(kept);
  return { kept, message, tokens: tokenizer.countMessageTokens([message]) };
}
