import type { JsonObject } from './json.js';
import type { Content, Message, Role } from './message.js';
import type { Tool } from './tool.js';

/** How the model may use tools. */
export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'tool'; name: string };

/** The shape of the model's answer. */
export type ResponseFormat = { type: 'text' } | { type: 'json'; schema?: JsonObject; name?: string; description?: string };

/** Options of one model call. */
export interface ChatOptions {
  /** System instructions, sent before the messages. */
  instructions?: string;
  tools?: readonly Tool[];
  toolChoice?: ToolChoice;
  temperature?: number;
  maxOutputTokens?: number;
  /** Ask the service to keep the conversation (service-managed sessions). */
  store?: boolean;
  /** The service's conversation (or previous response) id to continue. */
  conversationId?: string;
  responseFormat?: ResponseFormat;
  signal?: AbortSignal;
  /** Provider-specific options, passed through unchanged. */
  additional?: Record<string, unknown>;
}

/** Token counts of a call. */
export interface Usage {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
}

/** Why the model stopped. */
export type FinishReason = 'stop' | 'length' | 'tool-calls' | 'content-filter' | 'error' | 'other';

/** A model's complete answer. */
export interface ChatResponse {
  messages: Message[];
  /** Set when the service keeps the conversation: pass it back as `conversationId` to continue. */
  conversationId?: string;
  usage?: Usage;
  finishReason?: FinishReason;
  /** The provider's raw response, for debugging. */
  raw?: unknown;
}

/**
 * One streamed piece of an answer. Text and reasoning arrive as deltas; a function call arrives
 * as pieces with the same `callId` whose `arguments` are concatenated.
 */
export interface ChatResponseUpdate {
  /** Updates with the same `messageId` belong to one message. */
  messageId?: string;
  role?: Role;
  contents: Content[];
  conversationId?: string;
  usage?: Usage;
  finishReason?: FinishReason;
  raw?: unknown;
}

/** The contract every model backend implements (`@ctx/openai` and third parties). */
export interface ChatClient {
  readonly specificationVersion: 'v1';
  /** e.g. `openai`. */
  readonly provider: string;
  readonly modelId: string;
  /** The service keeps conversations unless `store: false` is passed. */
  readonly storesByDefault?: boolean;
  getResponse(messages: Message[], options: ChatOptions): Promise<ChatResponse>;
  getStreamingResponse(messages: Message[], options: ChatOptions): AsyncIterable<ChatResponseUpdate>;
}

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
    const same = contents.find((c): c is Extract<Content, { type: 'function-call' }> => c.type === 'function-call' && c.callId === piece.callId);
    if (same) {
      same.arguments += piece.arguments;
      if (piece.name) same.name ||= piece.name;
    } else contents.push({ ...piece });
  } else {
    contents.push({ ...piece });
  }
}
