import { BackendUnavailableError, ConfigurationError } from '@ctx/core';
import { describe, expect, it } from 'vitest';
import { callMem0, toCtxError } from './errors.js';

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

describe('statuses without a mapping before', () => {
  const site = { operation: 'add', kind: 'platform', sessionId: 's' } as const;
  // As mem0ai's MemoryClient throws them: a MemoryError subclass with errorCode HTTP_<status>.
  const thrown = (status: number, name = 'MemoryError') =>
    Object.assign(new Error(`HTTP ${status} error`), { name, errorCode: `HTTP_${status}` });

  it.each([
    [402, BackendUnavailableError, 'failed (HTTP 402): MemoryError: HTTP 402 error. Check the plan and billing of the mem0 project'],
    [405, ConfigurationError, 'was rejected (HTTP 405): check `host`, the mem0ai version and the options.'],
    [408, BackendUnavailableError, 'failed (HTTP 408): MemoryError: HTTP 408 error. Retry later, or raise the timeout'],
    [410, ConfigurationError, 'was rejected (HTTP 410): check `host`, the mem0ai version and the options.'],
    [413, ConfigurationError, "was refused as too large (HTTP 413): store shorter turns, or raise the mem0 project's memory limit"],
    [415, ConfigurationError, 'was refused (unsupported content type) (HTTP 415): check that `host` is the mem0 API'],
    [424, BackendUnavailableError, 'failed (HTTP 424): MemoryError: HTTP 424 error. A service mem0 depends on failed'],
    [
      429,
      BackendUnavailableError,
      "failed (HTTP 429): MemoryError: HTTP 429 error. Retry later; if it persists, check the mem0 plan's rate limits.",
    ],
    [451, ConfigurationError, 'was refused for legal reasons (HTTP 451): check the region and terms of the mem0 project'],
    [502, BackendUnavailableError, 'failed (HTTP 502): MemoryError: HTTP 502 error. Retry later.'],
    [503, BackendUnavailableError, 'failed (HTTP 503): MemoryError: HTTP 503 error. Retry later.'],
    [504, BackendUnavailableError, 'failed (HTTP 504): MemoryError: HTTP 504 error. Retry later.'],
    [529, BackendUnavailableError, 'failed (HTTP 529): MemoryError: HTTP 529 error. Retry later.'],
  ] as const)('HTTP %i is a %O saying what to do', (status, type, message) => {
    const error = thrown(status);
    const out = toCtxError(error, site);
    expect(type.isInstance(out)).toBe(true);
    expect(out.message).toContain(`mem0 (platform) add for session "s" ${message}`);
    expect(out.cause).toBe(error);
  });
});

describe('callMem0', () => {
  const site = { operation: 'search', kind: 'platform', sessionId: 's' } as const;
  const never = () => new Promise<never>(() => {});

  it('resolves with what the call resolves to', async () => {
    await expect(callMem0(async () => 42, site, 1000, 'searchTimeoutMs')).resolves.toBe(42);
  });
  it('maps what the call throws or rejects with, synchronously too', async () => {
    await expect(callMem0(() => Promise.reject(new TypeError('fetch failed')), site, 1000, 'x')).rejects.toThrow(
      /^mem0 \(platform\) search for session "s" failed \(unreachable\)/,
    );
    const sync = () => {
      throw Object.assign(new Error('no'), { status: 401 });
    };
    await expect(callMem0(sync, site, 1000, 'x')).rejects.toBeInstanceOf(ConfigurationError);
  });
  it('rejects at the deadline with a BackendUnavailableError naming the option', async () => {
    const error = await callMem0(never, site, 20, 'searchTimeoutMs').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BackendUnavailableError);
    expect((error as Error).message).toMatch(/search for session "s" did not answer within 20 ms\. .*raise searchTimeoutMs/);
  });
  it('rejects with the reason of the signal, and the call failing afterwards changes nothing', async () => {
    const controller = new AbortController();
    let fail: (e: Error) => void = () => {};
    const call = () => new Promise<never>((_, reject) => (fail = reject));
    const result = callMem0(call, site, 10_000, 'x', controller.signal).catch((e: unknown) => e);
    const reason = new Error('user cancelled');
    controller.abort(reason);
    fail(new Error('late'));
    expect(await result).toBe(reason);
  });
  it('does not start the call when the signal has already aborted', async () => {
    let calls = 0;
    const reason = new Error('gone');
    const call = async () => void calls++;
    await expect(callMem0(call, site, 1000, 'x', AbortSignal.abort(reason))).rejects.toBe(reason);
    expect(calls).toBe(0);
  });
});
