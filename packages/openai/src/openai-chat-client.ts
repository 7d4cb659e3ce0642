import type OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming, ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import { ConfigurationError, type ChatClient, type ChatOptions, type ChatResponse, type ChatResponseUpdate, type Message } from '@ctx/core';
import { createChunkMapper, fromChatCompletion, toChatMessages, toChatParams } from './chat-completions-mapping.js';
import { toCtxError, truncatedStream } from './errors.js';
import { checkOptionNames, optionNames } from '@ctx/core/backend';
import { CONNECTION_OPTIONS, connect, type OpenAIConnectionOptions } from './openai-connection.js';

/** Options of `OpenAIChatClient`. */
export interface OpenAIChatClientOptions extends OpenAIConnectionOptions {
  /** The model, e.g. `gpt-4o-mini`. With Azure, the deployment name is used when this is absent. */
  model?: string;
  /** Role for instructions and system messages: `developer` suits reasoning models. Default `system`. */
  systemRole?: 'system' | 'developer';
}

const OPTION_NAMES = optionNames<OpenAIChatClientOptions>()({ ...CONNECTION_OPTIONS, model: true, systemRole: true });

/**
 * A `ChatClient` on the Chat Completions API (OpenAI, Azure OpenAI, and compatible servers).
 * The service keeps no conversation, so ctx's history providers send it each turn.
 * @throws ConfigurationError when no model is given, or for an option it does not know (named).
 */
export class OpenAIChatClient implements ChatClient {
  readonly specificationVersion = 'v1' as const;
  readonly provider: string;
  readonly modelId: string;
  readonly storesByDefault = false;
  /** Chat Completions has no service-kept conversation to continue. */
  readonly continuesConversations = false;
  /** The underlying SDK client. */
  readonly client: OpenAI;
  readonly #secret: string | undefined;
  readonly #systemRole: 'system' | 'developer';

  constructor(options: OpenAIChatClientOptions) {
    checkOptionNames('OpenAIChatClient', options, OPTION_NAMES);
    const { client, secret } = connect('OpenAIChatClient', options);
    this.client = client;
    this.#secret = secret;
    this.modelId = resolveModel('OpenAIChatClient', options);
    this.provider = options.azure ? 'azure-openai' : 'openai';
    this.#systemRole = options.systemRole ?? 'system';
  }

  async getResponse(messages: Message[], options: ChatOptions): Promise<ChatResponse> {
    const body: ChatCompletionCreateParamsNonStreaming = { ...this.#body(messages, options), stream: false };
    try {
      return fromChatCompletion(await this.client.chat.completions.create(body, { signal: options.signal }));
    } catch (error) {
      throw toCtxError(error, this.#secret, options.signal);
    }
  }

  async *getStreamingResponse(messages: Message[], options: ChatOptions): AsyncIterable<ChatResponseUpdate> {
    const body: ChatCompletionCreateParamsStreaming = {
      ...this.#body(messages, options),
      stream: true,
      stream_options: { include_usage: true },
    };
    const map = createChunkMapper();
    let finished = false;
    let completionId = '';
    try {
      const stream = await this.client.chat.completions.create(body, { signal: options.signal });
      for await (const chunk of stream) {
        completionId ||= chunk.id;
        for (const update of map(chunk)) {
          finished ||= update.finishReason !== undefined;
          yield update;
        }
      }
    } catch (error) {
      throw toCtxError(error, this.#secret, options.signal, 'stream', completionId ? `chat completion ${completionId}` : 'chat completion');
    }
    if (!finished) throw truncatedStream('chat completion');
  }

  #body(messages: Message[], options: ChatOptions) {
    return {
      ...(options.additional as object | undefined),
      model: this.modelId,
      messages: toChatMessages(messages, options.instructions, this.#systemRole),
      ...toChatParams(options),
    };
  }
}

/**
 * The model id: `model`, else the Azure deployment.
 * @throws ConfigurationError naming `owner` when there is neither.
 */
export function resolveModel(owner: string, options: { model?: string; azure?: { deployment?: string } }): string {
  const model = options.model ?? options.azure?.deployment;
  if (!model)
    throw new ConfigurationError(`${owner} needs a model: pass \`model\` (e.g. 'gpt-4o-mini'), or for Azure OpenAI \`azure.deployment\`.`);
  return model;
}
