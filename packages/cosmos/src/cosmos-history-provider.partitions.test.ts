import { Constants } from '@azure/cosmos';
import { ConfigurationError, Message } from '@ctx/core';
import { effectivePartitionKey, startFaultProxy, type FaultProxy } from '@ctx/cosmos-stand-in';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cosmosClient, env, uniqueId } from '../test/helpers.js';
import { CosmosHistoryProvider, type CosmosHistoryProviderOptions } from './cosmos-history-provider.js';
import { SESSION_PARTITION_KEY } from './history-layout.js';

// The stand-in behind a proxy that plays the gateway of a container with four physical partition
// key ranges: it answers the SDK's query-plan requests, refuses cross-partition ORDER BY queries
// as the gateway does (400 with the plan), and answers each per-range query with that range's
// items only. The SDK therefore runs its real cross-partition query pipeline here.
const RANGES = 4;
let proxy: FaultProxy;
let client: ReturnType<typeof cosmosClient>;
const databaseId = uniqueId('partitions');

beforeAll(async () => {
  proxy = await startFaultProxy(env.endpoint, { partitionKeyRanges: RANGES });
  client = cosmosClient(proxy.endpoint);
});
afterAll(() => proxy.stop());

function make(options: Partial<CosmosHistoryProviderOptions> = {}): CosmosHistoryProvider {
  return new CosmosHistoryProvider({ client, databaseId, containerId: uniqueId('c'), createIfNotExists: true, ...options });
}

/** Which of the proxy's ranges an effective partition key falls in. */
function rangeOf(epk: string): number {
  return Math.min(RANGES - 1, Math.floor(Number.parseInt(epk.slice(0, 2), 16) / (64 / RANGES)));
}

/** Whether the loaded @azure/cosmos asks the gateway for a query plan before it sends the query (4.10 and later). */
const plansFirst = (() => {
  const [major = 0, minor = 0] = Constants.SDKVersion.split('.').map(Number);
  return major > 4 || (major === 4 && minor >= 10);
})();

let minute = 0;

/**
 * Saves one turn per session, then gives the heads distinct `updatedAt`s, later ones newer. (Ties
 * are avoided: the service breaks them by `_rid` and the SDK resumes relying on that, the stand-in
 * does not.)
 */
async function seedSessions(provider: CosmosHistoryProvider, sessions: string[], scope?: { tenantId: string; userId: string }) {
  for (const [i, sessionId] of sessions.entries()) {
    await provider.append(sessionId, [Message.user(`hello ${i}`)], scope ? { scope } : {});
    const { head } = await provider.itemIds(sessionId, 'x', scope ? { scope } : {});
    const key = scope ? [scope.tenantId, scope.userId, provider.partitionValue(sessionId)] : provider.partitionValue(sessionId);
    await provider.container
      .item(head, key)
      .patch([{ op: 'set', path: '/updatedAt', value: new Date(Date.UTC(2025, 0, 1, 0, minute++)).toISOString() }]);
  }
}

async function allPages(provider: CosmosHistoryProvider, options: { limit: number; tenantId?: string; userId?: string }) {
  const pages: string[][] = [];
  let cursor: string | undefined;
  do {
    const page = await provider.listSessions({ ...options, ...(cursor ? { cursor } : {}) });
    pages.push(page.sessions.map((s) => s.sessionId));
    cursor = page.nextCursor;
  } while (cursor !== undefined && pages.length < 50);
  return pages;
}

