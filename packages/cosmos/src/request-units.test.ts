import { Message } from '@ctx/core';
import { startFaultProxy, type ProxiedRequest } from '@ctx/cosmos-stand-in';
import { afterAll, describe, expect, it } from 'vitest';
import { cosmosClient, env, uniqueId } from '../test/helpers.js';
import { CosmosHistoryProvider } from './cosmos-history-provider.js';

// What each operation sends, counted through the logging proxy: the input of the request-unit
// figures in the README (request units themselves cannot be measured on the stand-in, which
// charges 1 for everything).

/** A request as the cost model sees it: its kind, and for a batch its operation types. */
function shape(r: ProxiedRequest): string {
  if (r.kind !== 'batch') return r.kind;
  const ops = (JSON.parse(r.body ?? '[]') as { operationType: string }[]).map((o) => o.operationType);
  return `batch(${ops.length} ${[...new Set(ops)].join('/')})`;
}

describe('requests per operation (the basis of the README request-unit figures)', async () => {
  const proxy = await startFaultProxy(env.endpoint, { recordBodies: true });
  afterAll(() => proxy.stop());
  const provider = new CosmosHistoryProvider({
    client: cosmosClient(proxy.endpoint),
    databaseId: uniqueId('ru'),
    containerId: 'c',
    createIfNotExists: true,
    maxMessages: 20,
  });
  const state = {};
  const turn = (i: number) => [Message.user(`question ${i} `.padEnd(180, 'q')), Message.assistant(`answer ${i} `.padEnd(180, 'a'))];
  const measure = async (run: () => Promise<unknown>) => {
    proxy.resetLog();
    await run();
    return proxy.requests.filter((r) => r.kind !== 'metadata').map(shape);
  };

  it('a turn: window read (plan + one TOP query), one head patch, one batch of the new messages', async () => {
    for (let i = 0; i < 15; i++) await provider.saveMessages('s', turn(i), { state });
    const read = await measure(() => provider.getMessages('s', { state, limit: 20 }));
    expect(read).toEqual(['query-plan', 'query']);
    const save = await measure(() => provider.saveMessages('s', turn(99), { state }));
    expect(save).toEqual(['patch', 'batch(2 Create)']);
    // Items as stored: about 0.4 KB per message of ~180 characters, the head about 0.3 KB.
    const batch = proxy.requests.find((r) => r.kind === 'batch')!;
    const perItem = batch.requestBytes / 2;
    expect(perItem).toBeGreaterThan(300);
    expect(perItem).toBeLessThan(1024);
  });

  it('replaceMessages, clear and listSessions', async () => {
    const kept = (await provider.getMessages('s', { state })).slice(-20);
    const summary = Message.system('summary of the earlier turns');
    const replace = await measure(() => provider.replaceMessages('s', [summary, ...kept], { state }));
    // 32 stored -> summary + 20 kept: one query reading the 32 messages and the head, then one batch:
    // the head replaced on its ETag, the summary upserted, the 12 older messages deleted. The 20
    // kept ones are not written (before: a head patch and 21 upserts, then a query and the deletes).
    expect(replace).toEqual(['query-plan', 'query', 'batch(14 Replace/Upsert/Delete)']);
    // The query loads every stored message with its content (to tell unchanged ones) and the head.
    const query = proxy.requests.find((r) => r.kind === 'query')!;
    expect(JSON.parse(query.body!).query).toMatch(/c\.kind = 'message' OR c\.id = @head/);
    expect(query.responseBytes).toBeGreaterThan(32 * 300);
    const batch = JSON.parse(proxy.requests.find((r) => r.kind === 'batch')!.body!) as {
      operationType: string;
      id?: string;
      resourceBody?: { kind: string; message?: Message };
    }[];
    expect(batch.map((o) => [o.operationType, o.resourceBody?.kind])).toEqual([
      ['Replace', 'head'],
      ['Upsert', 'message'],
      ...Array.from({ length: 12 }, () => ['Delete', undefined]),
    ]);
    expect(batch[1]!.resourceBody!.message).toEqual(summary);
    expect(await provider.getMessages('s', { state })).toEqual([summary, ...kept]);
    const clear = await measure(() => provider.clear('s', { state }));
    // The ids, the deletes, then a query that finds none left.
    expect(clear).toEqual(['query-plan', 'query', 'batch(22 Delete)', 'query-plan', 'query']);
    await provider.saveMessages('t', turn(1), { state });
    const list = await measure(() => provider.listSessions({ limit: 10 }));
    expect(list).toEqual(['query-plan', 'query']);
  });
});
