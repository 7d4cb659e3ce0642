import {
  AgentSession,
  CompactionProvider,
  ConfigurationError,
  createAgent,
  InvalidInputError,
  Message,
  ProviderError,
  SessionStateError,
  type AgentEvent,
  truncation,
} from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { BLANK_SESSION_IDS, HOSTILE_SESSION_IDS } from '@ctx/provider-tests';
import { Redis, type Cluster } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { nonJsonMessages } from '@ctx/fuzz-kit';
import { allKeys, clusterClient, countCommands, expireNow, nestedJson, singleClient, uniquePrefix } from '../test/helpers.js';
import { RedisHistoryProvider, type RedisHistoryProviderOptions } from './redis-history-provider.js';
import { RedisSessionStore } from './redis-session-store.js';
import { RedisWorkingMemoryStore } from './redis-working-memory-store.js';

const state = {};
const turn = (i: number) => [Message.user(`q${i}`), Message.assistant(`a${i}`)];
const texts = (messages: readonly Message[]) => messages.map((m) => Message.text(m));
/** Ids that hold nothing but whitespace (JavaScript's `trim` removes all of them). */
const BLANK_IDS = [...BLANK_SESSION_IDS, '\r\n', '\u3000'];

/** Seeds `count` messages in batches of 1000 (one script call each). */
async function seed(provider: RedisHistoryProvider, sessionId: string, count: number): Promise<void> {
  for (let i = 0; i < count; i += 1000) {
    await provider.append(
      sessionId,
      Array.from({ length: Math.min(1000, count - i) }, (_, j) => Message.user(`m${i + j}`)),
    );
  }
}

describe('RedisHistoryProvider options and arguments', () => {
  const lazy = () => new Redis({ lazyConnect: true });

  it.each([
    ['maxStored 0', { client: lazy(), maxStored: 0 }],
    ['ttlSeconds 1.5', { client: lazy(), ttlSeconds: 1.5 }],
  ])('rejects %s with ConfigurationError', (_, options) => {
    expect(() => new RedisHistoryProvider(options)).toThrow(ConfigurationError);
  });

  it('the session and working-memory stores refuse an option they do not know, naming it', () => {
    expect(() => new RedisSessionStore({ client: lazy(), ttlsecond: 5 } as never)).toThrow('RedisSessionStore: unknown option "ttlsecond"');
    expect(() => new RedisWorkingMemoryStore({ client: lazy(), prefx: 'x' } as never)).toThrow(
      'RedisWorkingMemoryStore: unknown option "prefx"',
    );
  });

  it('an option it does not know is a ConfigurationError naming it; core history options and ioredis options pass', () => {
    const misspelled = () => new RedisHistoryProvider({ client: lazy(), maxstored: 5 } as never);
    expect(misspelled).toThrow(ConfigurationError);
    expect(misspelled).toThrow('RedisHistoryProvider: unknown option "maxstored" (did you mean "maxStored"?).');
    expect(() => new RedisHistoryProvider({ client: lazy(), storeInput: false } as never)).toThrow(
      'RedisHistoryProvider: unknown option "storeInput"',
    );
    // The names inherited from core's HistoryProviderOptions are known; redisOptions goes to ioredis unchecked.
    const provider = new RedisHistoryProvider({
      url: 'redis://127.0.0.1:9',
      redisOptions: { lazyConnect: true, anyIoredisOption: 1 } as never,
      sourceId: 'h',
      loadMessages: 'auto',
      storeInputs: true,
      storeOutputs: true,
      storeContextMessages: false,
      storeContextFrom: ['rag'],
      maxMessages: 10,
      onError: 'skip',
      prefix: 'p',
      timeoutMs: 100,
      maxValueBytes: 1000,
      maxStored: 20,
      ttlSeconds: 60,
    });
    expect([provider.sourceId, provider.maxStored]).toEqual(['h', 20]);
    provider.client.disconnect();
  });

  it('passes the history options of @ctx/core on, with sourceId "redis" by default', () => {
    const provider = new RedisHistoryProvider({ client: lazy(), maxMessages: 7, storeInputs: false, loadMessages: false });
    expect([
      provider.sourceId,
      provider.maxMessages,
      provider.storeInputs,
      provider.loadMessages,
      provider.maxStored,
      provider.ttlSeconds,
    ]).toEqual(['redis', 7, false, false, undefined, undefined]);
  });

  it('a bad limit or cursor is a ConfigurationError naming the method, the session and the value, before any round trip', async () => {
    const client = lazy();
    const provider = new RedisHistoryProvider({ client });
    const counted = countCommands(client);
    await expect(provider.getMessages('s1', { state, limit: 0 })).rejects.toThrow(ConfigurationError);
    await expect(provider.getMessages('s1', { state, limit: 2.5 })).rejects.toThrow(
      'RedisHistoryProvider.getMessages for session "s1": limit must be a positive integer, got 2.5.',
    );
    await expect(provider.listMessages('s1', { limit: -1 })).rejects.toThrow(
      'RedisHistoryProvider.listMessages for session "s1": limit must be a positive integer, got -1.',
    );
    for (const cursor of ['abc', '-1', '1.5']) {
      const error = await provider.listMessages('s1', { cursor }).catch((e: unknown) => e);
      expect(ConfigurationError.isInstance(error)).toBe(true);
      expect((error as Error).message).toBe(
        `RedisHistoryProvider.listMessages for session "s1": cursor must be the nextCursor of a previous page, got "${cursor}". Omit it to start from the oldest stored message.`,
      );
    }
    expect(counted.names).toEqual([]);
    expect(client.status).toBe('wait');
  });

  it('empty and whitespace-only session ids and source ids are ConfigurationErrors from every method, before any round trip', async () => {
    const client = lazy();
    const provider = new RedisHistoryProvider({ client });
    const counted = countCommands(client);
    const bad = { id: 'b', role: 'user', contents: [{ type: 'text' }] } as unknown as Message;
    for (const sessionId of BLANK_IDS) {
      const calls: [string, () => Promise<unknown>][] = [
        ['getMessages', () => provider.getMessages(sessionId, { state })],
        ['getMessages with a limit', () => provider.getMessages(sessionId, { state, limit: 5 })],
        ['saveMessages', () => provider.saveMessages(sessionId, turn(1), { state })],
        ['saveMessages of nothing', () => provider.saveMessages(sessionId, [], { state })],
        ['saveMessages of a malformed message', () => provider.saveMessages(sessionId, [bad], { state })],
        ['append of nothing', () => provider.append(sessionId, [])],
        ['replaceMessages', () => provider.replaceMessages(sessionId, turn(1), { state })],
        ['listMessages', () => provider.listMessages(sessionId)],
        ['exportMessages', () => provider.exportMessages(sessionId).next()],
        ['countMessages', () => provider.countMessages(sessionId)],
        ['clear', () => provider.clear(sessionId)],
        ['keys', async () => provider.keys(sessionId)],
      ];
      for (const [name, call] of calls) {
        const error = await call().catch((e: unknown) => e);
        expect(ConfigurationError.isInstance(error), `${name}(${JSON.stringify(sessionId)})`).toBe(true);
        expect((error as Error).message).toContain('session id must be a string with at least one non-whitespace character');
      }
      expect(() => new RedisHistoryProvider({ client, sourceId: sessionId })).toThrow(ConfigurationError);
    }
    expect(counted.names).toEqual([]);
    expect(client.status).toBe('wait');
  });
});

