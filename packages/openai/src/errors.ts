import { APIConnectionError, APIError, APIUserAbortError, OpenAIError } from 'openai';
import { BackendUnavailableError, ConfigurationError, ContextWindowExceededError, CtxError } from '@ctx/core';
import { describeError } from '@ctx/core/backend';

const BACKEND = 'openai';

/**
 * Turns what the SDK threw into a ctx error: 401/403 → `ConfigurationError` (never showing the key),
 * context-length → `ContextWindowExceededError`, 429/5xx/connection → `BackendUnavailableError`
 * (after the SDK's own retries), an abort → the signal's reason. Anything else (a reply that could
 * not be mapped, a failing token provider) is a `BackendUnavailableError` with the original as `cause`.
 */
export function toCtxError(error: unknown, secret: string | undefined, signal?: AbortSignal, during?: 'stream'): unknown {
  if (signal?.aborted) return signal.reason;
  if (CtxError.isInstance(error) || error instanceof APIUserAbortError) return error;
  const redact = (text: string) => (secret && secret.length >= 4 ? text.split(secret).join('[redacted]') : text);
  if (error instanceof APIConnectionError) {
    return new BackendUnavailableError(BACKEND, `Could not reach the OpenAI service: ${redact(error.message)}`, { cause: error });
  }
  if (error instanceof APIError) {
    const status = error.status ?? 0;
    const code = typeof error.code === 'string' ? error.code : undefined;
    const message = redact(error.message);
    if (status === 401 || status === 403) {
      // No cause: the SDK error carries the raw server text.
      return new ConfigurationError(
        `The OpenAI service refused the credentials (${status}${code ? ` ${code}` : ''}): check the API key, token or endpoint. ${message}`,
      );
    }
    if (code === 'context_length_exceeded' || /maximum context length|context window/i.test(error.message)) {
      return new ContextWindowExceededError(`The request does not fit the model's context window: ${message}`, { cause: error });
    }
    if (status === 408 || status === 409 || status === 429 || status >= 500) {
      return new BackendUnavailableError(
        BACKEND,
        `The OpenAI service failed with ${status}${code ? ` ${code}` : ''} after retries: ${message}`,
        { cause: error },
      );
    }
    return new ConfigurationError(`The OpenAI service rejected the request (${status}${code ? ` ${code}` : ''}): ${message}`, {
      cause: error,
    });
  }
  if (error instanceof OpenAIError || error instanceof SyntaxError) {
    return new BackendUnavailableError(BACKEND, `The OpenAI service sent a malformed reply: ${redact((error as Error).message)}`, {
      cause: error,
    });
  }
  if (during === 'stream' && error instanceof Error) {
    // e.g. undici's "terminated" when the connection drops mid-stream
    return new BackendUnavailableError(BACKEND, `The OpenAI stream broke off: ${redact(error.message)}`, { cause: error });
  }
  return new BackendUnavailableError(
    BACKEND,
    `The OpenAI call failed outside the service's answer: ${redact(describeError(error))}. Check the client's settings (endpoint, azureADTokenProvider); if the service answered, its reply was not in the documented format.`,
    { cause: error },
  );
}

/** The error for a stream that ended before the service said it was complete. */
export function truncatedStream(what: string): BackendUnavailableError {
  return new BackendUnavailableError(
    BACKEND,
    `The OpenAI ${what} stream ended before it completed; the reply is incomplete. Retry the run.`,
  );
}
