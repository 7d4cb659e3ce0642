import { AgentSession, InMemorySessionStore } from '@ctx/core';
import { describe, expect, it } from 'vitest';
import { SessionTurns } from './session-turns.js';

/** A promise and the function that resolves it. */
function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (open = resolve));
  return { promise, open };
}

describe('SessionTurns', () => {
  it("runs a held turn's next step at once while another call is reading the store to see whether that turn moved on", async () => {
    const store = new InMemorySessionStore();
    const turns = new SessionTurns({ waitMs: 2_000, leaseMs: 15_000, gapMs: 60_000, warn: () => {} }, store);
    const session = new AgentSession({ sessionId: 's' });
    const fresh = () => ({ continues: false, holder: undefined });
    // Turn A's first step ends in calls of the app's tools: the session is held for its next step.
    const first = await turns.enter('s', undefined, async () => session, fresh);
    first.leave(true, session);
    const holder = first.holder;
    // Another turn comes and reads the store (slowly) to see whether A went on elsewhere.
    const reading = gate();
    const read = gate<AgentSession>();
    let reads = 0;
    const other = turns.enter(
      's',
      undefined,
      () => {
        reads++;
        reading.open();
        return read.promise;
      },
      () => ({ continues: false, holder }),
    );
    await reading.promise;
    // A's next step comes meanwhile; then the read ends (A is still the holder).
    const next = turns.enter(
      's',
      undefined,
      async () => session,
      () => ({ continues: true, holder }),
    );
    read.open(session);
    const step = await next;
    expect(step.holder).toBe(holder);
    // It ran as soon as the read ended, not after the other call's next looks at the store (nor waitMs later).
    expect(reads).toBe(1);
    step.leave(false, session);
    // The turn over, the other call runs.
    const taken = await other;
    expect(taken.holder).not.toBe(holder);
    taken.leave(false, session);
  });
});
