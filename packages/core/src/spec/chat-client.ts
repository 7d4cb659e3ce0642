import type { JsonObject } from './json.js';
import type { Content, Message, Role } from './message.js';
import type { ToolDefinition } from './tool-definition.js';

/** How the model may use tools. */
export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'tool'; name: string };

/** The shape of the model's answer. */
export type ResponseFormat = { type: 'text' } | { type: 'json'; schema?: JsonObject; name?: string; description?: string };

/** Options of one model call. */
export interface ChatOptions {
  /** System instructions, sent before the messages. */
  instructions?: string;
  /** Tools the model may call: their declarations (a `Tool`, with `execute`, is one too). */
  tools?: readonly ToolDefinition[];
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
  /** The part of `inputTokens` the service read from its prompt cache (billed lower). */
  cachedInputTokens?: number;
  /** The part of `outputTokens` the model spent reasoning (not in the visible answer). */
  reasoningTokens?: number;
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

/**
 * The contract every model backend implements (`@ctx/openai` and third parties). Version `v1`; a
 * later version will arrive beside it with an adapter, so clients written against v1 keep working.
 */
export interface ChatClient {
  readonly specificationVersion: 'v1';
  /** e.g. `openai`. */
  readonly provider: string;
  readonly modelId: string;
  /** The service keeps conversations unless `store: false` is passed. */
  readonly storesByDefault?: boolean;
  /**
   * Whether the client continues a conversation the service keeps (`ChatOptions.conversationId`).
   * `false` declares it cannot (Chat Completions), so the agent refuses a session that has a
   * `serviceSessionId` instead of running it without its history. Absent means it can.
   */
  readonly continuesConversations?: boolean;
  getResponse(messages: Message[], options: ChatOptions): Promise<ChatResponse>;
  getStreamingResponse(messages: Message[], options: ChatOptions): AsyncIterable<ChatResponseUpdate>;
}
