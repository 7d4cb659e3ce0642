import { APIConnectionError, APIError, APIUserAbortError, OpenAIError } from 'openai';
import { BackendUnavailableError, ConfigurationError, ContextWindowExceededError, CtxError } from '@ctx/core';
import { describeError } from '@ctx/core/backend';

const BACKEND = 'openai';

/**
 * What the service said about a failure, in either form it arrives: an HTTP error (`status` set),
 * or an error inside a 200 stream or response (`status` absent: an `error` event, `response.failed`,
 * a failed response, a chat `{"error": ...}` frame).
 */
export interface ServiceFailure {
  status?: number;
  code?: string | null;
  type?: string | null;
  message: string;
}

/** The kind of a failure, which decides the ctx error and what its message tells the caller to do. */
export type FailureNature =
  | 'credentials'
  | 'quota'
  | 'rate-limit'
  | 'server'
  | 'dependency'
  | 'timeout'
  | 'conflict'
  | 'context-window'
  | 'too-large'
  | 'media-type'
  | 'legal'
  | 'rejected'
  | 'unknown';

/** Codes (and `response.error` codes) of requests the service refuses for their content: retrying the same request fails again. */
const REJECTED_CODE =
  /^(invalid_|unsupported_|image_|empty_image|failed_to_download|missing_required|model_not_found|bio_policy|data_residency|content_filter|content_policy)|_not_found$/;

/**
 * The nature of a failure: by its code or type first (they read the same in the HTTP and in-stream
 * forms), then by its HTTP status. A failure without a status and with an unknown code is `unknown`.
 */
export function failureNature(failure: ServiceFailure): FailureNature {
  const { status } = failure;
  const code = failure.code ?? '';
  const type = failure.type ?? '';
  if (status === 401 || status === 403) return 'credentials';
  if (code === 'context_length_exceeded' || /maximum context length|context window/i.test(failure.message)) return 'context-window';
  if (code === 'insufficient_quota' || type === 'insufficient_quota' || code.startsWith('billing_')) return 'quota';
  if (code === 'rate_limit_exceeded' || type === 'requests' || type === 'tokens') return 'rate-limit';
  if (/timeout|timed_out/.test(code)) return 'timeout';
  if (code === 'server_error' || type === 'server_error' || /overloaded|unavailable/.test(`${code} ${type}`)) return 'server';
  if (code === 'invalid_api_key' || type === 'authentication_error' || type === 'permission_error') return 'credentials';
  if (status === undefined) return type === 'invalid_request_error' || REJECTED_CODE.test(code) ? 'rejected' : 'unknown';
  if (status === 402) return 'quota';
  if (status === 408) return 'timeout';
  if (status === 409) return 'conflict';
  if (status === 413) return 'too-large';
  if (status === 415) return 'media-type';
  if (status === 424) return 'dependency';
  if (status === 429) return 'rate-limit';
  if (status === 451) return 'legal';
  if (status >= 500) return 'server';
  return status >= 400 ? 'rejected' : 'unknown';
}

/** Statuses the SDK retries (with backoff) before it throws. */
const RETRIED = (status: number) => status === 408 || status === 409 || status === 429 || status >= 500;

/** Per nature: what happened (after the status in an HTTP error) and what to do. */
const TEXT: Record<FailureNature, { what: string; todo: string }> = {
  credentials: { what: 'The OpenAI service refused the credentials', todo: 'Check the API key, token or endpoint.' },
  quota: {
    what: 'The OpenAI account is out of quota or credit',
    todo: 'Check the plan and billing of the account or project the key belongs to (or the credits of the gateway in front of it); retrying will not help until the quota is raised.',
  },
  'rate-limit': { what: 'The OpenAI service is rate limiting this key', todo: 'Retry later, or lower the rate of requests or tokens.' },
  server: { what: 'The OpenAI service failed', todo: 'Retry the run later.' },
  dependency: {
    what: 'A service the OpenAI endpoint depends on failed',
    todo: 'Retry the run later; if it persists, check the deployment behind the endpoint.',
  },
  timeout: { what: 'The OpenAI service timed out', todo: 'Retry the run; if it keeps timing out, shorten the request or raise `timeout`.' },
  conflict: {
    what: 'The OpenAI service reported a conflicting request',
    todo: 'Another request is using the same response or conversation; retry when it has finished.',
  },
  'context-window': {
    what: "The request does not fit the model's context window",
    todo: "Compact the conversation or lower the providers' budgets, then retry.",
  },
  'too-large': {
    what: 'The request is larger than the OpenAI service accepts',
    todo: 'Send fewer or smaller files and images, or compact the conversation.',
  },
  'media-type': {
    what: "The OpenAI service does not accept the request's content type",
    todo: 'Check that `baseURL` points at an OpenAI-protocol endpoint and that attached files are of a type the model takes.',
  },
  legal: {
    what: 'The OpenAI service refuses this request for legal reasons',
    todo: 'Check the region and terms of the account or endpoint; retrying will not help.',
  },
  rejected: {
    what: 'The OpenAI service rejected the request',
    todo: 'Check the model, the options and the input; the same request fails again.',
  },
  unknown: { what: 'The OpenAI service failed', todo: "Retry the run; if it keeps failing, check the request's tools, files and options." },
};

