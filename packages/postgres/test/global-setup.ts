import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { startPostgresServer } from '@ctx/postgres-test-server';
import type { TestProject } from 'vitest/node';

/** What the global setup hands to the tests (through vitest `provide` / `inject`). */
export interface PostgresTestEnvironment {
  /** `postgres://postgres@127.0.0.1:PORT/postgres` of the shared private server (trust authentication). */
  url: string;
  /** A temporary directory for servers that tests start themselves (fault tests). */
  tmpDir: string;
  /** A `dumpDataDir('none')` of a fresh PGlite: `openTestPGlite()` loads it (~1 s) instead of creating one (~6 s). */
  pgliteDump: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    postgres: PostgresTestEnvironment;
  }
}

/**
 * Starts one private PostgreSQL server on loopback for the whole run (stopped by pid at the end),
 * and makes one fresh PGlite data directory that each test file loads instead of creating its own.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = mkdtempSync(join(tmpdir(), 'ctx-postgres-test-'));
  const [server, dump] = await Promise.all([
    startPostgresServer({ dir: join(dir, 'shared') }),
    (async () => {
      const db = await PGlite.create();
      const blob = await db.dumpDataDir('none');
      await db.close();
      const file = join(dir, 'pglite-fresh.tar');
      writeFileSync(file, Buffer.from(await blob.arrayBuffer()));
      return file;
    })(),
  ]);
  project.provide('postgres', { url: server.url, tmpDir: dir, pgliteDump: dump });
  return async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
