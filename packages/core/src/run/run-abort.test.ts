import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { neverAborts, RUNS_PER_SIGNAL, RunAbort } from './run-abort.js';

describe('RunAbort', () => {
  it("hands out the controller's signal when something can abort the run, else one that never aborts and nothing to race", () => {
    const controller = new AbortController();
    const live = new RunAbort(controller);
    expect(live.cancel).toBe(controller.signal);
    expect(live.signal).toBe(controller.signal);
    const idle = new RunAbort();
    expect(idle.cancel).toBeUndefined();
    expect(idle.signal.aborted).toBe(false);
    expect(idle.signal).not.toBe(controller.signal);
  });

  it(`neverAborts shares one signal among at most ${RUNS_PER_SIGNAL} runs, then makes a new one`, () => {
    const signals = new Set(Array.from({ length: RUNS_PER_SIGNAL * 4 }, () => neverAborts()));
    expect(signals.size).toBeGreaterThanOrEqual(4);
    expect(signals.size).toBeLessThanOrEqual(5);
  });

  it('a never-aborting signal keeps no listener, however many are added and never removed', async () => {
    const signal = neverAborts();
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      for (let i = 0; i < 1_000; i++) signal.addEventListener('abort', () => {});
      signal.onabort = () => {};
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(getEventListeners(signal, 'abort').length).toBeLessThanOrEqual(1); // at most the onabort handler
    expect(warnings).toEqual([]);
    expect(signal.aborted).toBe(false);
    expect(() => signal.throwIfAborted()).not.toThrow();
  });

  it('a never-aborting signal combines with a live one: AbortSignal.any aborts with the other', () => {
    const controller = new AbortController();
    const both = AbortSignal.any([neverAborts(), controller.signal]);
    controller.abort(new Error('stop'));
    expect(both.aborted).toBe(true);
    expect((both.reason as Error).message).toBe('stop');
  });
});
