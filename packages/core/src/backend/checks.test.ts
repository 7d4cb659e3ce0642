import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../errors.js';
import { checkId, checkInteger, checkPositiveNumber, checkSessionId, shortId } from './checks.js';

describe('backend checks', () => {
  it('shortId quotes an id and shortens a long one, saying how long it was', () => {
    expect(shortId('s1')).toBe('"s1"');
    expect(shortId('x'.repeat(100), 10)).toBe(`"${'x'.repeat(10)}…(100 chars)"`);
  });

  it('checkSessionId accepts any string with a non-whitespace character, as given, and otherwise throws ConfigurationError', () => {
    expect(checkSessionId('s1')).toBe('s1');
    expect(checkSessionId(' s 1 ')).toBe(' s 1 ');
    for (const bad of ['', ' ', '\t\n', '\u00a0\u2003', undefined, 42, null]) {
      expect(() => checkSessionId(bad)).toThrow(ConfigurationError);
    }
    expect(() => checkSessionId('  ')).toThrow(
      'The session id must be a string with at least one non-whitespace character; got only whitespace ("  ").',
    );
    expect(() => checkId('', 'sourceId')).toThrow('The sourceId must be');
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
