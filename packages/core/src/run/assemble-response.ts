import type { Message } from '../messages/message.js';
import type { ChatResponse, ChatResponseUpdate, Usage } from '../spec/chat-client.js';
import type { Content } from '../spec/message.js';

/** Adds two usages field by field. */
export function addUsage(a: Usage | undefined, b: Usage | undefined): Usage | undefined {
  if (!a) return b && { ...b };
  if (!b) return a;
  const sum = (x?: number, y?: number) => (x === undefined && y === undefined ? undefined : (x ?? 0) + (y ?? 0));
  const out: Usage = {};
  const input = sum(a.inputTokens, b.inputTokens);
  const output = sum(a.outputTokens, b.outputTokens);
  const total = sum(a.totalTokens, b.totalTokens);
  if (input !== undefined) out.inputTokens = input;
  if (output !== undefined) out.outputTokens = output;
  if (total !== undefined) out.totalTokens = total;
  return out;
}

/**
 * Assembles streamed updates into a `ChatResponse`: updates are grouped into messages by
 * `messageId` (or by role change when ids are absent), adjacent text and reasoning deltas are
 * joined, and function-call pieces with one `callId` are merged.
 */
export function assembleResponse(updates: Iterable<ChatResponseUpdate>, newId: () => string): ChatResponse {
  const messages: Message[] = [];
  const response: ChatResponse = { messages };
  let current: Message | undefined;
  let currentKey: string | undefined;
  for (const update of updates) {
    if (update.conversationId !== undefined) response.conversationId = update.conversationId;
    if (update.finishReason !== undefined) response.finishReason = update.finishReason;
    if (update.usage) response.usage = addUsage(response.usage, update.usage);
    if (update.contents.length === 0) continue;
    const role = update.role ?? current?.role ?? 'assistant';
    const key = update.messageId ?? (current && current.role === role ? currentKey : undefined);
    if (!current || key !== currentKey || role !== current.role) {
      current = { id: update.messageId ?? newId(), role, contents: [], createdAt: new Date().toISOString() };
      currentKey = update.messageId ?? current.id;
      messages.push(current);
    }
    for (const piece of update.contents) appendContent(current.contents, piece);
  }
  return response;
}

function appendContent(contents: Content[], piece: Content): void {
  const last = contents[contents.length - 1];
  if (piece.type === 'text' && last?.type === 'text') {
    last.text += piece.text;
  } else if (piece.type === 'reasoning' && last?.type === 'reasoning' && (piece.id === undefined || piece.id === last.id)) {
    last.text += piece.text;
    if (piece.encrypted !== undefined) last.encrypted = piece.encrypted;
  } else if (piece.type === 'function-call') {
    const same = contents.find(
      (c): c is Extract<Content, { type: 'function-call' }> => c.type === 'function-call' && c.callId === piece.callId,
    );
    if (same) {
      same.arguments += piece.arguments;
      if (piece.name) same.name ||= piece.name;
    } else contents.push({ ...piece });
  } else {
    contents.push({ ...piece });
  }
}
