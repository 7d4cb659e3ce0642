import type { JsonObject, JsonValue } from './json.js';
import type { Content, Message, Role } from './message.js';
import type { ToolDefinition } from './tool-definition.js';

/** How the model may use tools. */
export type ToolChoice =
  | 'auto'
  | 'none'
  | 'required'
  | {
      /** Call exactly one tool. */
      type: 'tool';
      /** Its name. */
      name: string;
    };

/** The shape of the model's answer. */
export type ResponseFormat =
  | {
      /** Free text. */
      type: 'text';
    }
  | {
      /** A JSON value. */
      type: 'json';
      /** The JSON Schema the value must match (strict structured output where the service has it). */
      schema?: JsonObject;
      /** A name for the schema, where the service asks for one. */
      name?: string;
      /** What the value is, for the model. */
      description?: string;
    };

/** Options of one model call. */
export interface ChatOptions {
  /** System instructions, sent before the messages. */
  instructions?: string;
  /** Tools the model may call: their declarations (a `Tool`, with `execute`, is one too). */
  tools?: readonly ToolDefinition[];
  /** Whether and which tool the model must call: `'auto'` (default), `'none'`, `'required'` or one named tool. */
  toolChoice?: ToolChoice;
  /** Sampling temperature, passed to the model as is. */
  temperature?: number;
  /** Upper bound of tokens the model may generate for this response. */
  maxOutputTokens?: number;
  /** Ask the service to keep the conversation (service-managed sessions). */
  store?: boolean;
  /** The service's conversation (or previous response) id to continue. */
  conversationId?: string;
  /** Plain text (default) or JSON, optionally constrained by a JSON Schema. */
  responseFormat?: ResponseFormat;
  /** Aborts the call: the client rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Provider-specific options, passed through unchanged. */
  additional?: Record<string, unknown>;
}

/** Token counts of a call. */
export interface Usage {
  /** Tokens the model read (prompt), as the service counted them. */
  inputTokens?: number;
  /** Tokens the model generated. */
  outputTokens?: number;
  /** Input plus output tokens, when the service reports it. */
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
  /** The messages the model produced (text, function calls, reasoning), in order. */
  messages: Message[];
  /** Set when the service keeps the conversation: pass it back as `conversationId` to continue. */
  conversationId?: string;
  /** Token counts of the call, when the service reports them. */
  usage?: Usage;
  /** Why the model stopped. */
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
  /** The role of the message this update belongs to, on its first update. */
  role?: Role;
  /**
   * Metadata of the message this update belongs to (e.g. `serviceMessageId`, what the service
   * called it), merged key by key into the assembled message's `metadata`; usually on its first update.
   */
  metadata?: Record<string, JsonValue>;
  /** The content added by this update (text deltas, function calls, ...). */
  contents: Content[];
  /** The service conversation id, when the service keeps the conversation. */
  conversationId?: string;
  /** Token counts, usually on the last update. */
  usage?: Usage;
  /** Why the model stopped, on the last update. */
  finishReason?: FinishReason;
  /** The provider's own chunk, for debugging; never relied on by ctx. */
  raw?: unknown;
}

/**
 * The contract every model backend implements (`@ctx/openai` and third parties). Version `v1`; a
 * later version will arrive beside it with an adapter, so clients written against v1 keep working.
 */
export interface ChatClient {
  /** The contract version this client implements. */
  readonly specificationVersion: 'v1';
  /** e.g. `openai`. */
  readonly provider: string;
  /** The model this client calls, e.g. `gpt-4o-mini`; named in events. */
  readonly modelId: string;
  /** The service keeps conversations unless `store: false` is passed. */
  readonly storesByDefault?: boolean;
  /**
   * Whether the client continues a conversation the service keeps (`ChatOptions.conversationId`).
   * `false` declares it cannot (Chat Completions), so the agent refuses a session that has a
   * `serviceSessionId` instead of running it without its history. Absent means it can.
   */
  readonly continuesConversations?: boolean;
  /** Sends the messages and resolves to the whole response. */
  getResponse(messages: Message[], options: ChatOptions): Promise<ChatResponse>;
  /** Sends the messages and yields the response as it is generated. */
  getStreamingResponse(messages: Message[], options: ChatOptions): AsyncIterable<ChatResponseUpdate>;
}
