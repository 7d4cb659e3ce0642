import type OpenAI from 'openai';
import type { ResponseCreateParamsNonStreaming, ResponseCreateParamsStreaming } from 'openai/resources/responses/responses';
import type { ChatClient, ChatOptions, ChatResponse, ChatResponseUpdate, Message } from '@ctx/core';
import { toCtxError, truncatedStream } from './errors.js';
import { resolveModel } from './openai-chat-client.js';
import { connect, type OpenAIConnectionOptions } from './openai-connection.js';
import { createEventMapper, fromResponse, toResponseInput, toResponseParams } from './responses-mapping.js';

/** Options of `OpenAIResponsesClient`. */
export interface OpenAIResponsesClientOptions extends OpenAIConnectionOptions {
  /** The model, e.g. `gpt-4.1`. With Azure, the deployment name is used when this is absent. */
  model?: string;
}

/**
 * A `ChatClient` on the Responses API. The service stores responses by default, so it keeps the
 * conversation: each response's id comes back as `conversationId`, the agent puts it on
 * `session.serviceSessionId`, and the next run sends only new messages (`previous_response_id`).
 * A `conv_...` session id continues a Conversations API conversation instead. Pass
 * `options: { store: false }` to keep history locally.
 */
export class OpenAIResponsesClient implements ChatClient {
  readonly specificationVersion = 'v1' as const;
  readonly provider: string;
  readonly modelId: string;
  readonly storesByDefault = true;
  readonly continuesConversations = true;
  /** The underlying SDK client. */
  readonly client: OpenAI;
  readonly #secret: string | undefined;

  constructor(options: OpenAIResponsesClientOptions) {
    const { client, secret } = connect('OpenAIResponsesClient', options);
    this.client = client;
    this.#secret = secret;
    this.modelId = resolveModel('OpenAIResponsesClient', options);
    this.provider = options.azure ? 'azure-openai' : 'openai';
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
      ...(options.additional as object | undefined),
      model: this.modelId,
      input: toResponseInput(messages),
      ...toResponseParams(options),
    };
  }
}
