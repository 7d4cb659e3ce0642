import { BackendUnavailableError, ConfigurationError, ContextWindowExceededError, Message } from '@ctx/core';
import { startOpenAITestServer, type OpenAITestServer } from '@ctx/openai-test-server';
import { APIError, APIUserAbortError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failureNature, toCtxError } from './errors.js';
import { OpenAIChatClient } from './openai-chat-client.js';

describe('toCtxError', () => {
  it('anything the SDK did not classify is a BackendUnavailableError with the cause and the key redacted', () => {
    const cause = new TypeError("Cannot read properties of undefined (reading 'some') near sk-secret-123");
    const error = toCtxError(cause, 'sk-secret-123');
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    expect((error as BackendUnavailableError).backend).toBe('openai');
    expect((error as Error).message).toMatch(
      /^The OpenAI call failed outside the service's answer: TypeError: Cannot read properties .*\[redacted\]\. Check the client's settings/,
    );
    expect((error as Error).message).not.toContain('sk-secret-123');
    expect((error as Error).cause).toBe(cause);
  });

  it('ctx errors pass; an aborted call gives the abort reason', () => {
    const ctx = new ConfigurationError('x');
    expect(toCtxError(ctx, undefined)).toBe(ctx);
    const controller = new AbortController();
    const reason = new Error('cancelled by user');
    controller.abort(reason);
    expect(toCtxError(new APIUserAbortError(), undefined, controller.signal)).toBe(reason);
  });
});

describe('the service failures, by status', () => {
  let server: OpenAITestServer;
  beforeAll(async () => {
    server = await startOpenAITestServer({ apiKey: 'test-key' });
  });
  afterAll(() => server.close());
  const client = () => new OpenAIChatClient({ baseURL: server.url, apiKey: 'test-key', model: 'gpt-4o', maxRetries: 0 });

  it.each([
    [
      400,
      undefined,
      ConfigurationError,
      'The OpenAI service rejected the request (400): Scripted. Check the model, the options and the input',
    ],
    [401, undefined, ConfigurationError, 'The OpenAI service refused the credentials (401 invalid_api_key): Scripted. Check the API key'],
    [402, undefined, BackendUnavailableError, 'The OpenAI account is out of quota or credit (402): Scripted. Check the plan and billing'],
    [403, undefined, ConfigurationError, 'The OpenAI service refused the credentials (403): Scripted. Check the API key'],
    [
      404,
      'model_not_found',
      ConfigurationError,
      'The OpenAI service rejected the request (404 model_not_found): Scripted. Check the model',
    ],
    [408, undefined, BackendUnavailableError, 'The OpenAI service timed out (408) after retries: Scripted. Retry the run'],
    [
      409,
      undefined,
      BackendUnavailableError,
      'The OpenAI service reported a conflicting request (409) after retries: Scripted. Another request',
    ],
    [
      413,
      undefined,
      ConfigurationError,
      'The request is larger than the OpenAI service accepts (413): Scripted. Send fewer or smaller files',
    ],
    [
      415,
      undefined,
      ConfigurationError,
      "The OpenAI service does not accept the request's content type (415): Scripted. Check that `baseURL`",
    ],
    [422, undefined, ConfigurationError, 'The OpenAI service rejected the request (422): Scripted. Check the model'],
    [424, undefined, BackendUnavailableError, 'A service the OpenAI endpoint depends on failed (424): Scripted. Retry the run later'],
    [
      429,
      undefined,
      BackendUnavailableError,
      'The OpenAI service is rate limiting this key (429 rate_limit_exceeded) after retries: Scripted. Retry later',
    ],
    [
      429,
      'insufficient_quota',
      BackendUnavailableError,
      'The OpenAI account is out of quota or credit (429 insufficient_quota) after retries: Scripted. Check the plan and billing',
    ],
    [451, undefined, ConfigurationError, 'The OpenAI service refuses this request for legal reasons (451): Scripted. Check the region'],
    [500, undefined, BackendUnavailableError, 'The OpenAI service failed (500) after retries: Scripted. Retry the run later.'],
    [502, undefined, BackendUnavailableError, 'The OpenAI service failed (502) after retries: Scripted. Retry the run later.'],
    [
      503,
      'service_unavailable',
      BackendUnavailableError,
      'The OpenAI service failed (503 service_unavailable) after retries: Scripted. Retry the run later.',
    ],
    [504, undefined, BackendUnavailableError, 'The OpenAI service failed (504) after retries: Scripted. Retry the run later.'],
    [529, undefined, BackendUnavailableError, 'The OpenAI service failed (529) after retries: Scripted. Retry the run later.'],
  ] as const)('%i %s is a %O with what to do', async (status, code, type, message) => {
    server.enqueue({ error: { status, message: 'Scripted.', ...(code ? { code } : {}) } });
    const error = await client()
      .getResponse([Message.user('hi')], {})
      .catch((e: unknown) => e);
    expect(type.isInstance(error)).toBe(true);
    expect((error as Error).message.startsWith(message)).toBe(true);
    expect((error as Error).cause).toSatisfy((cause) =>
      status === 401 || status === 403 ? cause === undefined : cause instanceof APIError,
    );
  });
});

