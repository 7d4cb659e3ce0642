import {
  APICallError,
  EmptyResponseBodyError,
  InvalidArgumentError,
  InvalidPromptError,
  InvalidResponseDataError,
  JSONParseError,
  LoadAPIKeyError,
  LoadSettingError,
  TypeValidationError,
  UnsupportedFunctionalityError,
} from '@ai-sdk/provider';
import { BackendUnavailableError, ConfigurationError, ContextWindowExceededError, CtxError } from '@ctx/core';
import { describeError } from '@ctx/core/backend';

/** What a service says when the prompt is longer than the model's context window (OpenAI, Anthropic, Google, Mistral, Bedrock...). */
const CONTEXT_WINDOW =
  /context_length_exceeded|context length|context window|prompt is too long|too many (input )?tokens|input is too long|exceeds the maximum number of tokens|maximum prompt length/i;

/**
 * The ctx error for what an AI SDK model threw; `model` names it in messages (`openai.chat gpt-4o`).
 * - the caller aborted → the signal's reason;
 * - `APICallError`: a context-window message → `ContextWindowExceededError`; 401, 403, 413 and
 *   other 4xx the AI SDK does not retry → `ConfigurationError`; 408, 409, 429, 5xx, anything
 *   retryable and a request that never got an answer → `BackendUnavailableError`;
 * - a missing key or setting, an invalid prompt or argument, an unsupported feature → `ConfigurationError`;
 * - an empty, unparsable or invalid reply, and anything else → `BackendUnavailableError`.
 * The original error is the `cause`, except for credential failures (their text may echo the key).
 */
export function toCtxError(error: unknown, model: string, signal?: AbortSignal): unknown {
  if (signal?.aborted) return signal.reason;
  if (CtxError.isInstance(error)) return error;
  const backend = model.split(/[.\s]/, 1)[0] || 'ai-sdk';
  if (APICallError.isInstance(error)) {
    const status = error.statusCode;
    const said = `${error.message}${error.responseBody && !error.message.includes(error.responseBody) ? ` ${error.responseBody}` : ''}`;
    const detail = `${status === undefined ? '' : ` (${status})`}: ${error.message}`;
    if (CONTEXT_WINDOW.test(said)) {
      return new ContextWindowExceededError(
        `The prompt does not fit the context window of ${model}${detail}. Compact the conversation or lower the providers' budgets, then retry.`,
        { cause: error },
      );
    }
    if (status === 401 || status === 403) {
      return new ConfigurationError(`${model} refused the credentials (${status}). Check the API key or token and the endpoint.`);
    }
    if (status === undefined || error.isRetryable || status === 408 || status === 409 || status === 429 || status >= 500) {
      const what = status === undefined ? 'could not be reached' : status === 429 ? 'is rate limiting this key' : 'failed';
      return new BackendUnavailableError(backend, `${model} ${what}${detail}. Retry later.`, { cause: error });
    }
    return new ConfigurationError(
      `${model} rejected the request${detail}. Check the model, the options and the input; the same request fails again.`,
      {
        cause: error,
      },
    );
  }
  if (LoadAPIKeyError.isInstance(error) || LoadSettingError.isInstance(error)) {
    return new ConfigurationError(`${model} is not configured: ${error.message}`, { cause: error });
  }
  if (InvalidPromptError.isInstance(error) || InvalidArgumentError.isInstance(error) || UnsupportedFunctionalityError.isInstance(error)) {
    return new ConfigurationError(`${model} cannot take this request: ${error.message}`, { cause: error });
  }
  if (
    EmptyResponseBodyError.isInstance(error) ||
    InvalidResponseDataError.isInstance(error) ||
    JSONParseError.isInstance(error) ||
    TypeValidationError.isInstance(error)
  ) {
    return new BackendUnavailableError(backend, `${model} sent a malformed reply: ${error.message}. Retry the run.`, { cause: error });
  }
  return new BackendUnavailableError(backend, `The call to ${model} failed: ${describeError(error)}.`, { cause: error });
}

/** The error for a stream that ended before its `finish` part. */
export function truncatedStream(model: string): BackendUnavailableError {
  return new BackendUnavailableError(
    model.split(/[.\s]/, 1)[0] || 'ai-sdk',
    `The stream of ${model} ended before it finished; the reply is incomplete. Retry the run.`,
  );
}
