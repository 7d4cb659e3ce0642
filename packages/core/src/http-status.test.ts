import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import type * as errors from './errors.js';
import {
  BackendUnavailableError,
  ConcurrencyError,
  ConfigurationError,
  ContextWindowExceededError,
  CtxError,
  InvalidInputError,
  ProviderError,
  SessionStateError,
  ToolExecutionError,
} from './errors.js';
import { errorBody, httpStatusOf } from './http-status.js';

const SECRET = 'connect ECONNREFUSED 10.1.2.3:6379 (password=hunter2)';

/** A ConcurrencyError as a hosted run throws it while the same turn runs elsewhere. */
function turnRunning(running = true): ConcurrencyError {
  return new ConcurrencyError('s1', 'The turn of message "m1" is running in another request; send it again shortly.', {
    turnStored: false,
    turnRunning: running,
  });
}

describe('httpStatusOf', () => {
  it('maps each class to the status of the core README table', () => {
    const table: Array<[unknown, number]> = [
      [new InvalidInputError('bad approval id'), 400],
      [new InvalidInputError('topK must be positive', { limit: 'topK' }), 400],
      [new InvalidInputError('message too large', { limit: 'maxMessageBytes' }), 413],
      [new InvalidInputError('input too large', { limit: 'maxInputBytes' }), 413],
      [new InvalidInputError('body too large', { limit: 'maxBodyBytes' }), 413],
      [new InvalidInputError('too many UI messages', { limit: 'maxMessages' }), 413],
      [new ConcurrencyError('s1'), 409],
      [turnRunning(), 409],
      [new BackendUnavailableError('redis', SECRET), 503],
      [new ProviderError('rag', 'beforeRun', new Error(SECRET)), 502],
      [new ConfigurationError('bad options'), 500],
      [new SessionStateError('$.state', 'bad'), 500],
      [new ContextWindowExceededError('too long'), 500],
      [new ToolExecutionError('t', 'c', 'failed'), 500],
      [new CtxError('some other'), 500],
      [new Error(SECRET), 500],
      ['a string', 500],
      [undefined, 500],
      [null, 500],
    ];
    for (const [error, status] of table) expect(httpStatusOf(error), String(error)).toBe(status);
  });

  it('knows the classes of another copy of @ctx/core (the built CommonJS bundle)', () => {
    const other = createRequire(import.meta.url)('../dist/index.cjs') as typeof errors;
    expect(httpStatusOf(new other.InvalidInputError('big', { limit: 'maxMessageBytes' }))).toBe(413);
    expect(httpStatusOf(new other.ConcurrencyError('s1'))).toBe(409);
    expect(httpStatusOf(new other.BackendUnavailableError('redis', 'down'))).toBe(503);
  });

  it('never throws, not for a Proxy whose traps throw', () => {
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error('trap');
        },
        getPrototypeOf() {
          throw new Error('trap');
        },
      },
    );
    expect(httpStatusOf(hostile)).toBe(500);
    expect(errorBody(hostile)).toEqual({ error: { type: 'Error', message: expect.any(String) } });
  });
});

describe('errorBody', () => {
  it('InvalidInputError: its message and limit', () => {
    const error = new InvalidInputError('Run input message 0 is 307200 bytes of JSON, over limits.maxMessageBytes.', {
      limit: 'maxMessageBytes',
    });
    expect(errorBody(error)).toEqual({
      error: { type: 'InvalidInputError', message: error.message, limit: 'maxMessageBytes' },
    });
    expect(errorBody(new InvalidInputError('unknown approval id'))).toEqual({
      error: { type: 'InvalidInputError', message: 'unknown approval id' },
    });
  });

  it('ConcurrencyError: its message and turnStored', () => {
    const error = new ConcurrencyError('s1', undefined, { turnStored: false });
    expect(errorBody(error)).toEqual({ error: { type: 'ConcurrencyError', message: error.message, turnStored: false } });
    expect(errorBody(new ConcurrencyError('s1'))).toEqual({
      error: { type: 'ConcurrencyError', message: new ConcurrencyError('s1').message },
    });
  });

  it('ConcurrencyError with sessionDeleted: a 409 that says the session was deleted while the turn ran', () => {
    const error = new ConcurrencyError('s1', 'Session s1 was deleted while this turn ran.', { turnStored: false, sessionDeleted: true });
    expect(httpStatusOf(error)).toBe(409);
    expect(errorBody(error)).toEqual({
      error: { type: 'ConcurrencyError', message: error.message, turnStored: false, sessionDeleted: true },
    });
  });

  it('ConcurrencyError with turnRunning: a retry hint in seconds', () => {
    const error = turnRunning();
    expect(errorBody(error)).toEqual({
      error: { type: 'ConcurrencyError', message: error.message, turnStored: false, turnRunning: true, retryAfter: 1 },
    });
    expect(errorBody(turnRunning(false)).error).toEqual({ type: 'ConcurrencyError', message: error.message, turnStored: false });
  });

  it('a 5xx names the class and a generic sentence, never the message or cause', () => {
    const cases: Array<[unknown, string]> = [
      [new BackendUnavailableError('redis', SECRET), 'BackendUnavailableError'],
      [new ProviderError('rag', 'beforeRun', new Error(SECRET)), 'ProviderError'],
      [new ConfigurationError(SECRET), 'ConfigurationError'],
      [new SessionStateError('$.state', SECRET), 'SessionStateError'],
      [new ContextWindowExceededError(SECRET), 'ContextWindowExceededError'],
      [new ToolExecutionError('t', 'c', SECRET), 'ToolExecutionError'],
      [new CtxError(SECRET), 'CtxError'],
      [new Error(SECRET), 'Error'],
      [Object.assign(new TypeError(SECRET), { name: 'InvalidInputError' }), 'Error'],
      [SECRET, 'Error'],
    ];
    for (const [error, type] of cases) {
      const body = errorBody(error);
      expect(Object.keys(body.error), type).toEqual(['type', 'message']);
      expect(body.error.type).toBe(type);
      expect(JSON.stringify(body)).not.toMatch(/hunter2|10\.1\.2\.3|ECONNREFUSED/);
    }
    expect(errorBody(new BackendUnavailableError('redis', SECRET)).error.message).toMatch(/unavailable; try again later/);
  });

  it('is plain JSON: it survives a round trip unchanged', () => {
    for (const error of [turnRunning(), new InvalidInputError('x', { limit: 'maxInputBytes' }), new Error('x')]) {
      const body = errorBody(error);
      expect(JSON.parse(JSON.stringify(body))).toEqual(body);
    }
  });

  it('takes the type from the class, not from a name the error set', () => {
    const renamed = new InvalidInputError('bad');
    renamed.name = '<script>';
    expect(errorBody(renamed).error.type).toBe('InvalidInputError');
  });
});