for (const [topology, connect] of [
  ['single node', () => singleClient()],
  ['cluster', () => clusterClient()],
] as const) {
  describe(`RedisHistoryProvider on ${topology}`, () => {
    const client: Redis | Cluster = connect();
    const prefix = uniquePrefix('history');
    const make = (options: Partial<RedisHistoryProviderOptions> = {}) => new RedisHistoryProvider({ client, prefix, ...options });
    const id = () => `s-${Math.random().toString(36).slice(2)}`;

    it('replaceMessages rewrites a conversation atomically, so CompactionProvider can compact stored history', async () => {
      const provider = make({ sourceId: `cmp-${id()}` });
      const client = new ScriptedChatClient({ replies: (_m, _o, i) => `a${i}` });
      const agent = createAgent({
        client,
        contextProviders: [provider, new CompactionProvider({ strategy: truncation({ maxMessages: 4, target: 1 }) })],
      });
      const sessionId = id();
      for (let i = 0; i < 6; i++) await agent.run(`q${i}`, { session: agent.getSessionById(sessionId) });
      // compacted to 4 before the last run, then the last turn was appended
      expect(texts(await provider.getMessages(sessionId, { state }))).toEqual(['q3', 'a3', 'q4', 'a4', 'q5', 'a5']);
      expect(texts(client.calls[5]!.messages)).toEqual(['q3', 'a3', 'q4', 'a4', 'q5']);
      // ids of dropped messages are gone too: saving one again stores it
      const replaced = await provider.getMessages(sessionId, { state });
      await provider.replaceMessages(sessionId, replaced.slice(-2), { state });
      expect(await provider.append(sessionId, replaced.slice(0, 1))).toBe(1);
      expect(texts(await provider.getMessages(sessionId, { state }))).toEqual(['q5', 'a5', 'q3']);
      await provider.replaceMessages(sessionId, [], { state });
      expect(await provider.getMessages(sessionId, { state })).toEqual([]);
    });

    it('defaults its sourceId to "redis" and writes it into the key', () => {
      const provider = make();
      expect(provider.sourceId).toBe('redis');
      expect(provider.keys('abc')).toEqual({
        messages: `${prefix}:history:redis:{abc}:messages`,
        ids: `${prefix}:history:redis:{abc}:ids`,
      });
    });

    it('loads a window with one LRANGE and stores a turn with one EVALSHA, the same at 10 and 5,000 stored messages', async () => {
      const counted = clusterOrSingle(client);
      const provider = make({ sourceId: `rt-${id()}` });
      const small = id();
      const large = id();
      await seed(provider, small, 10);
      await seed(provider, large, 5000);
      for (const sessionId of [small, large]) {
        counted.reset();
        const window = await provider.getMessages(sessionId, { state, limit: 20 });
        await provider.saveMessages(sessionId, turn(1), { state });
        expect(window.length).toBe(sessionId === small ? 10 : 20);
        expect(counted.names).toEqual(['lrange', 'evalsha']);
      }
      const last = await provider.getMessages(large, { state, limit: 3 });
      expect(texts(last)).toEqual(['m4999', 'q1', 'a1']);
    });

    it('append reports how many messages were new: a retried or overlapping batch stores nothing twice', async () => {
      const provider = make();
      const sessionId = id();
      const [a, b, c] = [Message.user('a'), Message.assistant('b'), Message.user('c')];
      expect(await provider.append(sessionId, [a!, b!])).toBe(2);
      expect(await provider.append(sessionId, [a!, b!])).toBe(0);
      expect(await provider.append(sessionId, [b!, c!, c!])).toBe(1);
      expect(await provider.getMessages(sessionId, { state })).toEqual([a, b, c]);
    });

    it('maxStored trims the list and the id set together, in the same call', async () => {
      const provider = make({ maxStored: 10 });
      const sessionId = id();
      const batches = Array.from({ length: 13 }, (_, i) => turn(i));
      for (const batch of batches) await provider.saveMessages(sessionId, batch, { state });
      const keys = provider.keys(sessionId);
      const [len, card] = await Promise.all([client.llen(keys.messages), client.zcard(keys.ids)]);
      expect([len, card]).toEqual([10, 10]);
      const stored = await provider.getMessages(sessionId, { state });
      expect(texts(stored)).toEqual(
        batches
          .slice(8)
          .flat()
          .map((m) => Message.text(m)),
      );
      // The ids left in the set are exactly those of the kept messages.
      expect((await client.zrange(keys.ids, '0', '-1')).sort()).toEqual(stored.map((m) => m.id).sort());
      // A retry of a kept turn stores nothing.
      expect(await provider.append(sessionId, batches[12]!)).toBe(0);
    });

    it('ttlSeconds sets an expiry on both keys and every save refreshes it; without it keys never expire', async () => {
      const provider = make({ ttlSeconds: 100 });
      const sessionId = id();
      await provider.saveMessages(sessionId, turn(1), { state });
      const keys = provider.keys(sessionId);
      expect(await client.ttl(keys.messages)).toBeGreaterThan(95);
      expect(await client.ttl(keys.ids)).toBeGreaterThan(95);
      await client.expire(keys.messages, 5);
      await client.expire(keys.ids, 5);
      await provider.saveMessages(sessionId, turn(2), { state });
      expect(await client.ttl(keys.messages)).toBeGreaterThan(95);
      expect(await client.ttl(keys.ids)).toBeGreaterThan(95);
      const plain = make({ sourceId: 'no-ttl' });
      await plain.saveMessages(sessionId, turn(1), { state });
      expect(await client.ttl(plain.keys(sessionId).messages)).toBe(-1);
    });

    it('ttlSeconds really expires a conversation', async () => {
      const provider = make({ ttlSeconds: 1 });
      const sessionId = id();
      await provider.saveMessages(sessionId, turn(1), { state });
      expect(await provider.countMessages(sessionId)).toBe(2);
      // Every key the save wrote for the session (found by scanning, not by asking the provider)
      // carries the 1 s expiry; it then passes at once instead of after a 2 s wait.
      const written = (await allKeys(client)).filter((key) => key.includes(sessionId));
      expect(written.sort()).toEqual(Object.values(provider.keys(sessionId)).sort());
      await expireNow(client, written, 1);
      expect(await provider.getMessages(sessionId, { state })).toEqual([]);
      expect(await client.exists(provider.keys(sessionId).ids)).toBe(0);
    });

    it('exportMessages pages through every message in order, one round trip per page', async () => {
      const provider = make();
      const sessionId = id();
      await seed(provider, sessionId, 1234);
      await provider.listMessages(sessionId, { limit: 1 }); // the first call on a node loads the script (EVALSHA, NOSCRIPT, EVAL)
      const counted = clusterOrSingle(client);
      counted.reset();
      const exported: Message[] = [];
      for await (const m of provider.exportMessages(sessionId, { pageSize: 100 })) exported.push(m);
      expect(exported.map((m) => Message.text(m))).toEqual(Array.from({ length: 1234 }, (_, i) => `m${i}`));
      expect(counted.names.filter((n) => n === 'evalsha')).toHaveLength(13);
      expect(counted.names.every((n) => n === 'evalsha')).toBe(true);
    });

    it('listMessages cursors survive appends and trims between pages', async () => {
      const provider = make({ maxStored: 50 });
      const sessionId = id();
      await seed(provider, sessionId, 30);
      const first = await provider.listMessages(sessionId, { limit: 10 });
      expect(texts(first.messages)).toEqual(Array.from({ length: 10 }, (_, i) => `m${i}`));
      expect(first.nextCursor).toBeDefined();
      // 5 new messages arrive: the next page continues right after m9.
      await provider.append(
        sessionId,
        Array.from({ length: 5 }, (_, i) => Message.user(`n${i}`)),
      );
      const second = await provider.listMessages(sessionId, { limit: 10, cursor: first.nextCursor! });
      expect(texts(second.messages)).toEqual(Array.from({ length: 10 }, (_, i) => `m${i + 10}`));
      // 40 more trim the oldest 25 away (m0..m24): the next page skips what is gone, nothing repeats.
      await provider.append(
        sessionId,
        Array.from({ length: 40 }, (_, i) => Message.user(`p${i}`)),
      );
      const third = await provider.listMessages(sessionId, { limit: 10, cursor: second.nextCursor! });
      expect(texts(third.messages)).toEqual(['m25', 'm26', 'm27', 'm28', 'm29', 'n0', 'n1', 'n2', 'n3', 'n4']);
      let page = third;
      const rest: string[] = [];
      while (page.nextCursor !== undefined) {
        page = await provider.listMessages(sessionId, { limit: 7, cursor: page.nextCursor });
        rest.push(...texts(page.messages));
      }
      expect(rest).toEqual(Array.from({ length: 40 }, (_, i) => `p${i}`));
      expect(await provider.listMessages(sessionId, { cursor: '999999' })).toEqual({ messages: [], nextCursor: undefined });
      expect(await provider.listMessages(id())).toEqual({ messages: [], nextCursor: undefined });
    });

    it("clear deletes one provider's history of a session and leaves other source ids alone", async () => {
      const mine = make({ sourceId: 'mine' });
      const theirs = make({ sourceId: 'theirs' });
      const sessionId = id();
      await mine.saveMessages(sessionId, turn(1), { state });
      await theirs.saveMessages(sessionId, turn(2), { state });
      expect(await mine.clear(sessionId)).toBe(true);
      expect(await mine.clear(sessionId)).toBe(false);
      expect(await client.exists(mine.keys(sessionId).messages, mine.keys(sessionId).ids)).toBe(0);
      expect(await mine.getMessages(sessionId, { state })).toEqual([]);
      expect(texts(await theirs.getMessages(sessionId, { state }))).toEqual(['q2', 'a2']);
      // Cleared history starts again from scratch, and a re-sent old turn is stored again.
      await mine.saveMessages(sessionId, turn(3), { state });
      expect(await mine.countMessages(sessionId)).toBe(2);
    });

    it('clearMessages removes every key of the session for its source id, one DEL', async () => {
      const provider = make({ maxStored: 5 });
      const sessionId = id();
      for (let i = 0; i < 4; i++) await provider.saveMessages(sessionId, turn(i), { state });
      const counted = countCommands(client);
      await provider.clearMessages(sessionId, { state });
      expect(counted.names).toEqual(['del']);
      const encoded = provider.keys(sessionId).messages.split(':{')[1]!.split('}')[0]!;
      expect((await allKeys(client)).filter((k) => k.includes(`{${encoded}}`))).toEqual([]);
      await provider.clearMessages(sessionId, { state });
    });

    describe('forkMessages', () => {
      const fork = (provider: RedisHistoryProvider, from: string, to: string, atMessageId?: string) =>
        provider.forkMessages(from, to, { fromState: {}, toState: {}, ...(atMessageId === undefined ? {} : { atMessageId }) });

      it('copies the history up to a message with its id set, on the server in one script call on a single node', async () => {
        const provider = make({ ttlSeconds: 300 });
        const from = id();
        const messages = Array.from({ length: 1200 }, (_, i) => Message.user(`m${i}`));
        await provider.append(from, messages);
        await fork(provider, from, id()); // loads the script on this node
        const counted = countCommands(client);
        const to = id();
        expect(await fork(provider, from, to, messages[1099]!.id)).toBe(1100);
        // On a cluster the copy is saved on the node of `to`, which may not have run the script yet:
        // it answers NOSCRIPT once and the client sends the script whole (EVALSHA, then EVAL).
        const names = counted.names.filter((name, i, all) => !(name === 'eval' && all[i - 1] === 'evalsha'));
        expect(names).toEqual(client instanceof Redis ? ['evalsha'] : ['lrange', 'evalsha']);
        expect(texts(await provider.getMessages(to, { state }))).toEqual(texts(messages.slice(0, 1100)));
        // The copy's bookkeeping: ids de-duplicate, export cursors go on, expiry is set on both keys.
        expect(await provider.append(to, [messages[5]!, messages[1100]!])).toBe(1);
        const page = await provider.listMessages(to, { limit: 1000 });
        expect(texts((await provider.listMessages(to, { cursor: page.nextCursor!, limit: 1000 })).messages)).toEqual([
          ...texts(messages.slice(1000, 1101)),
        ]);
        for (const key of Object.values(provider.keys(to))) expect(await client.ttl(key)).toBeGreaterThan(250);
        // The source is untouched, and its expiry was not extended.
        expect(await provider.countMessages(from)).toBe(1200);
        const all = id();
        expect(await fork(provider, from, all)).toBe(1200);
        expect(await provider.countMessages(all)).toBe(1200);
      });

      it('keeps the newest maxStored of the copy', async () => {
        const provider = make({ maxStored: 3 });
        const from = id();
        const messages = Array.from({ length: 3 }, (_, i) => Message.user(`m${i}`));
        await provider.append(from, messages);
        const small = new RedisHistoryProvider({ client, prefix, maxStored: 2 });
        const to = id();
        expect(await fork(small, from, to, messages[2]!.id)).toBe(3);
        expect(texts(await small.getMessages(to, { state }))).toEqual(['m1', 'm2']);
        expect(await client.zrange(small.keys(to).ids, '0', '-1')).toEqual([messages[1]!.id, messages[2]!.id]);
      });

      it("a message not in the history (unknown or empty) is an InvalidInputError, the caller's mistake, and nothing is written", async () => {
        const provider = make();
        const from = id();
        await provider.saveMessages(from, turn(1), { state });
        const to = id();
        for (const atMessageId of ['no-such-message', '']) {
          const error = await fork(provider, from, to, atMessageId).catch((e: unknown) => e);
          expect(InvalidInputError.isInstance(error), JSON.stringify(atMessageId)).toBe(true);
          expect((error as Error).message).toContain(`message ${JSON.stringify(atMessageId)} is not in the history`);
          expect(await client.exists(provider.keys(to).messages, provider.keys(to).ids)).toBe(0);
        }
        // An empty source has no message to fork at either; forking all of it copies nothing.
        const empty = id();
        await expect(fork(provider, empty, to, 'x')).rejects.toSatisfy(InvalidInputError.isInstance);
        expect(await fork(provider, empty, to)).toBe(0);
        expect(await client.exists(provider.keys(to).messages, provider.keys(to).ids)).toBe(0);
      });

      it('finds the message in the list when the id set was deleted, and appends to a destination that holds messages', async () => {
        const provider = make();
        const from = id();
        await provider.append(from, [...turn(1), ...turn(2)]);
        const [, a1] = await provider.getMessages(from, { state });
        await client.del(provider.keys(from).ids);
        const to = id();
        expect(await fork(provider, from, to, a1!.id)).toBe(2);
        expect(texts(await provider.getMessages(to, { state }))).toEqual(['q1', 'a1']);
        await fork(provider, from, to);
        expect(texts(await provider.getMessages(to, { state }))).toEqual(['q1', 'a1', 'q2', 'a2']);
      });

      it('a corrupt id set is a SessionStateError and nothing is written (a cluster copies from the list alone)', async () => {
        const provider = make();
        const from = id();
        await provider.saveMessages(from, turn(1), { state });
        await client.zadd(provider.keys(from).ids, 'inf', 'bad');
        const to = id();
        if (client instanceof Redis) {
          await expect(fork(provider, from, to)).rejects.toSatisfy(SessionStateError.isInstance);
          expect(await client.exists(provider.keys(to).messages, provider.keys(to).ids)).toBe(0);
        } else {
          expect(await fork(provider, from, to)).toBe(2);
          expect(texts(await provider.getMessages(to, { state }))).toEqual(['q1', 'a1']);
        }
      });
    });

    it('keeps both keys of a conversation in one hash slot', async () => {
      const provider = make();
      for (const sessionId of ['plain', '{}', 'a{b}c', '}{', 'x'.repeat(4096)]) {
        const keys = provider.keys(sessionId);
        const slots = await Promise.all(
          [keys.messages, keys.ids].map((k) => client.call('CLUSTER', 'KEYSLOT', k).catch(() => keySlotLocal(k))),
        );
        expect(slots[0]).toBe(slots[1]);
        expect(keys.messages.match(/\{/g)).toHaveLength(1);
      }
    });

    describe('popMessages', () => {
      it('pops in one round trip (one script call), frees the popped ids and leaves the TTL alone', async () => {
        const provider = make({ ttlSeconds: 300 });
        const sessionId = id();
        expect(await provider.popMessages(sessionId, { state })).toEqual([]); // loads the script on the session's node
        await provider.saveMessages(sessionId, [...turn(1), ...turn(2)], { state });
        const keys = provider.keys(sessionId);
        await client.expire(keys.messages, 100);
        const counter = clusterOrSingle(client);
        counter.reset();
        expect(texts(await provider.popMessages(sessionId, { state, count: 2 }))).toEqual(['q2', 'a2']);
        expect(counter.names).toEqual(['evalsha']);
        expect(await client.zcard(keys.ids)).toBe(2);
        expect(await client.ttl(keys.messages)).toBeLessThanOrEqual(100);
        expect(await provider.append(sessionId, turn(2))).toBe(2);
        const page = await provider.listMessages(sessionId);
        expect(texts(page.messages)).toEqual(['q1', 'a1', 'q2', 'a2']);
        expect(await provider.popMessages(sessionId, { state, count: 9 })).toHaveLength(4);
        expect(await allKeys(client).then((all) => all.filter((k) => k === keys.messages || k === keys.ids))).toEqual([]);
      });

      it('an entry to pop that is not a message is a SessionStateError naming it (index from the end), and nothing is popped', async () => {
        const provider = make();
        const sessionId = id();
        await provider.saveMessages(sessionId, turn(1), { state });
        const keys = provider.keys(sessionId);
        for (const bad of ['{not json', nestedJson(5000), '[1,2]', JSON.stringify({ id: 'x', role: 'robot', contents: [] })]) {
          await client.rpush(keys.messages, bad);
          await client.rpush(keys.messages, JSON.stringify(Message.user('after')));
          const error = await provider.popMessages(sessionId, { state, count: 2 }).catch((e: unknown) => e);
          expect(SessionStateError.isInstance(error), String(error)).toBe(true);
          expect((error as SessionStateError).path).toBe(`redis:${keys.messages}[-2]`);
          expect(await client.llen(keys.messages)).toBe(4);
          expect(await client.zcard(keys.ids)).toBe(2);
          expect(texts(await provider.popMessages(sessionId, { state }))).toEqual(['after']);
          await client.rpop(keys.messages);
        }
        expect(texts(await provider.getMessages(sessionId, { state }))).toEqual(['q1', 'a1']);
      });

      it('an id set of the wrong Redis type is a SessionStateError and the list is untouched', async () => {
        const provider = make();
        const sessionId = id();
        await provider.saveMessages(sessionId, turn(1), { state });
        const keys = provider.keys(sessionId);
        await client.del(keys.ids);
        await client.set(keys.ids, 'oops');
        const error = await provider.popMessages(sessionId, { state }).catch((e: unknown) => e);
        expect(SessionStateError.isInstance(error), String(error)).toBe(true);
        expect(await client.llen(keys.messages)).toBe(2);
      });
    });

    describe('corrupt stored data', () => {
      it('an entry that is not JSON fails the read with SessionStateError naming the key and index', async () => {
        const provider = make();
        const sessionId = id();
        await provider.saveMessages(sessionId, turn(1), { state });
        const key = provider.keys(sessionId).messages;
        await client.rpush(key, '{not json');
        await provider.saveMessages(sessionId, turn(2), { state });
        const full = await provider.getMessages(sessionId, { state }).catch((e: unknown) => e);
        expect(SessionStateError.isInstance(full)).toBe(true);
        expect((full as SessionStateError).path).toBe(`redis:${key}[2]`);
        expect((full as SessionStateError).message).toContain('is not valid JSON');
        // In a window the index counts from the end, as LINDEX takes it.
        const window = await provider.getMessages(sessionId, { state, limit: 4 }).catch((e: unknown) => e);
        expect((window as SessionStateError).path).toBe(`redis:${key}[-3]`);
        expect(await client.lindex(key, -3)).toBe('{not json');
        const page = await provider.listMessages(sessionId, { limit: 10 }).catch((e: unknown) => e);
        expect((page as SessionStateError).path).toBe(`redis:${key}[2]`);
        // A window that does not reach the bad entry still loads.
        expect(texts(await provider.getMessages(sessionId, { state, limit: 2 }))).toEqual(['q2', 'a2']);
      });

      it('an entry of the wrong shape names the offending field', async () => {
        const provider = make();
        const sessionId = id();
        const key = provider.keys(sessionId).messages;
        await client.rpush(key, JSON.stringify({ id: 'x', role: 'robot', contents: [] }), JSON.stringify([1, 2]));
        const error = await provider.getMessages(sessionId, { state }).catch((e: unknown) => e);
        expect(SessionStateError.isInstance(error)).toBe(true);
        expect((error as SessionStateError).path).toBe(`redis:${key}[0].role`);
        await client.lpop(key);
        const second = await provider.getMessages(sessionId, { state }).catch((e: unknown) => e);
        expect((second as SessionStateError).path).toBe(`redis:${key}[0]`);
        expect((second as SessionStateError).problem).toContain('must be a message object');
      });

      it('data nested 100,000 levels deep fails the read with SessionStateError naming the key, the index and the field', async () => {
        const provider = make();
        const sessionId = id();
        const key = provider.keys(sessionId).messages;
        const deep = nestedJson(100_000);
        await client.rpush(
          key,
          `{"id":"m0","role":"user","contents":[],"metadata":${deep}}`,
          `{"id":"m1","role":"user","contents":[{"type":"function-result","callId":"c","result":${deep}}]}`,
          `{"id":"m2","role":${deep},"contents":[]}`,
          `{"id":"m3","role":"user","contents":[{"type":${deep}}]}`,
          `{"id":"m4","role":"user","contents":[],"extra":${deep}}`,
        );
        // Each round the bad entry is the first one; then it is removed.
        for (const [i, field] of ['.metadata', '.contents[0].result', '.role', '.contents[0].type', '.extra'].entries()) {
          const error = await provider.getMessages(sessionId, { state }).catch((e: unknown) => e);
          expect(SessionStateError.isInstance(error), field).toBe(true);
          expect((error as SessionStateError).path.startsWith(`redis:${key}[0]${field}`), (error as SessionStateError).path).toBe(true);
          const window = await provider.getMessages(sessionId, { state, limit: 5 - i }).catch((e: unknown) => e);
          expect((window as SessionStateError).path.startsWith(`redis:${key}[-${5 - i}]${field}`)).toBe(true);
          const page = await provider.listMessages(sessionId).catch((e: unknown) => e);
          expect((page as SessionStateError).path.startsWith(`redis:${key}[0]${field}`)).toBe(true);
          await client.lpop(key);
        }
        expect(await client.llen(key)).toBe(0);
      });

      it('an id set whose newest score is not an integer fails listMessages and saves with SessionStateError naming it; nothing is written', async () => {
        const provider = make();
        const sessionId = id();
        const keys = provider.keys(sessionId);
        await provider.saveMessages(sessionId, turn(1), { state });
        for (const score of ['inf', '1.5', '1e300']) {
          await client.del(keys.ids);
          await client.zadd(keys.ids, score, 'bogus');
          // One at a time: a rejection nobody awaits yet would be an unhandled one.
          for (const attempt of [
            () => provider.listMessages(sessionId),
            () => provider.saveMessages(sessionId, turn(2), { state }),
            () => provider.replaceMessages(sessionId, turn(3), { state }),
          ]) {
            const error = await attempt().catch((e: unknown) => e);
            expect(SessionStateError.isInstance(error), score).toBe(true);
            expect((error as SessionStateError).path).toBe(`redis:${keys.ids}`);
            expect((error as SessionStateError).problem).toContain('not an integer; nothing was changed');
          }
          expect(texts(await provider.getMessages(sessionId, { state }))).toEqual(['q1', 'a1']);
          expect(await client.zcard(keys.ids)).toBe(1);
        }
        // Deleting the id set, as the error says, repairs it: numbering restarts after the stored messages.
        await client.del(keys.ids);
        await provider.saveMessages(sessionId, turn(2), { state });
        expect(texts((await provider.listMessages(sessionId)).messages)).toEqual(['q1', 'a1', 'q2', 'a2']);
      });

      it('a key of the wrong Redis type gives SessionStateError for reads and writes', async () => {
        const provider = make();
        const sessionId = id();
        const key = provider.keys(sessionId).messages;
        await client.set(key, 'a string, not a list');
        for (const attempt of [
          () => provider.getMessages(sessionId, { state }),
          () => provider.saveMessages(sessionId, turn(1), { state }),
        ]) {
          const error = await attempt().catch((e: unknown) => e);
          expect(SessionStateError.isInstance(error)).toBe(true);
          expect((error as SessionStateError).path).toBe(`redis:${key}`);
        }
      });

      it('a run over corrupt history fails with a ProviderError whose cause is the SessionStateError', async () => {
        const provider = make();
        const sessionId = id();
        await client.rpush(provider.keys(sessionId).messages, 'garbage');
        const agent = createAgent({ client: new ScriptedChatClient({ replies: ['never'] }), contextProviders: [provider] });
        const error = await agent.run('hi', { session: agent.getSessionById(sessionId) }).catch((e: unknown) => e);
        expect(ProviderError.isInstance(error)).toBe(true);
        expect(SessionStateError.isInstance((error as ProviderError).cause)).toBe(true);
      });
    });

    it('rejects malformed messages before writing anything', async () => {
      const provider = make();
      const sessionId = id();
      const bad = { id: 'b', role: 'user', contents: [{ type: 'text' }] } as unknown as Message;
      const error = await provider.saveMessages(sessionId, [Message.user('ok'), bad], { state }).catch((e: unknown) => e);
      expect((error as SessionStateError).path).toBe('$.messages[1].contents[0].text');
      expect(await provider.countMessages(sessionId)).toBe(0);
    });

    it('refuses a message that is not plain JSON anywhere in it, naming the path, and stores nothing (saveMessages and replaceMessages)', async () => {
      const provider = make();
      const sessionId = id();
      await provider.saveMessages(sessionId, turn(1), { state });
      const before = await client.lrange(provider.keys(sessionId).messages, 0, -1);
      for (const [name, message, path] of nonJsonMessages()) {
        for (const write of [provider.saveMessages, provider.replaceMessages]) {
          const error = await write.call(provider, sessionId, [Message.user('fine'), message], { state }).catch((e: unknown) => e);
          expect(SessionStateError.isInstance(error), name).toBe(true);
          expect(
            (error as SessionStateError).path.startsWith(`$.messages[1]${path}`),
            `${name}: ${(error as SessionStateError).path}`,
          ).toBe(true);
        }
      }
      expect(await client.lrange(provider.keys(sessionId).messages, 0, -1)).toEqual(before);
      expect(await client.zcard(provider.keys(sessionId).ids)).toBe(2);
    });

    it('a message id stored more than once in the list is loaded once, from its first entry; a run reports the repeats', async () => {
      const provider = make();
      const sessionId = id();
      const key = provider.keys(sessionId).messages;
      await provider.saveMessages(sessionId, turn(1), { state });
      const [q1] = await client.lrange(key, 0, 0);
      const first = JSON.parse(q1!) as Message;
      // What an older version's retried write, or a hand edit, could leave: the same id again, once verbatim, once changed.
      await client.rpush(key, q1!, JSON.stringify({ ...first, contents: [{ type: 'text', text: 'changed' }] }));
      await provider.saveMessages(sessionId, turn(2), { state });
      expect(await client.llen(key)).toBe(6);
      expect(texts(await provider.getMessages(sessionId, { state }))).toEqual(['q1', 'a1', 'q2', 'a2']);
      // A window holds each id once too: its first entry within the window.
      expect(texts(await provider.getMessages(sessionId, { state, limit: 4 }))).toEqual(['q1', 'q2', 'a2']);
      expect(texts((await provider.listMessages(sessionId)).messages)).toEqual(['q1', 'a1', 'q2', 'a2']);
      const exported: Message[] = [];
      for await (const m of provider.exportMessages(sessionId, { pageSize: 2 })) exported.push(m);
      expect(texts(exported)).toEqual(['q1', 'a1', 'q2', 'a2']);
      const events: AgentEvent[] = [];
      const chat = new ScriptedChatClient({ replies: ['a3'] });
      const agent = createAgent({ client: chat, contextProviders: [provider], onEvent: (e) => void events.push(e) });
      await agent.run('q3', { session: agent.getSessionById(sessionId) });
      expect(texts(chat.calls[0]!.messages)).toEqual(['q1', 'a1', 'q2', 'a2', 'q3']);
      const reported = events.filter((e) => e.type === 'provider-diagnostic');
      expect(reported).toEqual([
        expect.objectContaining({ sourceId: 'redis', code: 'duplicate-messages', data: { key, duplicates: 2, messageIds: [first.id] } }),
      ]);
      expect((reported[0] as { message: string }).message).toContain(
        `holds 2 more entries under message ids already loaded ("${first.id}")`,
      );
    });

    it('an aborted signal rejects with its reason and writes nothing', async () => {
      const provider = make();
      const sessionId = id();
      const controller = new AbortController();
      controller.abort(new Error('stop'));
      await expect(provider.saveMessages(sessionId, turn(1), { state, signal: controller.signal })).rejects.toThrow('stop');
      expect(await provider.countMessages(sessionId)).toBe(0);
    });

    it('hostile session and source ids stay apart, and every key stays inside the prefix and the key grammar', async () => {
      const ids = [
        ...new Set([
          ...HOSTILE_SESSION_IDS,
          '}{',
          '{',
          '}',
          '*?[a-z]\\',
          'a\u0000b',
          '\uD800',
          '\uDC00',
          '\uFFFD',
          'x'.repeat(200),
          'x'.repeat(201),
          '%7B',
          '%u0041',
        ]),
      ];
      const hostilePrefix = uniquePrefix('hostile');
      const sources = ['redis', '*', ':{x}:'];
      const providers = sources.map((sourceId) => new RedisHistoryProvider({ client, prefix: hostilePrefix, sourceId }));
      for (const [p, provider] of providers.entries()) {
        for (const [i, sessionId] of ids.entries()) await provider.saveMessages(sessionId, [Message.user(`${p}/${i}`)], { state });
      }
      for (const [p, provider] of providers.entries()) {
        for (const [i, sessionId] of ids.entries()) {
          expect(texts(await provider.getMessages(sessionId, { state })), `source ${p}, id #${i}`).toEqual([`${p}/${i}`]);
        }
      }
      const keys = await allKeys(client);
      const mine = keys.filter((k) => k.startsWith(`${hostilePrefix}:`));
      expect(mine).toHaveLength(2 * ids.length * sources.length);
      const expected = new Set(providers.flatMap((provider) => ids.flatMap((sessionId) => Object.values(provider.keys(sessionId)))));
      expect(new Set(mine)).toEqual(expected);
      // Every key anyone wrote through this package on this server follows the grammar: nothing escaped a prefix.
      const grammar =
        /^[^\s{}*?[\]\\]+:(history:[A-Za-z0-9._%~-]+:\{[A-Za-z0-9._%~-]+\}:(messages|ids)|session:\{[A-Za-z0-9._%~-]+\}|sessions:\{(all|all:\d+\.\d+|user:[A-Za-z0-9._%~-]+)\}:(order|meta|expires)|turn:\{[A-Za-z0-9._%~-]+\}:[^\s{}]+|stream:\{[A-Za-z0-9._%~-]+\}(:turn:[A-Za-z0-9._%~-]+|:chunks:[0-9a-f-]+)?|wm:\{[us]:[A-Za-z0-9._%~-]+\}:(user|index|session(:[A-Za-z0-9._%~-]+)?))$/;
      expect(keys.filter((k) => !grammar.test(k))).toEqual([]);
      for (const key of mine) expect(key.length).toBeLessThan(300);
    });

    it('50 concurrent runs through two providers on two clients store every message once, each turn contiguous', async () => {
      const other = connect();
      const sourceId = `concurrent-${id()}`;
      const providers = [make({ sourceId }), new RedisHistoryProvider({ client: other, prefix, sourceId })];
      const chat = new ScriptedChatClient({
        replies: (messages) => ({ text: `re: ${Message.text(messages.at(-1)!)}`, delayMs: messages.length % 4 }),
      });
      const agents = providers.map((provider) => createAgent({ client: chat, contextProviders: [provider] }));
      const sessionId = id();
      await Promise.all(
        Array.from({ length: 50 }, (_, i) => agents[i % 2]!.run(`turn ${i}`, { session: new AgentSession({ sessionId }) })),
      );
      const stored = texts(await providers[0]!.getMessages(sessionId, { state }));
      expect(stored).toHaveLength(100);
      for (let i = 0; i < 50; i++) {
        const at = stored.indexOf(`turn ${i}`);
        expect(at).toBeGreaterThanOrEqual(0);
        expect(stored.lastIndexOf(`turn ${i}`)).toBe(at);
        expect(stored[at + 1]).toBe(`re: turn ${i}`);
      }
    });
  });
}

/** Counts commands on the client itself (a Cluster routes through its own sendCommand). */
function clusterOrSingle(client: Redis | Cluster) {
  const key = Symbol.for('ctx.test.counter');
  const holder = client as unknown as Record<symbol, ReturnType<typeof countCommands>>;
  return (holder[key] ??= countCommands(client));
}

/** CLUSTER KEYSLOT is refused by a non-cluster server: compute the slot of the hash tag the same way. */
function keySlotLocal(key: string): number {
  const open = key.indexOf('{');
  const close = open >= 0 ? key.indexOf('}', open + 1) : -1;
  const tagged = open >= 0 && close > open + 1 ? key.slice(open + 1, close) : key;
  let crc = 0;
  for (const byte of Buffer.from(tagged)) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}
