/**
 * `replaceMessages` writes only what changed: messages that stay keep their items and positions,
 * new ones get positions between their neighbours. The stored order must be exactly the order
 * given, whatever was kept, dropped, changed, moved or inserted, for full and windowed reads, and
 * through faults and concurrent writers.
 */
import type { CosmosClientOptions } from '@azure/cosmos';
import { BackendUnavailableError, Message } from '@ctx/core';
import { startFaultProxy } from '@ctx/cosmos-stand-in';
import { FUZZ_RUNS } from '@ctx/fuzz-kit';
import fc from 'fast-check';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { FUZZ_TEST_TIMEOUT } from '../test/garbage.js';
import { cosmosClient, env, uniqueId } from '../test/helpers.js';
import { CosmosHistoryProvider } from './cosmos-history-provider.js';

const state = {};
const databaseId = uniqueId('replace');
const containerId = 'c';
const texts = (messages: readonly Message[]) => messages.map((m) => Message.text(m));
const sid = () => `r-${Math.random().toString(36).slice(2)}`;
const proxy = await startFaultProxy(env.endpoint, { recordBodies: true });
afterAll(() => proxy.stop());
afterEach(() => proxy.clearFaults());

const provider = new CosmosHistoryProvider({ client: cosmosClient(), databaseId, containerId, createIfNotExists: true });
/** The same container through the proxy, which logs every request and injects faults. */
const proxied = new CosmosHistoryProvider({ client: cosmosClient(proxy.endpoint), databaseId, containerId, retries: 1 });
await provider.countMessages('warm-up'); // creates the container

/** What the replace batches of the proxy log did: the message ids upserted and the item ids deleted. */
function batchOps(): { upserted: string[]; deleted: string[]; head: string[] } {
  const out = { upserted: [] as string[], deleted: [] as string[], head: [] as string[] };
  for (const r of proxy.requests) {
    if (r.kind !== 'batch' || r.status !== 200) continue;
    for (const o of JSON.parse(r.body!) as { operationType: string; id?: string; resourceBody?: { kind: string; message?: Message } }[]) {
      if (o.resourceBody?.kind === 'head') out.head.push(o.operationType);
      else if (o.operationType === 'Upsert') out.upserted.push(o.resourceBody!.message!.id);
      else if (o.operationType === 'Delete') out.deleted.push(o.id!);
    }
  }
  return out;
}

/** Every way to read a history gives exactly `expected`: full, windows of several sizes, paged, counted. */
async function expectStored(sessionId: string, expected: readonly Message[]): Promise<void> {
  expect(await provider.getMessages(sessionId, { state })).toEqual(expected);
  for (const limit of new Set([1, 2, Math.ceil(expected.length / 2), expected.length, expected.length + 1]))
    if (limit > 0) expect(await provider.getMessages(sessionId, { state, limit })).toEqual(expected.slice(-limit));
  const paged: Message[] = [];
  for await (const m of provider.exportMessages(sessionId, { pageSize: 3 })) paged.push(m);
  expect(paged).toEqual(expected);
  expect(await provider.countMessages(sessionId)).toBe(expected.length);
}

/** One replace, as data: what happens to each stored message, what is inserted where, and an optional swap. */
const edit = fc.record({
  fate: fc.array(fc.constantFrom('keep', 'keep', 'keep', 'drop', 'change'), { maxLength: 40 }),
  inserts: fc.array(fc.record({ at: fc.nat(), count: fc.integer({ min: 1, max: 3 }) }), { maxLength: 3 }),
  swap: fc.option(fc.tuple(fc.nat(), fc.nat()), { freq: 4 }),
  appendAfter: fc.integer({ min: 0, max: 2 }),
});

