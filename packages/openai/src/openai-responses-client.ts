import type OpenAI from 'openai';
import type { ResponseCreateParamsNonStreaming, ResponseCreateParamsStreaming } from 'openai/resources/responses/responses';
import type { ChatClient, ChatOptions, ChatResponse, ChatResponseUpdate, Message } from '@ctx/core';
import { checkInteger, checkOptionNames, optionNames } from '@ctx/core/backend';
import { toCtxError, truncatedStream } from './errors.js';
import { resolveModel } from './openai-chat-client.js';
import { CONNECTION_OPTIONS, connect, type OpenAIConnectionOptions } from './openai-connection.js';
import { fromCompactedResponse, type ResponsesCompaction } from './responses-compaction.js';
import { createEventMapper, fromResponse, toResponseInput, toResponseParams, toUsage } from './responses-mapping.js';

/** Options of `OpenAIResponsesClient`. */
export interface OpenAIResponsesClientOptions extends OpenAIConnectionOptions {
  /** The model, e.g. `gpt-4.1`. With Azure, the deployment name is used when this is absent. */
  model?: string;
  /**
   * Turns on server-side compaction: every request carries `context_management: [{ type:
   * 'compaction', compact_threshold }]`, and once the input passes this many tokens the service
   * compacts it and returns a compaction item. The item is kept in the response message (a
   * `hosted-tool` content), stored with the history, sent back unchanged, and what it stands for is
   * not sent again. Default: none (no server-side compaction). A positive integer, else
   * `ConfigurationError`. `options.additional.context_management` of a call overrides it.
   */
  compactThreshold?: number;
}

/** Options of `OpenAIResponsesClient.compact`. */
export interface ResponsesCompactOptions {
  /** Aborts the call. */
  signal?: AbortSignal;
  /** Sent as the compaction call's `instructions`. */
  instructions?: string;
}

const OPTION_NAMES = optionNames<OpenAIResponsesClientOptions>()({ ...CONNECTION_OPTIONS, model: true, compactThreshold: true });

/**
 * A `ChatClient` on the Responses API. The service stores responses by default, so it keeps the
 * conversation: each response's id comes back as `conversationId`, the agent puts it on
 * `session.serviceSessionId`, and the next run sends only new messages (`previous_response_id`).
 * A `conv_...` session id continues a Conversations API conversation instead. Pass
 * `options: { store: false }` to keep history locally.
 * @throws ConfigurationError (constructor) when no model is given, for an invalid `compactThreshold`,
 *   or for an option it does not know (named).
 */
export class OpenAIResponsesClient implements ChatClient {
  readonly specificationVersion = 'v1' as const;
  readonly provider: string;
  readonly modelId: string;
  readonly storesByDefault = true;
  readonly continuesConversations = true;
  /** The underlying SDK client. */
  readonly client: OpenAI;
  /** The server-side compaction threshold (`compactThreshold`), if on. */
  readonly compactThreshold: number | undefined;
  readonly #secret: string | undefined;

  constructor(options: OpenAIResponsesClientOptions) {
    checkOptionNames('OpenAIResponsesClient', options, OPTION_NAMES);
    const { client, secret } = connect('OpenAIResponsesClient', options);
    this.client = client;
    this.#secret = secret;
    this.modelId = resolveModel('OpenAIResponsesClient', options);
    this.provider = options.azure ? 'azure-openai' : 'openai';
    this.compactThreshold =
      options.compactThreshold === undefined
        ? undefined
        : checkInteger('OpenAIResponsesClient', 'compactThreshold', options.compactThreshold);
  }

  /**
   * Has the service compact `messages` (the standalone `POST /responses/compact` call with the
   * client's model) and returns the compacted window as core messages, to use in place of
   * `messages`: the user messages, then an assistant message holding the compaction item. What the
   * newest compaction item in `messages` already stands for is not sent. `serviceCompaction` wraps
   * this as a `CompactionStrategy`.
   * @throws the same typed errors as `getResponse` (e.g. `InvalidInputError` for a rejected request).
   */
  async compact(messages: readonly Message[], options: ResponsesCompactOptions = {}): Promise<ResponsesCompaction> {
    try {
      const compacted = await this.client.responses.compact(
        {
          model: this.modelId,
          input: toResponseInput(messages),
          ...(options.instructions !== undefined ? { instructions: options.instructions } : {}),
        },
        { signal: options.signal },
      );
      const usage = toUsage(compacted.usage);
      return { messages: fromCompactedResponse(compacted, messages), ...(usage ? { usage } : {}), raw: compacted };
    } catch (error) {
      throw toCtxError(error, this.#secret, options.signal);
    }
  }

  async getResponse(messages: Message[], options: ChatOptions): Promise<ChatResponse> {
    const body: ResponseCreateParamsNonStreaming = { ...this.#body(messages, options), stream: false };
    try {
      return fromResponse(await this.client.responses.create(body, { signal: options.signal }), options);
    } catch (error) {
      throw toCtxError(error, this.#secret, options.signal);
    }
  }

  async *getStreamingResponse(messages: Message[], options: ChatOptions): AsyncIterable<ChatResponseUpdate> {
    const body: ResponseCreateParamsStreaming = { ...this.#body(messages, options), stream: true };
    const { map, done, responseId } = createEventMapper(options);
    try {
      const stream = await this.client.responses.create(body, { signal: options.signal });
      for await (const event of stream) {
        const update = map(event);
        if (update) yield update;
      }
    } catch (error) {
      const id = responseId();
      throw toCtxError(error, this.#secret, options.signal, 'stream', id ? `response ${id}` : 'response');
    }
    if (!done()) throw truncatedStream('response');
  }

  #body(messages: Message[], options: ChatOptions) {
    return {
      ...(this.compactThreshold !== undefined
        ? { context_management: [{ type: 'compaction', compact_threshold: this.compactThreshold }] }
        : {}),
      ...(options.additional as object | undefined),
      model: this.modelId,
      // A previous_response_id chain must not be pruned: the service keeps what a compaction stands for itself.
      input: toResponseInput(messages, { prune: options.conversationId === undefined }),
      ...toResponseParams(options),
    };
  }
}
