import type { SessionJson } from '@ctx/core';
import type { Cluster } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RedisSessionStore } from './redis-session-store.js';

const session = (sessionId: string): SessionJson => ({
  type: 'ctx.session',
  version: 2,
  sessionId,
  metadata: { createdAt: new Date(0).toISOString(), updatedAt: new Date(0).toISOString(), userId: 'u' },
  state: {},
});

/**
 * A cluster client that answers the session scripts itself: session writes succeed, and a listing
 * write of a session in `down` fails as a listing node that does not answer would. `tries` counts
 * the listing writes sent per session.
 */
function cluster() {
  const down = new Set<string>();
  /** Sessions whose listing writes get no answer at all (a stalled node): only `timeoutMs` ends them. */
  const stalled = new Set<string>();
  const tries = new Map<string, number>();
  const client = {
    isCluster: true,
    options: {},
    slots: [],
    refreshSlotsCache: () => {},
    evalsha: async (_sha: string, keys: number, ...rest: string[]) => {
      const args = rest.slice(keys);
      if (keys === 1) return [1, args[3], '1000', '0', '', '']; // the session's write: { 1, etag, rev, hadUser, user, expireAt }
      const sessionId = args[0]!;
      tries.set(sessionId, (tries.get(sessionId) ?? 0) + 1);
      if (down.has(sessionId)) throw new Error('Command timed out');
      if (stalled.has(sessionId)) return new Promise(() => {});
      return 1;
    },
  };
  return { client: client as unknown as Cluster, down, stalled, tries };
}

describe('the background repair of listing writes', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("a session's first repair comes after 1 s, also while another session's repair waits for a later try", async () => {
    vi.useFakeTimers();
    const { client, down, tries } = cluster();
    const store = new RedisSessionStore({ client, onListingError: () => {} });
    down.add('a');
    await store.set(session('a'));
    // a's repair keeps failing: its next try is far off (32 s).
    for (let i = 0; i < 5; i++) await store.repairListings();
    await vi.advanceTimersByTimeAsync(1000);
    down.add('b');
    await store.set(session('b'));
    down.delete('b');
    const before = tries.get('b');
    await vi.advanceTimersByTimeAsync(1500);
    expect(tries.get('b'), "b's listing writes were tried again after 1 s").toBeGreaterThan(before!);
    expect(await store.repairListings()).toEqual({ repaired: 0, pending: 1 });
    await store.close();
  });

  it('a repair still waiting for its node is not sent again by a pass that starts meanwhile', async () => {
    vi.useFakeTimers();
    const { client, down, stalled, tries } = cluster();
    const store = new RedisSessionStore({ client, timeoutMs: 5000, onListingError: () => {} });
    down.add('a');
    await store.set(session('a'));
    down.delete('a');
    stalled.add('a');
    await vi.advanceTimersByTimeAsync(1000); // a's repair is sent, and waits
    expect(tries.get('a')).toBe(4); // 2 writes at the save, 2 in the repair
    down.add('b');
    await store.set(session('b')); // b's repair is due in 1 s, while a's still waits
    await vi.advanceTimersByTimeAsync(1500);
    expect(tries.get('b')).toBe(4);
    expect(tries.get('a'), "a's repair was not sent a second time").toBe(4);
    await store.close();
  });

  it('repairListings() waits for a try under way on a stalled node, then writes again: the repair is done when it resolves', async () => {
    vi.useFakeTimers();
    const { client, down, stalled, tries } = cluster();
    const store = new RedisSessionStore({ client, timeoutMs: 5000, onListingError: () => {} });
    down.add('a');
    await store.set(session('a'));
    down.delete('a');
    stalled.add('a');
    await vi.advanceTimersByTimeAsync(1000); // the background try is sent to the stalled node, and waits
    expect(tries.get('a')).toBe(4);
    stalled.delete('a'); // the node failed over: a new try is answered
    const repairing = store.repairListings();
    await vi.advanceTimersByTimeAsync(5000); // the stalled try times out
    expect(await repairing).toEqual({ repaired: 1, pending: 0 });
    expect(tries.get('a')).toBe(6);
    await store.close();
  });

  it('close() drops the pending repairs, reports them once, and no repair is sent after it', async () => {
    vi.useFakeTimers();
    const { client, down, tries } = cluster();
    const reported: Error[] = [];
    const store = new RedisSessionStore({ client, onListingError: (e) => reported.push(e) });
    down.add('a');
    await store.set(session('a'));
    expect(reported).toHaveLength(1);
    await store.close();
    expect(reported).toHaveLength(2);
    expect(reported[1]!.message).toContain('closed with the listing entries of 1 saved sessions unwritten; run reindex()');
    const sent = tries.get('a');
    await vi.advanceTimersByTimeAsync(120_000);
    expect(tries.get('a')).toBe(sent);
    expect(reported).toHaveLength(2);
  });

  it('a try under way when close() is called ends quietly: close() reported it once, and it is not queued again', async () => {
    vi.useFakeTimers();
    const { client, down, stalled, tries } = cluster();
    const reported: Error[] = [];
    const store = new RedisSessionStore({ client, timeoutMs: 5000, onListingError: (e) => reported.push(e) });
    down.add('a');
    await store.set(session('a'));
    down.delete('a');
    stalled.add('a');
    await vi.advanceTimersByTimeAsync(1000); // a's repair is sent, and waits
    await store.close();
    expect(reported.map((e) => e.message.includes('was closed with the listing entries of 1 saved sessions'))).toEqual([false, true]);
    await vi.advanceTimersByTimeAsync(120_000);
    expect(reported, 'nothing more is reported after close()').toHaveLength(2);
    expect(tries.get('a')).toBe(4);
    expect(await store.repairListings().catch((e: unknown) => e)).toEqual({ repaired: 0, pending: 0 });
  });
});