describe('replaceMessages keeps what stays and writes only what changed', () => {
  it(
    `the stored order and content are exactly the argument after any keep, drop, change, insert and move (${Math.min(FUZZ_RUNS, 50)} runs)`,
    async () => {
      let n = 0;
      const fresh = (tag: string) => Message.user(`${tag} ${n++}`);
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 0, max: 12 }), fc.array(edit, { minLength: 1, maxLength: 3 }), async (initial, edits) => {
          const sessionId = sid();
          let stored = Array.from({ length: initial }, () => fresh('saved'));
          if (stored.length > 0) await provider.saveMessages(sessionId, stored, { state });
          for (const { fate, inserts, swap, appendAfter } of edits) {
            const dropped: Message[] = [];
            const changed = new Set<string>();
            const target: Message[] = [];
            stored.forEach((m, i) => {
              const what = fate[i] ?? 'keep';
              if (what === 'drop') dropped.push(m);
              else if (what === 'keep') target.push(m);
              else {
                changed.add(m.id);
                target.push({ ...m, contents: [{ type: 'text', text: `${Message.text(m)} (edited)` }] });
              }
            });
            const inserted = new Set<string>();
            for (const { at, count } of inserts) {
              const added = Array.from({ length: count }, () => fresh('new'));
              for (const m of added) inserted.add(m.id);
              target.splice(at % (target.length + 1), 0, ...added);
            }
            const moved = swap !== null && target.length > 1;
            if (moved) {
              const [i, j] = [swap[0] % target.length, swap[1] % target.length];
              [target[i], target[j]] = [target[j]!, target[i]!];
            }
            proxy.resetLog();
            await proxied.replaceMessages(sessionId, target, { state });
            const ops = batchOps();
            // Dropped messages are deleted, exactly; new and changed ones written; without a move, nothing else.
            const itemIds = await Promise.all(dropped.map(async (m) => (await provider.itemIds(sessionId, m.id)).message));
            expect(ops.deleted.sort()).toEqual(itemIds.sort());
            const mustWrite = [...inserted, ...changed].sort();
            if (moved) expect(ops.upserted).toEqual(expect.arrayContaining(mustWrite));
            else expect(ops.upserted.sort()).toEqual(mustWrite);
            // One conditional write of the head goes with any change (a creation for a session without one).
            expect(ops.head).toHaveLength(ops.upserted.length + ops.deleted.length > 0 ? 1 : 0);
            await expectStored(sessionId, target);
            // Later saves go after the replaced history.
            const later = Array.from({ length: appendAfter }, () => fresh('later'));
            if (later.length > 0) await provider.saveMessages(sessionId, later, { state });
            stored = [...target, ...later];
            expect(await provider.getMessages(sessionId, { state })).toEqual(stored);
          }
        }),
        { numRuns: Math.min(FUZZ_RUNS, 50) },
      );
    },
    FUZZ_TEST_TIMEOUT,
  );

  it('a replace that changes nothing sends only its read', async () => {
    const sessionId = sid();
    const messages = [Message.user('q'), Message.assistant('a')];
    await provider.saveMessages(sessionId, messages, { state });
    proxy.resetLog();
    await proxied.replaceMessages(sessionId, messages, { state });
    expect(proxy.requests.filter((r) => r.kind !== 'metadata').map((r) => r.kind)).toEqual(['query-plan', 'query']);
  });

  it('repeated compactions, each putting a new summary before the kept tail, stay exact and write one message each', async () => {
    const sessionId = sid();
    let history: Message[] = [];
    for (let round = 0; round < 40; round++) {
      const t = [Message.user(`q${round}`), Message.assistant(`a${round}`)];
      await provider.saveMessages(sessionId, t, { state });
      history = [...history, ...t];
      const compacted = [Message.system(`summary ${round}`), ...history.slice(-3)];
      proxy.resetLog();
      await proxied.replaceMessages(sessionId, compacted, { state });
      expect(batchOps().upserted).toEqual([compacted[0]!.id]);
      history = compacted;
      expect(await provider.getMessages(sessionId, { state })).toEqual(history);
    }
    await expectStored(sessionId, history);
  });

  it('inserting again and again at the same place: when floating point has no room left, a neighbour moves too, and the order stays exact', async () => {
    const sessionId = sid();
    const [first, last] = [Message.user('first'), Message.user('last')];
    await provider.saveMessages(sessionId, [first, Message.user('middle 0'), last], { state });
    let previous = (await provider.getMessages(sessionId, { state }))[1]!;
    const writes: number[] = [];
    // Each new message goes between `first` and the previous one (half the gap each time); the one before is dropped.
    for (let round = 1; round <= 70; round++) {
      const middle = Message.user(`middle ${round}`);
      const target = [first, middle, previous, last];
      proxy.resetLog();
      await proxied.replaceMessages(sessionId, target, { state });
      writes.push(batchOps().upserted.length);
      expect(await provider.getMessages(sessionId, { state })).toEqual(target);
      previous = middle;
    }
    // Most rounds write just the new message; the rounds that ran out of room also moved a neighbour.
    expect(writes.filter((w) => w === 1).length).toBeGreaterThan(50);
    expect(writes.some((w) => w > 1)).toBe(true);
    const items = (await provider.container.items.query<{ seq: number }>('SELECT c.seq FROM c WHERE c.kind = "message"').fetchAll())
      .resources;
    expect(items.every((i) => Number.isFinite(i.seq))).toBe(true);
  });

  it('a save after a replace that left fractional positions, with its head deleted, numbers after them', async () => {
    const sessionId = sid();
    await provider.saveMessages(sessionId, [Message.user('a')], { state });
    const summary = Message.system('summary');
    const kept = await provider.getMessages(sessionId, { state });
    await provider.replaceMessages(sessionId, [summary, ...kept, Message.user('tail')], { state });
    const { head } = await provider.itemIds(sessionId, 'x');
    await provider.container.item(head, provider.partitionValue(sessionId)).delete();
    const next = Message.user('next');
    await provider.saveMessages(sessionId, [next], { state });
    expect(texts(await provider.getMessages(sessionId, { state }))).toEqual(['summary', 'a', 'tail', 'next']);
  });

  it('a replace of a session with no head creates the head, so the session is listed', async () => {
    const sessionId = sid();
    await provider.replaceMessages(sessionId, [Message.user('only')], { state });
    const { sessions } = await provider.listSessions({ limit: 1000 });
    expect(sessions.find((s) => s.sessionId === sessionId)).toMatchObject({ lastSeq: 1 });
    await provider.saveMessages(sessionId, [Message.user('then')], { state });
    expect(texts(await provider.getMessages(sessionId, { state }))).toEqual(['only', 'then']);
  });
});

