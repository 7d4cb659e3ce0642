import type { Message } from '../messages/message.js';
import type { ChatResponse, ChatResponseUpdate, Usage } from '../contracts/chat-client.js';
import type { JsonValue } from '../contracts/json.js';
import type { Content } from '../contracts/message.js';
import { isoNow } from '../messages/iso-now.js';

const USAGE_FIELDS = ['inputTokens', 'outputTokens', 'totalTokens', 'cachedInputTokens', 'reasoningTokens'] as const;

/** Adds two usages field by field. */
export function addUsage(a: Usage | undefined, b: Usage | undefined): Usage | undefined {
  if (!a) return b && { ...b };
  if (!b) return a;
  const out: Usage = {};
  for (const field of USAGE_FIELDS) {
    if (a[field] !== undefined || b[field] !== undefined) out[field] = (a[field] ?? 0) + (b[field] ?? 0);
  }
  return out;
}

/**
 * Assembles streamed updates into a `ChatResponse`: updates are grouped into messages by
 * `messageId` (interleaved ids each go to their own message), or by role change when ids are
 * absent; adjacent text deltas of one phase (with their annotations), refusal and reasoning deltas
 * are joined, and function-call pieces with one `callId` are merged. An update's `metadata` is
 * merged into its message's (metadata sent before the message's first content waits for it).
 */
export function assembleResponse(updates: Iterable<ChatResponseUpdate>, newId: () => string): ChatResponse {
  const assembler = createResponseAssembler(newId);
  for (const update of updates) assembler.add(update);
  return assembler.response;
}

/** Assembles a response update by update, as they arrive, so no update is kept once added. */
export interface ResponseAssembler {
  /** Adds the next update. */
  add(update: ChatResponseUpdate): void;
  /** The response so far (the same object throughout). */
  readonly response: ChatResponse;
}

/** A `ResponseAssembler` following the rules of `assembleResponse`; `newId` names messages without a `messageId`. */
export function createResponseAssembler(newId: () => string): ResponseAssembler {
  const messages: Message[] = [];
  const response: ChatResponse = { messages };
  let current: Message | undefined;
  let currentKey: string | undefined;
  let byId: Map<string, Message> | undefined;
  /** Metadata that arrived before its message's first content, by message id. */
  let pending: Map<string | undefined, Record<string, JsonValue>> | undefined;
  /** The text piece the next delta of `currentKey` most likely continues: one check and an append then. */
  let text: Extract<Content, { type: 'text' }> | undefined;
  const add = (update: ChatResponseUpdate): void => {
    const { contents } = update;
    if (
      text !== undefined &&
      contents.length === 1 &&
      (update.messageId === undefined || update.messageId === currentKey) &&
      update.usage === undefined &&
      update.finishReason === undefined &&
      update.conversationId === undefined &&
      update.metadata === undefined &&
      (update.role === undefined || update.role === current!.role)
    ) {
      const piece = contents[0]!;
      if (piece.type === 'text' && piece.phase === text.phase && piece.annotations === undefined) {
        text.text += piece.text;
        return;
      }
    }
    text = undefined;
    if (update.conversationId !== undefined) response.conversationId = update.conversationId;
    if (update.finishReason !== undefined) response.finishReason = update.finishReason;
    if (update.usage) response.usage = addUsage(response.usage, update.usage);
    if (update.contents.length === 0) {
      // Metadata of a message not started yet waits for its first content.
      if (update.metadata !== undefined) {
        const known = update.messageId === undefined ? current : byId?.get(update.messageId);
        if (known) mergeMetadata(known, update.metadata);
        else (pending ??= new Map()).set(update.messageId, { ...pending?.get(update.messageId), ...update.metadata });
      }
      return;
    }
    const role = update.role ?? current?.role ?? 'assistant';
    const key = update.messageId ?? (current && current.role === role ? currentKey : undefined);
    if (!current || key !== currentKey || role !== current.role) {
      const known = update.messageId === undefined ? undefined : byId?.get(update.messageId);
      if (known?.role === role) current = known;
      else {
        current = { id: update.messageId ?? newId(), role, contents: [], createdAt: isoNow() };
        if (update.messageId !== undefined) (byId ??= new Map()).set(update.messageId, current);
        const waiting = pending?.get(update.messageId);
        if (waiting) {
          current.metadata = waiting;
          pending!.delete(update.messageId);
        }
        messages.push(current);
      }
      currentKey = update.messageId ?? current.id;
    }
    if (update.metadata !== undefined) mergeMetadata(current, update.metadata);
    for (const piece of contents) appendContent(current.contents, piece);
    const last = current.contents[current.contents.length - 1];
    if (last?.type === 'text') text = last;
  };
  return { add, response };
}

/** Merges streamed metadata into a message's, key by key. */
function mergeMetadata(message: Message, metadata: Record<string, JsonValue>): void {
  message.metadata = { ...message.metadata, ...metadata };
}

function appendContent(contents: Content[], piece: Content): void {
  const last = contents[contents.length - 1];
  if (piece.type === 'text' && last?.type === 'text' && last.phase === piece.phase) {
    last.text += piece.text;
    if (piece.annotations?.length) last.annotations = [...(last.annotations ?? []), ...piece.annotations];
  } else if (piece.type === 'refusal' && last?.type === 'refusal') {
    last.refusal += piece.refusal;
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
