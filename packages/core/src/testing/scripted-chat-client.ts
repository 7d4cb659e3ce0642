import { ConfigurationError } from '../errors.js';
import { generateId } from '../messages/id.js';
import { Message } from '../messages/message.js';
import type { ChatClient, ChatOptions, ChatResponse, ChatResponseUpdate, FinishReason, Usage } from '../contracts/chat-client.js';
import type { JsonValue } from '../contracts/json.js';

/** A function call a scripted reply makes. `arguments` may be an object (serialized for you) or JSON text. */
export interface ScriptedToolCall {
  /** The tool to call. */
  name: string;
  /** Its arguments: an object, or JSON text as a model would send it. */
  arguments?: Record<string, JsonValue> | string;
  /** The call id (default: generated). */
  callId?: string;
}

/** One scripted answer: text, tool calls, or both; `error` makes the call fail instead. */
export interface ScriptedReply {
  /** Text of the reply. */
  text?: string;
  /** Function calls the model makes. */
  toolCalls?: ScriptedToolCall[];
  /** Reasoning text before the answer. */
  reasoning?: string;
  /** A service conversation id to return. */
  conversationId?: string;
  /** Token counts to report (default: characters / 4). */
  usage?: Usage;
  /** Why the model stopped (default: `stop`, or `tool-calls` with tool calls). */
  finishReason?: FinishReason;
  /** Fail the call with this error instead. */
  error?: unknown;
  /** Milliseconds to wait before answering (honours the abort signal). */
  delayMs?: number;
}

/** One call the client received, for assertions. */
export interface ScriptedCall {
  /** The messages the client was sent. */
  messages: Message[];
  /** The options of the call. */
  options: ChatOptions;
  /** Whether it was a streaming call. */
  streaming: boolean;
}

/** Computes a reply from the call; return a string for plain text. */
export type ScriptedResponder = (
  messages: Message[],
  options: ChatOptions,
  index: number,
) => string | ScriptedReply | Promise<string | ScriptedReply>;

/** Options of `ScriptedChatClient`. */
export interface ScriptedChatClientOptions {
  /** The replies, in order, or a function that computes each. */
  replies: Array<string | ScriptedReply> | ScriptedResponder;
  /** The `modelId` it reports. Default `scripted-model`. */
  modelId?: string;
  /** Declare that the service keeps conversations by default. Default false. */
  storesByDefault?: boolean;
  /** Characters per streamed text chunk. Default 8. */
  chunkSize?: number;
}

/**
 * A deterministic `ChatClient` for tests and offline demos: it answers from a script, records every
 * call, streams its replies in chunks (function-call arguments in two pieces), and counts usage as
 * characters / 4. When a list of replies runs out it throws a `ConfigurationError`.
 */
export class ScriptedChatClient implements ChatClient {
  /** The contract version it implements. */
  readonly specificationVersion = 'v1' as const;
  /** The provider name it reports: `scripted`. */
  readonly provider = 'scripted';
  /** The model id it reports. */
  readonly modelId: string;
  /** Whether it reports that its service stores conversations by default (`storesByDefault` option). */
  readonly storesByDefault: boolean;
  /** Every call received, in order. */
  readonly calls: ScriptedCall[] = [];
  readonly #replies: ScriptedChatClientOptions['replies'];
  readonly #chunkSize: number;

  constructor(options: ScriptedChatClientOptions) {
    this.modelId = options.modelId ?? 'scripted-model';
    this.storesByDefault = options.storesByDefault ?? false;
    this.#replies = options.replies;
    this.#chunkSize = options.chunkSize ?? 8;
  }

  /** The next scripted reply, as a whole response. */
  /** The next scripted reply, as a whole response. */
  async getResponse(messages: Message[], options: ChatOptions): Promise<ChatResponse> {
    const reply = await this.#next(messages, options, false);
    const response: ChatResponse = {
      messages: [toMessage(reply)],
      finishReason: reply.finishReason ?? (reply.toolCalls?.length ? 'tool-calls' : 'stop'),
      usage: reply.usage ?? usageOf(messages, reply),
    };
    if (reply.conversationId !== undefined) response.conversationId = reply.conversationId;
    return response;
  }

  /** The next scripted reply, streamed in chunks. */
  async *getStreamingResponse(messages: Message[], options: ChatOptions): AsyncIterable<ChatResponseUpdate> {
    const reply = await this.#next(messages, options, true);
    const message = toMessage(reply);
    const size = this.#chunkSize;
    for (const content of message.contents) {
      options.signal?.throwIfAborted();
      if (content.type === 'text' || content.type === 'reasoning') {
        for (let i = 0; i < content.text.length; i += size) {
          yield { messageId: message.id, role: 'assistant', contents: [{ ...content, text: content.text.slice(i, i + size) }] };
          await Promise.resolve();
        }
      } else if (content.type === 'function-call') {
        const half = Math.ceil(content.arguments.length / 2);
        yield { messageId: message.id, role: 'assistant', contents: [{ ...content, arguments: content.arguments.slice(0, half) }] };
        yield {
          messageId: message.id,
          role: 'assistant',
          contents: [{ type: 'function-call', callId: content.callId, name: '', arguments: content.arguments.slice(half) }],
        };
      }
    }
    const last: ChatResponseUpdate = {
      messageId: message.id,
      role: 'assistant',
      contents: [],
      finishReason: reply.finishReason ?? (reply.toolCalls?.length ? 'tool-calls' : 'stop'),
      usage: reply.usage ?? usageOf(messages, reply),
    };
    if (reply.conversationId !== undefined) last.conversationId = reply.conversationId;
    yield last;
  }

  async #next(messages: Message[], options: ChatOptions, streaming: boolean): Promise<ScriptedReply> {
    options.signal?.throwIfAborted();
    const index = this.calls.length;
    this.calls.push({ messages: structuredClone(messages), options: { ...options }, streaming });
    let raw: string | ScriptedReply | undefined;
    if (typeof this.#replies === 'function') raw = await this.#replies(messages, options, index);
    else {
      raw = this.#replies[index];
      if (raw === undefined)
        throw new ConfigurationError(
          `ScriptedChatClient has ${this.#replies.length} replies and was called a ${index + 1}th time; add replies to the script.`,
        );
    }
    const reply = typeof raw === 'string' ? { text: raw } : raw;
    if (reply.delayMs) await sleep(reply.delayMs, options.signal);
    if (reply.error !== undefined) throw reply.error;
    return reply;
  }
}

function toMessage(reply: ScriptedReply): Message {
  const message = Message.assistant([]);
  if (reply.reasoning) message.contents.push({ type: 'reasoning', text: reply.reasoning });
  if (reply.text) message.contents.push({ type: 'text', text: reply.text });
  for (const call of reply.toolCalls ?? []) {
    message.contents.push({
      type: 'function-call',
      callId: call.callId ?? `call_${generateId().slice(0, 8)}`,
      name: call.name,
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {}),
    });
  }
  return message;
}

function usageOf(messages: Message[], reply: ScriptedReply): Usage {
  let chars = 0;
  for (const m of messages) chars += Message.text(m).length;
  const inputTokens = Math.ceil(chars / 4);
  const outputTokens = Math.ceil(((reply.text ?? '').length + JSON.stringify(reply.toolCalls ?? []).length) / 4);
  return { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens };
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