describe('a failure inside a stream maps as its HTTP form', () => {
  // What the SDK throws for a stream event that carries `error`: an APIError without a status.
  const inStream = (error: object) => new APIError(undefined, error, undefined, undefined);
  const http = (status: number, error: object) => APIError.generate(status, { error }, undefined, new Headers());

  it.each([
    [{ type: 'server_error', code: 'server_error' }, 500, BackendUnavailableError],
    [{ type: 'server_error', code: null }, 500, BackendUnavailableError],
    [{ type: 'requests', code: 'rate_limit_exceeded' }, 429, BackendUnavailableError],
    [{ type: 'insufficient_quota', code: 'insufficient_quota' }, 429, BackendUnavailableError],
    [{ type: 'server_error', code: 'service_unavailable' }, 503, BackendUnavailableError],
    [{ type: 'overloaded_error', code: null }, 529, BackendUnavailableError],
    [{ type: 'server_error', code: 'vector_store_timeout' }, 408, BackendUnavailableError],
    [{ type: 'invalid_request_error', code: 'context_length_exceeded' }, 400, ContextWindowExceededError],
    [{ type: 'invalid_request_error', code: null }, 400, ConfigurationError],
    [{ type: 'invalid_request_error', code: 'invalid_image_url' }, 400, ConfigurationError],
    [{ type: 'invalid_request_error', code: 'invalid_api_key' }, 401, ConfigurationError],
  ] as const)('%o (HTTP %i) is a %O either way', (body, status, type) => {
    const error = { ...body, message: 'Scripted failure.', param: null };
    const streamed = toCtxError(inStream(error), undefined, undefined, 'stream', 'response resp_1');
    const answered = toCtxError(http(status, error), undefined);
    expect(type.isInstance(streamed)).toBe(true);
    expect(type.isInstance(answered)).toBe(true);
    expect((streamed as Error).message).toMatch(/^The OpenAI response resp_1 failed( \([a-z_]+\))?: Scripted failure\. [A-Z]/);
    expect((streamed as Error).message).not.toMatch(/\(0|undefined/);
  });

  it('an in-stream quota error says what to do about it; the key never shows', () => {
    const error = toCtxError(
      inStream({ type: 'insufficient_quota', code: 'insufficient_quota', message: 'You exceeded your quota for sk-secret-123.' }),
      'sk-secret-123',
      undefined,
      'stream',
      'chat completion chatcmpl-1',
    ) as Error;
    expect(error.message).toBe(
      'The OpenAI chat completion chatcmpl-1 failed (insufficient_quota): You exceeded your quota for [redacted]. Check the plan and billing of the account or project the key belongs to (or the credits of the gateway in front of it); retrying will not help until the quota is raised.',
    );
  });
});

describe('failureNature', () => {
  it('reads the code before the status, and leaves an unknown in-stream code unknown', () => {
    expect(failureNature({ status: 400, code: 'server_error', message: '' })).toBe('server');
    expect(failureNature({ status: 429, type: 'insufficient_quota', message: '' })).toBe('quota');
    expect(failureNature({ status: 403, code: 'context_length_exceeded', message: '' })).toBe('credentials');
    expect(failureNature({ code: 'billing_not_active', message: '' })).toBe('quota');
    expect(failureNature({ code: 'something_new', message: '' })).toBe('unknown');
    expect(failureNature({ code: 'previous_response_not_found', message: '' })).toBe('rejected');
  });
});