describe('faults in the middle of a replace', () => {
  const old = (n: number) => Array.from({ length: n }, (_, i) => Message.user(`old ${i}`));

  it('the batch never reaches the server: the old list, whole; calling it again gives the new one', async () => {
    const sessionId = sid();
    const before = old(6);
    await provider.saveMessages(sessionId, before, { state });
    const after = [Message.system('summary'), ...before.slice(3)];
    proxy.inject({ match: (r) => r.kind === 'batch', times: Infinity, fault: 'reset-before' });
    await expect(proxied.replaceMessages(sessionId, after, { state })).rejects.toSatisfy(BackendUnavailableError.isInstance);
    await expectStored(sessionId, before);
    proxy.clearFaults();
    await proxied.replaceMessages(sessionId, after, { state });
    await expectStored(sessionId, after);
  });

  it('the batch applied but its answer lost: the retried batch conflicts on the head, the replace reads again and finds it done', async () => {
    const sessionId = sid();
    const before = old(6);
    await provider.saveMessages(sessionId, before, { state });
    const after = [Message.system('summary'), ...before.slice(3), Message.user('new')];
    proxy.resetLog();
    proxy.inject({ match: (r) => r.kind === 'batch', fault: 'reset-after' });
    await proxied.replaceMessages(sessionId, after, { state });
    const kinds = proxy.requests.filter((r) => r.kind !== 'metadata').map((r) => `${r.kind}${r.fault ? `:${r.fault}` : ''}`);
    expect(kinds).toEqual(['query-plan', 'query', 'batch:reset-after', 'batch', 'query-plan', 'query']);
    await expectStored(sessionId, after);
  });

  // Writes go before deletes, and batches run in order: until every write is in, no delete has run.
  it.each([
    // 120 stored, 60 kept, 60 replaced by 120 new: a head write and 120 upserts, then 60 deletes; batch 2 fails.
    [
      'before the last write',
      'old',
      120,
      (m: Message, i: number) => (i % 2 ? [Message.user(`new ${i}a`), Message.user(`new ${i}b`)] : [m]),
      2,
    ],
    // 240 stored, 60 kept, 60 new, 180 dropped: a head write and 60 upserts, then 180 deletes; batch 3 fails.
    ['after the writes, among the deletes', 'new', 240, (m: Message, i: number) => (i % 4 ? [] : [m, Message.user(`new ${i}`)]), 3],
  ] as const)(
    'over several batches, a failure %s leaves the %s list whole plus extra messages, both orders intact; a retry converges',
    async (_, whole, count, rewrite, failing) => {
      const sessionId = sid();
      const before = old(count);
      await provider.saveMessages(sessionId, before, { state });
      const after = before.flatMap(rewrite);
      let batches = 0;
      proxy.inject({ match: (r) => r.kind === 'batch' && ++batches >= failing, times: Infinity, fault: 'reset-before' });
      await expect(proxied.replaceMessages(sessionId, after, { state })).rejects.toSatisfy(BackendUnavailableError.isInstance);
      expect(batches).toBe(failing + 1); // the failing batch and its one retry
      const mid = await provider.getMessages(sessionId, { state });
      const only = (list: readonly Message[]) => {
        const ids = new Set(list.map((m) => m.id));
        return mid.filter((m) => ids.has(m.id));
      };
      expect(only(whole === 'old' ? before : after)).toEqual(whole === 'old' ? before : after);
      expect(mid.length).toBeGreaterThan(after.length);
      expect(mid.length).toBeLessThan(new Set([...before, ...after].map((m) => m.id)).size);
      // What is there of either list is in that list's order.
      const present = new Set(mid.map((m) => m.id));
      for (const list of [before, after]) expect(only(list)).toEqual(list.filter((m) => present.has(m.id)));
      proxy.clearFaults();
      await proxied.replaceMessages(sessionId, after, { state });
      await expectStored(sessionId, after);
    },
  );
});

