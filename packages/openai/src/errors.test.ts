import { BackendUnavailableError, ConfigurationError } from '@ctx/core';
import { APIUserAbortError } from 'openai';
import { describe, expect, it } from 'vitest';
import { toCtxError } from './errors.js';

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
