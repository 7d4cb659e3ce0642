import { BackendUnavailableError, ConfigurationError, ContextWindowExceededError } from '@ctx/core';
import type { Response, ResponseStreamEvent } from 'openai/resources/responses/responses';
import { describe, expect, it } from 'vitest';
import { createEventMapper, fromResponse } from './responses-mapping.js';

const created = { type: 'response.created', sequence_number: 0, response: { id: 'resp_1' } } as unknown as ResponseStreamEvent;

describe('createEventMapper', () => {
  it('a response.failed event is a typed error naming the response and what to do', () => {
    const { map } = createEventMapper({});
    map(created);
    const failed = (code: string) =>
      ({
        type: 'response.failed',
        sequence_number: 1,
        response: { id: 'resp_1', error: { code, message: 'Something went wrong.' } },
      }) as unknown as ResponseStreamEvent;
    const tooLong = (() => {
      try {
        map(failed('context_length_exceeded'));
      } catch (e) {
        return e;
      }
    })();
    expect(ContextWindowExceededError.isInstance(tooLong)).toBe(true);
    expect((tooLong as Error).message).toBe(
      "The OpenAI response resp_1 failed (context_length_exceeded): Something went wrong. Compact the conversation or lower the providers' budgets, then retry.",
    );
    expect(() => map(failed('server_error'))).toThrow(
      /^The OpenAI response resp_1 failed \(server_error\): Something went wrong\. Retry the run/,
    );
    expect(() => map(failed('server_error'))).toThrow(BackendUnavailableError);
  });

  it('an error event is a BackendUnavailableError with the id of the response it interrupted', () => {
    const { map, done } = createEventMapper({});
    map(created);
    const error = (() => {
      try {
        map({ type: 'error', sequence_number: 1, code: null, message: 'The server had an error', param: null } as ResponseStreamEvent);
      } catch (e) {
        return e;
      }
    })();
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    expect((error as BackendUnavailableError).backend).toBe('openai');
    expect((error as Error).message).toMatch(/^The OpenAI response resp_1 failed: The server had an error\. Retry the run/);
    expect(done()).toBe(false);
  });
});

describe('failed responses', () => {
  const failedEvent = (code: string | null) =>
    ({
      type: 'response.failed',
      sequence_number: 2,
      response: { id: 'resp_1', status: 'failed', error: { code, message: 'Scripted failure.' }, output: [] },
    }) as unknown as ResponseStreamEvent;
  const flatError = (code: string | null) =>
    ({ type: 'error', sequence_number: 2, code, message: 'Scripted failure.', param: null }) as ResponseStreamEvent;
  const thrown = (event: ResponseStreamEvent) => {
    const { map } = createEventMapper({});
    map(created);
    try {
      map(event);
    } catch (e) {
      return e;
    }
    return undefined;
  };

  it.each([
    ['server_error', BackendUnavailableError, 'Retry the run later.'],
    ['rate_limit_exceeded', BackendUnavailableError, 'Retry later, or lower the rate of requests or tokens.'],
    ['insufficient_quota', BackendUnavailableError, 'Check the plan and billing'],
    ['vector_store_timeout', BackendUnavailableError, 'Retry the run; if it keeps timing out'],
    ['invalid_prompt', ConfigurationError, 'Check the model, the options and the input'],
    ['image_content_policy_violation', ConfigurationError, 'Check the model, the options and the input'],
    ['invalid_api_key', ConfigurationError, 'Check the API key'],
  ] as const)('%s in a response.failed or a flat error event is a %O', (code, type, todo) => {
    for (const event of [failedEvent(code), flatError(code)]) {
      const error = thrown(event) as Error;
      expect(type.isInstance(error)).toBe(true);
      expect(error.message).toContain(`The OpenAI response resp_1 failed (${code}): Scripted failure. ${todo}`);
    }
  });

  it('a plain response with status failed is the same error, not an empty answer', () => {
    const response = { id: 'resp_2', status: 'failed', error: { code: 'server_error', message: 'Boom' }, output: [], created_at: 0 };
    expect(() => fromResponse(response as unknown as Response, {})).toThrow(
      /^The OpenAI response resp_2 failed \(server_error\): Boom\. Retry the run later\.$/,
    );
    expect(() => fromResponse({ ...response, error: { code: 'invalid_prompt', message: 'No.' } } as unknown as Response, {})).toThrow(
      ConfigurationError,
    );
  });
});
