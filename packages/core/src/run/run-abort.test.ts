import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { NEVER_ABORTS, RunAbort } from './run-abort.js';

describe('RunAbort', () => {
  it("hands out the controller's signal when something can abort the run, else NEVER_ABORTS and nothing to race", () => {
    const controller = new AbortController();
    const live = new RunAbort(controller);
    expect(live.cancel).toBe(controller.signal);
    expect(live.signal).toBe(controller.signal);
    const idle = new RunAbort();
    expect(idle.cancel).toBeUndefined();
    expect(idle.signal).toBe(NEVER_ABORTS);
  });

  it('NEVER_ABORTS never aborts and keeps no listener, however many are added and never removed', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      for (let i = 0; i < 1_000; i++) NEVER_ABORTS.addEventListener('abort', () => {});
      NEVER_ABORTS.onabort = () => {};
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(getEventListeners(NEVER_ABORTS, 'abort').length).toBeLessThanOrEqual(1); // at most the onabort handler
    expect(warnings).toEqual([]);
    expect(NEVER_ABORTS.aborted).toBe(false);
    expect(() => NEVER_ABORTS.throwIfAborted()).not.toThrow();
  });

  it('NEVER_ABORTS combines with a live signal: AbortSignal.any aborts with the other one', () => {
    const controller = new AbortController();
    const both = AbortSignal.any([NEVER_ABORTS, controller.signal]);
    controller.abort(new Error('stop'));
    expect(both.aborted).toBe(true);
    expect((both.reason as Error).message).toBe('stop');
  });
});