/** The service's message as one sentence: one full stop at the end, unless it ends with `!` or `?`. */
const sentence = (text: string) => {
  const trimmed = text.trim().replace(/\.+$/, '');
  return /[!?]$/.test(trimmed) ? trimmed : `${trimmed}.`;
};

/**
 * The ctx error for a failure the service reported, the same for its HTTP and in-stream forms:
 * credentials, a rejected request, 413, 415 and 451 → `ConfigurationError`; context length →
 * `ContextWindowExceededError`; quota or billing (`insufficient_quota`, 402), rate limits, server
 * errors, overload, timeouts, 409, 424 and unknown in-stream codes → `BackendUnavailableError`.
 * `failed` names what failed inside a stream or response (`response resp_1`). Credential failures
 * carry no `cause`: the SDK error holds the raw server text.
 */
export function serviceError(failure: ServiceFailure, options: { failed?: string; cause?: unknown } = {}): CtxError {
  const nature = failureNature(failure);
  const { what, todo } = TEXT[nature];
  const { status } = failure;
  const code = failure.code || undefined;
  const message = sentence(failure.message || 'no reason given');
  const text =
    status === undefined
      ? `The OpenAI ${options.failed ?? 'call'} failed${code ? ` (${code})` : ''}: ${message} ${todo}`
      : `${what} (${status}${code ? ` ${code}` : ''})${RETRIED(status) ? ' after retries' : ''}: ${message} ${todo}`;
  const cause = nature === 'credentials' || options.cause === undefined ? {} : { cause: options.cause };
  switch (nature) {
    case 'credentials':
    case 'rejected':
    case 'too-large':
    case 'media-type':
    case 'legal':
      return new ConfigurationError(text, cause);
    case 'context-window':
      return new ContextWindowExceededError(text, cause);
    default:
      return new BackendUnavailableError(BACKEND, text, cause);
  }
}

/**
 * Turns what the SDK threw into a ctx error. The service's own failures go through
 * `serviceError`, whether they came as an HTTP status or inside a stream (the SDK throws an
 * `APIError` without a status for an event carrying `error`); `failed` names the response or
 * completion a stream belonged to. A connection failure → `BackendUnavailableError`, an abort →
 * the signal's reason. Anything else (a reply that could not be mapped, a failing token provider)
 * is a `BackendUnavailableError` with the original as `cause`. The key is never shown.
 */
export function toCtxError(error: unknown, secret: string | undefined, signal?: AbortSignal, during?: 'stream', failed?: string): unknown {
  if (signal?.aborted) return signal.reason;
  if (CtxError.isInstance(error) || error instanceof APIUserAbortError) return error;
  const redact = (text: string) => (secret && secret.length >= 4 ? text.split(secret).join('[redacted]') : text);
  if (error instanceof APIConnectionError) {
    return new BackendUnavailableError(BACKEND, `Could not reach the OpenAI service: ${redact(error.message)}`, { cause: error });
  }
  if (error instanceof APIError) {
    const failure: ServiceFailure = {
      code: typeof error.code === 'string' ? error.code : undefined,
      type: typeof error.type === 'string' ? error.type : undefined,
      // The SDK puts the status in front of the service's message.
      message: redact(
        error.status !== undefined && error.message.startsWith(`${error.status} `)
          ? error.message.slice(String(error.status).length + 1)
          : error.message,
      ),
    };
    if (error.status !== undefined) failure.status = error.status;
    return serviceError(failure, { cause: error, ...(failed === undefined ? {} : { failed }) });
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
