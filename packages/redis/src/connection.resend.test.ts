import type { SessionJson } from '@ctx/core';
import type { Cluster } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RedisSessionStore } from './redis-session-store.js';

const session: SessionJson = {
  type: 'ctx.session',
  version: 2,
  sessionId: 's1',
  metadata: { createdAt: new Date(0).toISOString(), updatedAt: new Date(0).toISOString() },
  state: {},
};

/** A cluster client whose every script call is answered `CLUSTERDOWN` (a failover under way); `onRefresh` runs at each slot-map refresh. */
function clusterDown(onRefresh: () => void) {
  const sent: string[] = [];
  const client = {
    isCluster: true,
    options: {},
    slots: [],
    evalsha: async () => {
      sent.push('evalsha');
      throw Object.assign(new Error('CLUSTERDOWN The cluster is down'), { name: 'ReplyError' });
    },
    eval: async () => {
      sent.push('eval');
      throw Object.assign(new Error('CLUSTERDOWN The cluster is down'), { name: 'ReplyError' });
    },
    refreshSlotsCache: () => onRefresh(),
  };
  return { client: client as unknown as Cluster, sent };
}

describe('a command the cluster answered CLUSTERDOWN, resent by the package', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('is not sent again once the caller aborted during the pause before the resend', async () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    const reason = new Error('the caller went away');
    // The abort comes while the package waits to resend (it refreshes the slot map, then pauses).
    const { client, sent } = clusterDown(() => controller.abort(reason));
    const store = new RedisSessionStore({ client, timeoutMs: 5000 });
    await expect(store.set(session, { signal: controller.signal })).rejects.toBe(reason);
    expect(sent).toEqual(['evalsha']);
    await vi.advanceTimersByTimeAsync(6000);
    expect(sent, 'nothing is sent after the abort').toEqual(['evalsha']);
  });

  it('without an abort is sent again to the key until timeoutMs, then fails with BackendUnavailableError', async () => {
    vi.useFakeTimers();
    const { client, sent } = clusterDown(() => {});
    const store = new RedisSessionStore({ client, timeoutMs: 2000 });
    const failed = store.set(session).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(2500);
    const error = (await failed) as Error;
    expect(error.name).toBe('BackendUnavailableError');
    expect(sent.length).toBeGreaterThan(2);
    const count = sent.length;
    await vi.advanceTimersByTimeAsync(5000);
    expect(sent.length, 'nothing is sent after the deadline').toBe(count);
  });
});
