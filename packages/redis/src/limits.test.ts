import { join } from 'node:path';
import { BackendUnavailableError, ConfigurationError, createAgent, InvalidInputError, Message, SessionStateError } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { findFreePort, startRedisServer, type RedisServer } from '@ctx/redis-test-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterClient, env, singleClient, uniquePrefix } from '../test/helpers.js';
import { RedisHistoryProvider } from './redis-history-provider.js';
import { RedisSessionStore } from './redis-session-store.js';

const state = {};
const session = (sessionId: string, text: string) => ({
  type: 'ctx.session' as const,
  version: 2 as const,
  sessionId,
  metadata: { createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z' },
  state: { notes: { text } },
});

async function failure(fn: () => Promise<unknown>): Promise<Error> {
  try {
    await fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected the call to fail');
}

describe('the database index of a url', () => {
  it('is honoured on a single node: what is written lands in that database, not in 0', async () => {
    const prefix = uniquePrefix('db');
    const history = new RedisHistoryProvider({ url: `redis://127.0.0.1:${env.port}/5`, prefix });
    const store = new RedisSessionStore({ url: `redis://127.0.0.1:${env.port}/5`, prefix });
    try {
      await history.saveMessages('s-db', [Message.user('in five')], { state });
      await store.set(session('s-db', 'x'));
      expect(await singleClient(5).keys(`${prefix}:*`)).toHaveLength(5);
      expect(await singleClient(0).keys(`${prefix}:*`)).toEqual([]);
    } finally {
      await Promise.all([history.close(), store.close()]);
    }
  });

  it('an index the server does not have fails every call with a ConfigurationError naming it and `databases`; nothing lands in 0', async () => {
    const prefix = uniquePrefix('nodb');
    const history = new RedisHistoryProvider({ url: `redis://127.0.0.1:${env.port}/99`, prefix });
    const store = new RedisSessionStore({ url: `redis://127.0.0.1:${env.port}/99`, prefix });
    try {
      for (const call of [
        () => history.saveMessages('s-x', [Message.user('lost?')], { state }),
        () => history.getMessages('s-x', { state }),
        () => store.set(session('s-x', 'lost?')),
      ]) {
        const error = await failure(call);
        expect(ConfigurationError.isInstance(error)).toBe(true);
        expect(error.message).toMatch(
          new RegExp(
            `^Redis(History|Session)\\w+: the Redis server at 127\\.0\\.0\\.1:${env.port} has no database 99: its \`databases\` setting is 16 \\(databases 0-15\\)\\.`,
          ),
        );
      }
      expect(await singleClient(0).keys(`${prefix}:*`)).toEqual([]);
    } finally {
      await Promise.all([history.close(), store.close()]);
    }
  });

  it('is refused on a cluster, which has database 0 only', async () => {
    expect(() => new RedisHistoryProvider({ nodes: env.clusterNodes, redisOptions: { db: 2 } })).toThrow(ConfigurationError);
    expect(() => new RedisSessionStore({ nodes: env.clusterNodes, redisOptions: { db: 2 } })).toThrow(
      /database 2 was asked of a Redis Cluster/,
    );
    const cluster = clusterClient();
    (cluster.options as { redisOptions?: { db?: number } }).redisOptions = { ...cluster.options.redisOptions, db: 3 };
    expect(() => new RedisHistoryProvider({ client: cluster })).toThrow(/database 3 was asked of a Redis Cluster/);
  });
});

describe('a server that is not there', () => {
  it('says the connection was refused, and where, as a BackendUnavailableError', async () => {
    const port = await findFreePort();
    const history = new RedisHistoryProvider({ url: `redis://127.0.0.1:${port}`, timeoutMs: 2000 });
    const store = new RedisSessionStore({ url: `redis://127.0.0.1:${port}`, timeoutMs: 2000 });
    try {
      for (const call of [() => history.getMessages('s-1', { state }), () => store.list({ userId: 'u-1' })]) {
        const error = await failure(call);
        expect(BackendUnavailableError.isInstance(error)).toBe(true);
        expect(error.message).toMatch(new RegExp(`^Redis at 127\\.0\\.0\\.1:${port} refused the connection \\(ECONNREFUSED\\), so `));
        expect(error.message).not.toMatch(/max retries/i);
      }
      const listing = await failure(() => store.list({ userId: 'u-1' }));
      expect(listing.message).toContain('list for user "u-1" (key');
      expect(listing.message).not.toContain('for session');
      const all = await failure(() => store.list());
      expect(all.message).toContain('list for the listing of every session');
    } finally {
      await Promise.all([history.close(), store.close()]);
    }
  });
});

describe('maxValueBytes: values over what Redis takes are refused before any round trip', () => {
  // A server of its own whose proto-max-bulk-len is 1 MB (its smallest), to show what the check spares.
  const dir = join(env.tmpDir, `bulk-${Math.random().toString(36).slice(2, 8)}`);
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedisServer({ dir, args: ['--proto-max-bulk-len', '1mb'] });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('a message or session over maxValueBytes is a SessionStateError naming the limit; nothing is written, the connection stays up', async () => {
    const url = `redis://127.0.0.1:${server.port}`;
    const limit = 1024 * 1024;
    const history = new RedisHistoryProvider({ url, maxValueBytes: limit });
    const store = new RedisSessionStore({ url, maxValueBytes: limit });
    try {
      const big = Message.user('x'.repeat(limit), { id: 'm-big' });
      const error = await failure(() => history.saveMessages('s-big', [Message.user('small'), big], { state }));
      expect(SessionStateError.isInstance(error)).toBe(true);
      expect((error as SessionStateError).path).toBe('$.messages[1]');
      expect(error.message).toMatch(
        /Message "m-big" is 10486\d\d bytes of JSON, over RedisHistoryProvider's maxValueBytes \(1048576 bytes, 1 MiB; Redis refuses values over its proto-max-bulk-len, 512 MB by default\); nothing was written/,
      );
      expect(await history.getMessages('s-big', { state })).toEqual([]);

      const tooBig = await failure(() => store.set(session('s-big', 'y'.repeat(limit))));
      expect(SessionStateError.isInstance(tooBig)).toBe(true);
      expect(tooBig.message).toMatch(/Session "s-big" is \d+ bytes of JSON, over RedisSessionStore's maxValueBytes \(1048576 bytes/);
      expect(await store.get('s-big')).toBeUndefined();

      // Just under the limit: stored and read back.
      await history.saveMessages('s-ok', [Message.user('z'.repeat(limit - 200), { id: 'm-ok' })], { state });
      expect((await history.getMessages('s-ok', { state })).map((m) => m.id)).toEqual(['m-ok']);
    } finally {
      await Promise.all([history.close(), store.close()]);
    }
  });

  it('without the check (maxValueBytes above the server limit) the server drops the write with a protocol error', async () => {
    const history = new RedisHistoryProvider({ url: `redis://127.0.0.1:${server.port}`, timeoutMs: 2000 });
    try {
      const error = await failure(() => history.saveMessages('s-raw', [Message.user('x'.repeat(2 * 1024 * 1024))], { state }));
      expect(BackendUnavailableError.isInstance(error)).toBe(true);
      expect(error.message).not.toMatch(/maxValueBytes/);
    } finally {
      await history.close();
    }
  });

  it('checks the option', () => {
    expect(() => new RedisHistoryProvider({ url: 'redis://127.0.0.1:1', maxValueBytes: 0 })).toThrow(
      'RedisHistoryProvider: maxValueBytes must be a positive integer, got 0.',
    );
  });
});

describe("the agent's limits in front of Redis", () => {
  it('a pasted 30 MB message fails the run with InvalidInputError; Redis never sees it', async () => {
    const prefix = uniquePrefix('paste');
    const client = singleClient();
    const history = new RedisHistoryProvider({ client, prefix });
    const store = new RedisSessionStore({ client, prefix });
    const chat = new ScriptedChatClient({ replies: ['never'] });
    const agent = createAgent({ client: chat, contextProviders: [history], sessionStore: store, persistence: 'model-call' });
    const session = agent.createSession({ sessionId: 's-paste' });
    const error = await failure(() => agent.run('x'.repeat(30 * 1024 * 1024), { session }));
    expect(InvalidInputError.isInstance(error)).toBe(true);
    expect((error as InvalidInputError).limit).toBe('maxMessageBytes');
    expect(chat.calls).toHaveLength(0);
    expect(await client.keys(`${prefix}:*`)).toEqual([]);
  });
});
