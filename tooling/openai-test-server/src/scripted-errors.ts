import type { ScriptedError } from './types.js';

/**
 * The 400 the service returns when the prompt does not fit the model's context window
 * (`code: 'context_length_exceeded'`). `api: 'chat'` (default) uses the Chat Completions wording
 * and `param: 'messages'`; `api: 'responses'` the Responses API wording and `param: 'input'`.
 */
export function contextLengthExceeded(
  options: { maxTokens?: number; requestedTokens?: number; api?: 'chat' | 'responses' } = {},
): ScriptedError {
  const maxTokens = options.maxTokens ?? 128_000;
  const requestedTokens = options.requestedTokens ?? maxTokens + 2_000;
  if (options.api === 'responses') {
    return {
      error: {
        status: 400,
        message: 'Your input exceeds the context window of this model. Please adjust your input and try again.',
        type: 'invalid_request_error',
        param: 'input',
        code: 'context_length_exceeded',
      },
    };
  }
  return {
    error: {
      status: 400,
      message: `This model's maximum context length is ${maxTokens} tokens. However, your messages resulted in ${requestedTokens} tokens. Please reduce the length of the messages.`,
      type: 'invalid_request_error',
      param: 'messages',
      code: 'context_length_exceeded',
    },
  };
}
