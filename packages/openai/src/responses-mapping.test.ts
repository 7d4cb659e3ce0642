import { BackendUnavailableError, ContextWindowExceededError } from '@ctx/core';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { describe, expect, it } from 'vitest';
import { createEventMapper } from './responses-mapping.js';

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
