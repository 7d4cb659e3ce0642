import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedisCluster, startRedisServer } from '@ctx/redis-test-server';
import type { TestProject } from 'vitest/node';

/** What the global setup hands to the tests (through vitest `provide` / `inject`). */
export interface RedisTestEnvironment {
  /** Port of the shared single-node server on 127.0.0.1. */
  port: number;
  /** Seed nodes of the shared 3-node cluster. */
  clusterNodes: { host: string; port: number }[];
  /** A temporary directory for servers that tests start themselves (fault tests). */
  tmpDir: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    redis: RedisTestEnvironment;
  }
}

/** Starts a single redis-server and a 3-node cluster on loopback, on free ports; stops them by pid at the end. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = mkdtempSync(join(tmpdir(), 'ctx-redis-test-'));
  const single = await startRedisServer({ dir: join(dir, 'single') });
  let cluster: Awaited<ReturnType<typeof startRedisCluster>>;
  try {
    cluster = await startRedisCluster({ dir: join(dir, 'cluster') });
  } catch (error) {
    await single.stop();
    throw error;
  }
  project.provide('redis', { port: single.port, clusterNodes: [...cluster.startupNodes], tmpDir: dir });
  return async () => {
    await Promise.all([single.stop(), cluster.stop()]);
    rmSync(dir, { recursive: true, force: true });
  };
}
