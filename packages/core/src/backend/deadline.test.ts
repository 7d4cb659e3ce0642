import { afterEach, describe, expect, it, vi } from 'vitest';
import { BackendUnavailableError, ConfigurationError } from '../errors.js';
import { abortable, withDeadline } from './deadline.js';

const site = { backend: 'demo', operation: 'Demo get for session "s1"' };
const never = () => new Promise<never>(() => {});

afterEach(() => {
  vi.useRealTimers();
});

describe('withDeadline', () => {
  it('resolves with what the call returns, and leaves its signal alone', async () => {
    let seen: AbortSignal | undefined;
    await expect(
      withDeadline(
        async (signal) => {
          seen = signal;
          return 42;
        },
        { ...site, timeoutMs: 1000 },
      ),
    ).resolves.toBe(42);
    expect(seen?.aborted).toBe(false);
  });

  it('fails at the deadline with BackendUnavailableError even when the call ignores its signal, and aborts that signal', async () => {
    vi.useFakeTimers();
    let seen: AbortSignal | undefined;
    let settled = false;
    const pending = withDeadline(
      (signal) => {
        seen = signal;
        return never();
      },
      { ...site, timeoutMs: 50, hint: 'Raise timeoutMs.' },
    ).catch((e: unknown) => e);
    void pending.finally(() => {
      settled = true;
    });
    // Not a millisecond early (the clock is fake: only the deadline's timer can settle it).
    await vi.advanceTimersByTimeAsync(49);
    expect(settled).toBe(false);
    expect(seen?.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const error = await pending;
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    expect((error as BackendUnavailableError).backend).toBe('demo');
    expect((error as Error).message).toBe('Demo get for session "s1" did not answer within 50 ms. Raise timeoutMs.');
    expect(seen?.aborted).toBe(true);
    expect(seen?.reason).toBe(error);
  });

  it("ends with the caller's abort reason at once, and passes the abort to the call", async () => {
    const caller = new AbortController();
    let seen: AbortSignal | undefined;
    const pending = withDeadline(
      (signal) => {
        seen = signal;
        return never();
      },
      { ...site, timeoutMs: 60_000, signal: caller.signal },
    );
    const reason = new Error('user left');
    caller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(seen?.reason).toBe(reason);
  });

  it("does not call at all when the caller's signal is already aborted", async () => {
    const caller = new AbortController();
    caller.abort(new Error('gone'));
    let called = false;
    await expect(
      withDeadline(
        async () => {
          called = true;
        },
        { ...site, timeoutMs: 1000, signal: caller.signal },
      ),
    ).rejects.toThrow('gone');
    expect(called).toBe(false);
  });

  it('the abort wins over whatever the call throws on its way out', async () => {
    const error = await withDeadline(
      (signal) =>
        new Promise<never>((_, reject) => {
          signal.addEventListener('abort', () => reject(new Error('socket closed')));
        }),
      { ...site, timeoutMs: 30 },
    ).catch((e: unknown) => e);
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain('did not answer within 30 ms');
  });

  it('maps what the call threw: ctx errors pass, others become BackendUnavailableError with the cause; mapError overrides', async () => {
    const own = new ConfigurationError('bad key');
    await expect(withDeadline(() => Promise.reject(own), { ...site, timeoutMs: 1000 })).rejects.toBe(own);
    const cause = new TypeError('fetch failed');
    const mapped = await withDeadline(() => Promise.reject(cause), { ...site, timeoutMs: 1000 }).catch((e: unknown) => e);
    expect(BackendUnavailableError.isInstance(mapped)).toBe(true);
    expect((mapped as Error).message).toBe('Demo get for session "s1" failed: TypeError: fetch failed');
    expect((mapped as Error).cause).toBe(cause);
    const custom = new ConfigurationError('mapped');
    await expect(withDeadline(() => Promise.reject(cause), { ...site, timeoutMs: 1000, mapError: () => custom })).rejects.toBe(custom);
  });

  it('maps a call that throws before returning a promise', async () => {
    const error = await withDeadline(
      () => {
        throw new Error('sync');
      },
      { ...site, timeoutMs: 1000 },
    ).catch((e: unknown) => e);
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
  });

  it('a call that takes no signal is bounded alike: the deadline and the abort win over a later failure', async () => {
    vi.useFakeTimers();
    const late = () => new Promise<never>((_, reject) => setTimeout(() => reject(new Error('late')), 60));
    const pending = withDeadline(late, { ...site, timeoutMs: 20 }).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(20);
    const timedOut = await pending;
    expect(BackendUnavailableError.isInstance(timedOut)).toBe(true);
    expect((timedOut as Error).message).toContain('did not answer within 20 ms');
    const controller = new AbortController();
    const aborted = withDeadline(late, { ...site, timeoutMs: 1000, signal: controller.signal }).catch((e: unknown) => e);
    controller.abort(new Error('stop'));
    expect(((await aborted) as Error).message).toBe('stop');
    // Both calls fail now, after the deadline and the abort: vitest fails the run on an unhandled rejection.
    await vi.advanceTimersByTimeAsync(60);
  });
});

describe('abortable', () => {
  it('settles like the promise, or with the abort reason as soon as the signal aborts', async () => {
    await expect(abortable(Promise.resolve(1), new AbortController().signal)).resolves.toBe(1);
    const controller = new AbortController();
    const pending = abortable(never(), controller.signal);
    controller.abort(new Error('stop'));
    await expect(pending).rejects.toThrow('stop');
  });
});