describe('concurrent writers', () => {
  /**
   * A provider whose client runs `hook` once, before the first transactional batch it sends;
   * `seen` collects the operation type of every request it sends, in order.
   */
  function withHookBeforeBatch(hook: () => Promise<void>, seen: string[] = []): CosmosHistoryProvider {
    let armed = true;
    // `plugins` is a hidden option of @azure/cosmos: it wraps every request the client sends.
    const plugins = [
      {
        on: 'request',
        plugin: async (context: { operationType?: string }, _diagnostics: unknown, next: (c: unknown) => Promise<unknown>) => {
          seen.push(String(context.operationType));
          if (armed && context.operationType === 'batch') {
            armed = false;
            await hook();
          }
          return next(context);
        },
      },
    ];
    return new CosmosHistoryProvider({
      client: cosmosClient(env.endpoint, { plugins } as Partial<CosmosClientOptions>),
      databaseId,
      containerId,
    });
  }

  it('a save between the read and the batch fails the head condition: the replace reads again, and its list is what is stored', async () => {
    const sessionId = sid();
    const before = [Message.user('q1'), Message.assistant('a1'), Message.user('q2'), Message.assistant('a2')];
    await provider.saveMessages(sessionId, before, { state });
    const racing = [Message.user('q3'), Message.assistant('a3')];
    const seen: string[] = [];
    let raced: string[] = [];
    const replacer = withHookBeforeBatch(async () => {
      await provider.saveMessages(sessionId, racing, { state });
      raced = texts(await provider.getMessages(sessionId, { state }));
    }, seen);
    const after = [Message.system('summary'), ...before.slice(2)];
    await replacer.replaceMessages(sessionId, after, { state });
    // The race happened: the save landed after the replace's read, before its first batch...
    expect(raced).toEqual(['q1', 'a1', 'q2', 'a2', 'q3', 'a3']);
    // ...which failed its head condition, so the replace read again and sent a second batch.
    const firstBatch = seen.indexOf('batch');
    expect(firstBatch).toBeGreaterThan(0);
    expect(seen.slice(firstBatch + 1)).toContain('batch');
    expect(seen.slice(firstBatch + 1, seen.lastIndexOf('batch'))).not.toEqual([]);
    // The turn saved before the replace's second read is removed (it was not in the list), as one saved before its first read would be.
    await expectStored(sessionId, after);
  });

  it('a message it keeps, popped between the read and the batch, stays popped; the rest is the list', async () => {
    const sessionId = sid();
    const before = [Message.user('q1'), Message.assistant('a1'), Message.user('q2'), Message.assistant('a2')];
    await provider.saveMessages(sessionId, before, { state });
    let popped: Message[] = [];
    const replacer = withHookBeforeBatch(async () => {
      popped = await provider.popMessages(sessionId, { state });
    });
    await replacer.replaceMessages(sessionId, [Message.system('summary'), ...before.slice(2)], { state });
    expect(popped).toEqual([before[3]]);
    expect(texts(await provider.getMessages(sessionId, { state }))).toEqual(['summary', 'q2']);
  });

  it('two replaces at once with different summaries: the history is exactly one of the two lists, never both summaries', async () => {
    const other = new CosmosHistoryProvider({ client: cosmosClient(), databaseId, containerId });
    for (let round = 0; round < 10; round++) {
      const sessionId = sid();
      const before = Array.from({ length: 8 }, (_, i) => Message.user(`m${i}`));
      await provider.saveMessages(sessionId, before, { state });
      const a = [Message.system(`summary A${round}`), ...before.slice(4)];
      const b = [Message.system(`summary B${round}`), ...before.slice(5)];
      await Promise.all([provider.replaceMessages(sessionId, a, { state }), other.replaceMessages(sessionId, b, { state })]);
      const stored = await provider.getMessages(sessionId, { state });
      expect([a, b]).toContainEqual(stored);
    }
  });

  it('saves racing a replace: every turn is either removed whole (saved before the read) or kept whole after the replaced history', async () => {
    const sessionId = sid();
    const before = Array.from({ length: 6 }, (_, i) => Message.user(`m${i}`));
    await provider.saveMessages(sessionId, before, { state });
    const after = [Message.system('summary'), ...before.slice(3)];
    const turns = Array.from({ length: 8 }, (_, i) => [Message.user(`q${i}`), Message.assistant(`a${i}`)]);
    await Promise.all([
      provider.replaceMessages(sessionId, after, { state }),
      ...turns.map((t) => provider.saveMessages(sessionId, t, { state })),
    ]);
    const stored = await provider.getMessages(sessionId, { state });
    expect(stored.slice(0, after.length)).toEqual(after);
    const rest = stored.slice(after.length);
    expect(new Set(rest.map((m) => m.id)).size).toBe(rest.length);
    for (let i = 0; i < rest.length; i += 2) expect(turns).toContainEqual(rest.slice(i, i + 2));
  });
});
