import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runConversation } from './conversation.js';
import { type LocalRedis, startLocalRedis } from './redis-server.js';

let redis: LocalRedis;
beforeAll(async () => {
  redis = await startLocalRedis();
});
afterAll(async () => {
  await redis?.stop();
});

describe('redis-chat', () => {
  it('a second process continues the conversation the first one stored in Redis, and prints the audit', async () => {
    const env = { OPENAI_API_KEY: process.env.OPENAI_API_KEY };
    delete process.env.OPENAI_API_KEY; // the offline model, whatever the environment
    try {
      const lines: string[] = [];
      const [first, second] = await runConversation({
        redisUrl: redis.url,
        sessionId: `test-${randomUUID()}`,
        print: (line) => lines.push(line),
      });
      expect(first).toContain('assistant: Nice to meet you, Ada.');
      // The model answers only from what it is sent: the name comes from the history loaded from Redis.
      expect(second).toContain('assistant: You are Ada.');
      // The audit of the second prompt: two messages from Redis, one input.
      expect(second).toMatch(/^\s+redis\s+2\s+\d+$/m);
      expect(second).toMatch(/^\s+input\s+1\s+\d+$/m);
      expect(first).not.toMatch(/^\s+redis\s/m);
      expect(lines).toContain('--- process 2 ---');
    } finally {
      if (env.OPENAI_API_KEY !== undefined) process.env.OPENAI_API_KEY = env.OPENAI_API_KEY;
    }
  });
});
