import { readFileSync } from 'node:fs';
import { PGlite, type PGliteOptions } from '@electric-sql/pglite';
import pg from 'pg';
import { inject } from 'vitest';

/** The shared test server's URL (from test/global-setup.ts). */
export const serverUrl = (): string => inject('postgres').url;

/** A temporary directory of this run, for servers a test starts itself. */
export const testTmpDir = (): string => inject('postgres').tmpDir;

/** A `pg` Pool to the shared test server; close it in `afterAll`. */
export function openTestPool(options: Omit<pg.PoolConfig, 'connectionString'> = {}): pg.Pool {
  const pool = new pg.Pool({ connectionString: serverUrl(), max: 10, ...options });
  // A server killed by a fault test makes idle clients emit 'error'; the next query reports it.
  pool.on('error', () => {});
  return pool;
}

/**
 * A fresh in-memory PGlite, loaded from the dump the global setup made (about 1 s instead of 6 s).
 * Pass `extensions` (e.g. `{ vector }`) to load them as `PGlite.create` would. Share one per test file.
 */
export async function openTestPGlite(options: Pick<PGliteOptions, 'extensions'> = {}): Promise<PGlite> {
  const dump = new Blob([readFileSync(inject('postgres').pgliteDump)]);
  return PGlite.create({ ...options, loadDataDir: dump });
}

/**
 * Ends a test's own `pg` client whose server was stopped under it. pg before 8.11 never settles
 * `end()` on a connection that is already gone, so the wait is bounded: the client is scaffolding.
 */
export async function endClient(client: { end(): Promise<void> }): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([client.end().catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, 1000)))]);
  clearTimeout(timer);
}
