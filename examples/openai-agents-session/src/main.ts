import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InMemoryHistoryProvider } from '@ctx/core';
import { RedisHistoryProvider } from '@ctx/redis';
import { redisInstalled, startRedisServer } from '@ctx/redis-test-server';
import { runDemo } from './demo.js';

// A redis-server on loopback when one is installed (apt-get install redis-server), else memory.
if (redisInstalled()) {
  const dir = await mkdtemp(join(tmpdir(), 'ctx-agents-example-'));
  const server = await startRedisServer({ dir });
  const history = new RedisHistoryProvider({ url: `redis://127.0.0.1:${server.port}`, ttlSeconds: 3600 });
  try {
    console.log('history in redis-server on port', server.port, await runDemo(history, 'user-42:chat-1'));
  } finally {
    await history.close();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
} else {
  console.log('history in memory (no redis-server installed)', await runDemo(new InMemoryHistoryProvider(), 'user-42:chat-1'));
}
