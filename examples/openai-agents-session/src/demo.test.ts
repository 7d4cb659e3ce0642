import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { InMemoryHistoryProvider } from '@ctx/core';
import { CtxSession } from '@ctx/openai-agents';
import { RedisHistoryProvider } from '@ctx/redis';
import { assertRedisInstalled, type RedisServer, startRedisServer } from '@ctx/redis-test-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDemo } from './demo.js';

const expected = {
  replies: ['It is sunny in Paris.', 'I was sent 5 items of this conversation.'],
  itemsAfterTwoRuns: 6,
  undone: 'I was sent 5 items of this conversation.',
  itemsAfterUndo: 5,
};

describe('openai-agents-session example, with the history in a redis-server (what the example is for)', () => {
  let dir: string;
  let server: RedisServer;
  beforeAll(async () => {
    // The example is about a session in Redis: without redis-server this fails, it does not fall back.
    assertRedisInstalled();
    dir = await mkdtemp(join(tmpdir(), 'ctx-agents-example-test-'));
    server = await startRedisServer({ dir });
  });
  afterAll(async () => {
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('two runs share the session, the tool result reaches the model, popItem undoes the last reply, and the items are in Redis', async () => {
    const url = `redis://127.0.0.1:${server.port}`;
    const history = new RedisHistoryProvider({ url, ttlSeconds: 3600 });
    try {
      expect(await runDemo(history, 'user-42:chat-1')).toEqual(expected);
    } finally {
      await history.close();
    }
    // A new connection reads the five items back: they were stored in Redis, not in this process.
    const reader = new RedisHistoryProvider({ url });
    try {
      expect(await new CtxSession({ history: reader, sessionId: 'user-42:chat-1' }).getItems()).toHaveLength(5);
    } finally {
      await reader.close();
    }
  });

  it('npm start runs it end to end on a redis-server', async () => {
    const { stdout } = await promisify(execFile)('npx', ['tsx', 'src/main.ts'], { cwd: new URL('..', import.meta.url), timeout: 60_000 });
    expect(stdout).toMatch(/history in redis-server on port \d+/);
    expect(stdout).toContain("undone: 'I was sent 5 items of this conversation.'");
  });
});

describe('openai-agents-session example, with the in-memory history (main.ts without redis-server)', () => {
  it('gives the same result', async () => {
    expect(await runDemo(new InMemoryHistoryProvider(), 'chat-1')).toEqual(expected);
  });
});