describe('listSessions on a container with several partition key ranges', () => {
  it('pages a cross-partition ORDER BY through the SDK query pipeline, page 2 and on included', async () => {
    const provider = make();
    const sessions = Array.from({ length: 23 }, (_, i) => `session-${i}`);
    await seedSessions(provider, sessions);
    // The sessions really are spread over the ranges (by the SDK's own hash of their partition key).
    const used = new Set(sessions.map((s) => rangeOf(effectivePartitionKey([provider.partitionValue(s)], SESSION_PARTITION_KEY))));
    expect(used.size).toBeGreaterThan(2);

    proxy.resetLog();
    const pages = await allPages(provider, { limit: 5 });
    expect(pages.map((p) => p.length)).toEqual([5, 5, 5, 5, 3]);
    expect(pages.flat()).toEqual([...sessions].reverse());

    // Every page went through the pipeline: a plan, one query per range. @azure/cosmos 4.9 sends the
    // query first and is refused by the gateway with the plan, once per page; 4.10 and later ask for
    // the plan first when enableQueryControl is set, so nothing is refused.
    const log = proxy.requests;
    const plans = log.filter((r) => r.kind === 'query-plan').length;
    expect(plans).toBeGreaterThanOrEqual(5);
    const refused = log.filter((r) => r.kind === 'query' && r.status === 400 && r.gateway === 'answered').length;
    expect(refused, `@azure/cosmos ${Constants.SDKVersion}`).toBe(plansFirst ? 0 : plans);
    expect(new Set(log.filter((r) => r.partitionKeyRangeId !== undefined).map((r) => r.partitionKeyRangeId))).toEqual(
      new Set(['0', '1', '2', '3']),
    );
  });

  it('the SDK needs enableQueryControl for it (what listSessions did before gave no cursor after page 1)', async () => {
    const provider = make();
    await seedSessions(
      provider,
      Array.from({ length: 8 }, (_, i) => `s${i}`),
    );
    const query = { query: "SELECT c.id FROM c WHERE c.kind = 'head' ORDER BY c.updatedAt DESC" };
    const legacy = await provider.container.items.query(query, { maxItemCount: 3 }).fetchNext();
    expect(legacy.resources).toHaveLength(3);
    expect(legacy.hasMoreResults).toBe(true);
    expect(legacy.continuationToken).toBeUndefined();
    const controlled = await provider.container.items.query(query, { maxItemCount: 3, enableQueryControl: true }).fetchNext();
    expect(controlled.continuationToken).toEqual(expect.any(String));
    await expect(
      provider.container.items.query(query, { maxItemCount: 3, continuationToken: controlled.continuationToken! }).fetchNext(),
    ).rejects.toThrow('Continuation tokens are supported when enableQueryControl is set true');
  });

  it("hierarchical: a tenant's sessions page within the tenant's partitions", async () => {
    const provider = make({ scope: ({ state: s }) => ({ tenantId: String(s.tenantId), userId: String(s.userId) }) });
    const t1 = Array.from({ length: 7 }, (_, i) => `t1-${i}`);
    await seedSessions(provider, t1.slice(0, 4), { tenantId: 't1', userId: 'ada' });
    await seedSessions(provider, ['t2-0', 't2-1', 't2-2'], { tenantId: 't2', userId: 'ada' });
    await seedSessions(provider, t1.slice(4), { tenantId: 't1', userId: 'bob' });
    proxy.resetLog();
    const pages = await allPages(provider, { tenantId: 't1', limit: 3 });
    expect(pages.map((p) => p.length)).toEqual([3, 3, 1]);
    expect(pages.flat()).toEqual([...t1].reverse());
    expect(proxy.requests.some((r) => r.partitionKeyRangeId !== undefined)).toBe(true);
    const byUser = await allPages(provider, { tenantId: 't1', userId: 'bob', limit: 2 });
    expect(byUser.flat()).toEqual(['t1-6', 't1-5', 't1-4']);
    await expect(provider.getMessages('t2-1', { state: { tenantId: 't2', userId: 'ada' } })).resolves.toHaveLength(1);
  });

  it('a cursor that is not one of its nextCursors is a ConfigurationError', async () => {
    const provider = make();
    await seedSessions(provider, ['a', 'b', 'c']);
    await expect(provider.listSessions({ cursor: 'not-a-cursor' })).rejects.toSatisfy(ConfigurationError.isInstance);
    await expect(provider.listSessions({ cursor: '' })).rejects.toThrow(
      'CosmosHistoryProvider.listSessions: cursor must be the nextCursor of a previous page',
    );
    await expect(provider.listSessions({ limit: 1 })).resolves.toMatchObject({ sessions: [{ sessionId: 'c' }] });
  });
});
