import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startOpenAITestServer } from '@ctx/openai-test-server';
import { startRedisServer } from '@ctx/redis-test-server';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Environment variables the runnable blocks get: the local servers' addresses. */
    blockEnv: Record<string, string>;
  }
}

/** Starts a redis-server and the local OpenAI-protocol server on loopback; stops them at the end (redis by its pid). */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = mkdtempSync(join(tmpdir(), 'ctx-doc-test-'));
  const redis = await startRedisServer({ dir });
  const openai = await startOpenAITestServer();
  project.provide('blockEnv', {
    REDIS_URL: `redis://127.0.0.1:${redis.port}`,
    OPENAI_BASE_URL: openai.url,
    OPENAI_API_KEY: openai.apiKey,
    MEM0_TELEMETRY: 'false',
  });
  return async () => {
    await Promise.all([redis.stop(), openai.close()]);
    rmSync(dir, { recursive: true, force: true });
  };
}
