import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import * as errors from './errors.js';

describe('errors', () => {
  it('isInstance tells the classes apart', () => {
    const e = new errors.ConcurrencyError('s1');
    expect(errors.CtxError.isInstance(e)).toBe(true);
    expect(errors.ConcurrencyError.isInstance(e)).toBe(true);
    expect(errors.ConfigurationError.isInstance(e)).toBe(false);
    expect(errors.CtxError.isInstance(new Error('x'))).toBe(false);
    expect(errors.CtxError.isInstance(null)).toBe(false);
    expect(e.message).toMatch(/"s1" was changed by another writer/);
    expect(e.name).toBe('ConcurrencyError');
  });

  it('isInstance works across a second copy of the package (the built CommonJS bundle)', () => {
    const other = createRequire(import.meta.url)('../dist/index.cjs') as typeof errors;
    const foreign = new other.ProviderError('rag', 'beforeRun', new Error('down'));
    expect(foreign).not.toBeInstanceOf(errors.ProviderError);
    expect(errors.ProviderError.isInstance(foreign)).toBe(true);
    expect(errors.CtxError.isInstance(foreign)).toBe(true);
    expect(errors.SessionStateError.isInstance(foreign)).toBe(false);
  });

  it('keeps the cause and a readable message', () => {
    const cause = new TypeError('bad');
    const e = new errors.ProviderError('rag', 'afterRun', cause);
    expect(e.cause).toBe(cause);
    expect(e.message).toBe('Context provider "rag" failed in afterRun: TypeError: bad');
  });
});
