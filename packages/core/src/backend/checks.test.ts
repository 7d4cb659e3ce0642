import { describe, expect, it } from 'vitest';
import { ConfigurationError, SessionStateError } from '../errors.js';
import { checkInteger, checkPositiveNumber, checkSessionId, shortId } from './checks.js';

describe('backend checks', () => {
  it('shortId quotes an id and shortens a long one, saying how long it was', () => {
    expect(shortId('s1')).toBe('"s1"');
    expect(shortId('x'.repeat(100), 10)).toBe(`"${'x'.repeat(10)}…(100 chars)"`);
  });

  it('checkSessionId accepts a non-empty string and otherwise throws SessionStateError at $.sessionId', () => {
    expect(checkSessionId('s1')).toBe('s1');
    for (const bad of ['', undefined, 42, null]) {
      const error = (() => {
        try {
          checkSessionId(bad);
        } catch (e) {
          return e;
        }
      })();
      expect(SessionStateError.isInstance(error)).toBe(true);
      expect((error as SessionStateError).path).toBe('$.sessionId');
    }
  });

  it('checkInteger enforces its minimum and names the owner, the option and the value', () => {
    expect(checkInteger('Store', 'limit', 3)).toBe(3);
    expect(checkInteger('Store', 'retries', 0, 0)).toBe(0);
    expect(() => checkInteger('Store', 'limit', 0)).toThrow(new ConfigurationError('Store: limit must be a positive integer, got 0.'));
    expect(() => checkInteger('Store', 'retries', -1, 0)).toThrow('Store: retries must be a non-negative integer, got -1.');
    expect(() => checkInteger('Store', 'size', 2, 3)).toThrow('Store: size must be an integer of at least 3, got 2.');
    expect(() => checkInteger('Store', 'limit', '5')).toThrow('got "5"');
    expect(() => checkInteger('Store', 'limit', 1.5)).toThrow(ConfigurationError);
  });

  it('checkPositiveNumber rejects zero, negatives, NaN and Infinity, and describes any value without throwing', () => {
    expect(checkPositiveNumber('Client', 'timeoutMs', 0.5)).toBe(0.5);
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, '100', Object.create(null), Symbol('s')]) {
      expect(() => checkPositiveNumber('Client', 'timeoutMs', bad)).toThrow(ConfigurationError);
    }
  });
});
