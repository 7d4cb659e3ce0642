import { type ChatClient, type ChatOptions, type ChatResponse, type ChatResponseUpdate, ConfigurationError, type Message } from '@ctx/core';
import { checkInteger } from '@ctx/core/backend';
import { toCtxError } from './errors.js';
import { type AiSdkLanguageModel, doGenerate, SPECIFICATION_VERSIONS } from './language-model.js';
import { streamModel, toCallOptions, withRetries } from './model-call.js';
import { toChatResponse } from './results.js';

/** Options of `aiSdkChatClient`. */
export interface AiSdkChatClientOptions {
  /**
   * Retries of a call the AI SDK marks retryable (429, 5xx, a lost connection), as `generateText`
   * does: after the service's `retry-after` when it gives one under a minute, else after 2 s, 4 s...
   * A stream is retried only until its first part. Default 2.
   */
  maxRetries?: number;
}

/** A ctx `ChatClient` on an AI SDK language model. */
export interface AiSdkChatClient extends ChatClient {
  /** The AI SDK model every call goes to. */
  readonly model: AiSdkLanguageModel;
}

/**
 * Any AI SDK language model (`@ai-sdk/openai`, `@ai-sdk/anthropic`, `@ai-sdk/google`, Mistral,
 * Bedrock, Ollama and the rest; specification v2 of `ai` 5, v3 of `ai` 6 or v4 of `ai` 7) as a ctx `ChatClient`:
 * text, streaming, tool calls, reasoning, usage (with cached input and reasoning tokens when the
 * model reports them) and abort. The service keeps no conversation: ctx's history sends it.
 * `ChatOptions.additional` is merged into each call's options (`providerOptions`, `topP`, `seed`,
 * `headers`...). Failures are ctx errors (see `toCtxError`): 429 and 5xx a
 * `BackendUnavailableError`, a prompt too long a `ContextWindowExceededError`, other 4xx and bad
 * settings a `ConfigurationError`; an abort rejects with the signal's reason.
 * @throws ConfigurationError when `model` is not an AI SDK language model of specification v2, v3 or v4, or
 *   `maxRetries` is not a non-negative integer.
 */
export function aiSdkChatClient(model: AiSdkLanguageModel, options: AiSdkChatClientOptions = {}): AiSdkChatClient {
  const version = (model as { specificationVersion?: unknown } | undefined)?.specificationVersion;
  if (typeof version !== 'string' || !Object.hasOwn(SPECIFICATION_VERSIONS, version)) {
    const accepted = Object.entries(SPECIFICATION_VERSIONS)
      .map(([v, ai]) => `${v} (${ai})`)
      .join(', ');
    const got =
      model === null || typeof model !== 'object'
        ? `${model === null ? 'null' : typeof model}, not a model`
        : version === undefined
          ? 'an object without specificationVersion'
          : `a model of specification ${JSON.stringify(version)}`;
    throw new ConfigurationError(
      `aiSdkChatClient needs an AI SDK language model of specification ${accepted}; got ${got}. Pass a language model of an AI SDK provider of one of those majors (e.g. openai('gpt-4o-mini') of @ai-sdk/openai 2, 3 or 4), not an embedding, image or ctx model.`,
    );
  }
  const maxRetries = checkInteger('aiSdkChatClient', 'maxRetries', options.maxRetries ?? 2, 0);
  const name = `${model.provider} ${model.modelId}`;
  return {
    specificationVersion: 'v1',
    provider: model.provider,
    modelId: model.modelId,
    storesByDefault: false,
    model,
    async getResponse(messages: Message[], chatOptions: ChatOptions): Promise<ChatResponse> {
      const call = toCallOptions(messages, chatOptions);
      try {
        return toChatResponse(await withRetries(() => doGenerate(model, call), maxRetries, chatOptions.signal));
      } catch (error) {
        throw toCtxError(error, name, chatOptions.signal);
      }
    },
    getStreamingResponse(messages: Message[], chatOptions: ChatOptions): AsyncIterable<ChatResponseUpdate> {
      return streamModel(model, () => toCallOptions(messages, chatOptions), maxRetries, chatOptions.signal, {
        mapError: (error) => toCtxError(error, name, chatOptions.signal),
      });
    },
  };
}
