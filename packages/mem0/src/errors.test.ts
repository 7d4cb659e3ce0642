import { BackendUnavailableError } from '@ctx/core';
import { describe, expect, it } from 'vitest';
import { toCtxError } from './errors.js';

describe('toCtxError', () => {
  const site = { operation: 'search', kind: 'platform', sessionId: 's' } as const;
  it.each([
    [{ errorCode: 'HTTP_401', message: 'x' }, 'ConfigurationError'],
    [Object.assign(new Error('Bad request'), { status: 422 }), 'ConfigurationError'],
    [Object.assign(new Error('LLM extraction failed'), { cause: Object.assign(new Error('x'), { status: 403 }) }), 'ConfigurationError'],
    [Object.assign(new Error('x'), { errorCode: 'HTTP_504' }), 'BackendUnavailableError'],
    [new TypeError('fetch failed'), 'BackendUnavailableError'],
    [new Error('something else'), 'BackendUnavailableError'],
    ['a string', 'BackendUnavailableError'],
  ])('%o becomes a %s with the call site and the cause', (error, name) => {
    const out = toCtxError(error, site);
    expect(out.name).toBe(name);
    expect(out.message).toMatch(/^mem0 \(platform\) search for session "s"/);
    expect(out.cause).toBe(error);
  });
  it('passes ctx errors through', () => {
    const e = new BackendUnavailableError('mem0', 'x');
    expect(toCtxError(e, site)).toBe(e);
  });
});
