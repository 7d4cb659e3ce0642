import { join } from 'node:path';
import { BackendUnavailableError, createAgent, Message, ProviderError } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { startRedisServer, type RedisServer } from '@ctx/redis-test-server';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { env } from '../test/helpers.js';
import { RedisHistoryProvider } from './redis-history-provider.js';
import { RedisSessionStore } from './redis-session-store.js';

const state = {};
/**
 * What ends a call while Redis is down, so none waits longer than its timeoutMs: the connection
 * refused or cut, a command refused while the client reconnects (ioredis' retries per request are
 * 0), or the deadline; never ioredis giving up after retries of its own.
 */
const BOUNDED = /refused the connection|closed the connection|max retries per request limit \(which is 0\)|did not answer within \d+ ms/;

/** Runs `fn`, expecting it to fail; resolves to the error. */
async function failure(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail while Redis is down');
}

async function eventually<T>(fn: () => Promise<T>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

// A dedicated, durable (appendfsync always) server that these tests kill and restart by pid; the
// shared servers of the other test files are never touched.
describe('Redis goes away in the middle of a conversation and comes back', () => {
  const dir = join(env.tmpDir, `fault-${Math.random().toString(36).slice(2, 8)}`);
  let server: RedisServer;
  const crash = () => server.stop('SIGKILL');
  const restart = async () => {
    server = await startRedisServer({ dir, port: server.port, durable: true });
  };

  beforeAll(async () => {
    server = await startRedisServer({ dir, durable: true });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('runs during the outage fail fast with BackendUnavailableError; after recovery nothing is lost or duplicated', async () => {
    const url = `redis://127.0.0.1:${server.port}`;
    const history = new RedisHistoryProvider({ url, timeoutMs: 1500 });
    const store = new RedisSessionStore({ url, timeoutMs: 1500 });
    try {
      const chat = new ScriptedChatClient({ replies: (messages) => `re: ${Message.text(messages.at(-1)!)}` });
      const agent = createAgent({ client: chat, contextProviders: [history], sessionStore: store });
      const session = agent.createSession({ sessionId: 'fault-session' });
      for (const text of ['turn 1', 'turn 2', 'turn 3']) {
        await agent.run(text, { session });
        await agent.saveSession(session);
      }
      const etagBefore = session.etag;

      await crash();
      for (const attempt of [
        () => agent.run('turn 4', { session }),
        () => agent.run('turn 4 again', { session }),
        () => history.getMessages('fault-session', { state }),
        () => history.saveMessages('fault-session', [Message.user('lost?')], { state }),
        () => store.get('fault-session'),
        () => agent.saveSession(session),
      ]) {
        const error = await failure(attempt);
        const cause = ProviderError.isInstance(error) ? error.cause : error;
        expect(BackendUnavailableError.isInstance(cause), String(cause)).toBe(true);
        expect((cause as BackendUnavailableError).backend).toBe('redis');
        expect((cause as Error).message).toMatch(BOUNDED);
      }

      await restart();
      await eventually(() => history.countMessages('fault-session'));
      const res = await agent.run('turn 5', { session });
      expect(res.text).toBe('re: turn 5');
      // The model saw turns 1 to 3 from Redis, and nothing of the failed runs.
      const seen = chat.calls.at(-1)!.messages.map((m) => Message.text(m));
      expect(seen).toEqual(['turn 1', 're: turn 1', 'turn 2', 're: turn 2', 'turn 3', 're: turn 3', 'turn 5']);
      const stored = await history.getMessages('fault-session', { state });
      expect(stored.map((m) => Message.text(m))).toEqual([...seen, 're: turn 5']);
      expect(new Set(stored.map((m) => m.id)).size).toBe(stored.length);
      // The session saved before the crash survived it, and saving over it still works.
      expect((await store.get('fault-session'))?.etag).toBe(etagBefore);
      await agent.saveSession(session);
    } finally {
      await Promise.all([history.close(), store.close()]);
    }
  });

  it('saves cut off by a crash, retried after recovery, store every message exactly once and each batch contiguous', async () => {
    const history = new RedisHistoryProvider({ url: `redis://127.0.0.1:${server.port}`, timeoutMs: 1500, sourceId: 'crash' });
    try {
      const sessionId = 'crash-session';
      const batches = Array.from({ length: 120 }, (_, i) => [Message.user(`b${i}.0`), Message.assistant(`b${i}.1`)]);
      const acknowledged = new Set<number>();
      const failures: unknown[] = [];
      let next = 0;
      let killed: Promise<void> | undefined;
      const worker = async () => {
        while (next < batches.length) {
          const i = next++;
          try {
            await history.saveMessages(sessionId, batches[i]!, { state });
            acknowledged.add(i);
            if (acknowledged.size === 40) killed ??= crash();
          } catch (error) {
            failures.push(error);
          }
        }
      };
      await Promise.all(Array.from({ length: 6 }, worker));
      await killed;
      expect(acknowledged.size).toBeGreaterThanOrEqual(40);
      expect(failures.length).toBeGreaterThan(0);
      for (const error of failures) {
        expect(BackendUnavailableError.isInstance(error), String(error)).toBe(true);
        expect((error as Error).message).toMatch(BOUNDED);
      }

      await restart();
      const before = await eventually(() => history.countMessages(sessionId));
      // Every acknowledged batch survived the crash.
      expect(before).toBeGreaterThanOrEqual(2 * acknowledged.size);
      // The app retries every batch, whatever happened to it: acknowledged ones must add nothing.
      let added = 0;
      for (const [i, batch] of batches.entries()) {
        const n = await history.append(sessionId, batch);
        if (acknowledged.has(i)) expect(n, `batch ${i} was acknowledged before the crash`).toBe(0);
        added += n;
      }
      expect(before + added).toBe(240);
      const stored = await history.getMessages(sessionId, { state });
      expect(stored).toHaveLength(240);
      expect(new Set(stored.map((m) => m.id)).size).toBe(240);
      for (const batch of batches) {
        const at = stored.findIndex((m) => m.id === batch[0]!.id);
        expect(stored.slice(at, at + 2)).toEqual(batch);
      }
    } finally {
      await history.close();
    }
  });

  it('an injected client left at ioredis defaults is still bounded by timeoutMs, and recovers', async () => {
    const client = new Redis({ host: '127.0.0.1', port: server.port });
    client.on('error', () => {});
    const history = new RedisHistoryProvider({ client, timeoutMs: 1000, sourceId: 'injected' });
    try {
      await history.saveMessages('injected-session', [Message.user('before')], { state });
      await crash();
      // ioredis left at its defaults queues the command and retries for ever: the deadline ends the call.
      const error = await failure(() => history.getMessages('injected-session', { state }));
      expect(BackendUnavailableError.isInstance(error)).toBe(true);
      expect((error as Error).message).toContain('did not answer within 1000 ms');
      await restart();
      const after = await eventually(() => history.getMessages('injected-session', { state }));
      expect(after.map((m) => Message.text(m))).toEqual(['before']);
      expect(client.status).toBe('ready');
    } finally {
      await history.close();
      client.disconnect();
    }
  });
});
