import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedisServer } from '@ctx/redis-test-server';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Port of a redis-server on 127.0.0.1 that the global setup started. */
    redisPort: number;
  }
}

/** Starts one redis-server on loopback on a free port; stops it by pid at the end. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = mkdtempSync(join(tmpdir(), 'ctx-openai-agents-test-'));
  const server = await startRedisServer({ dir });
  project.provide('redisPort', server.port);
  return async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
