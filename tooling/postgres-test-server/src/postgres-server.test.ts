import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PostgresServer, postgresBinDir, startPostgresServer } from './postgres-server.js';

const run = promisify(execFile);
const bin = postgresBinDir();

const psql = async (server: PostgresServer, sql: string) => {
  const { stdout } = await run(join(bin as string, 'psql'), [server.url, '-XAtqc', sql]);
  return stdout.trim();
};

describe.skipIf(bin === undefined)('startPostgresServer', () => {
  let dir: string;
  let server: PostgresServer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ctx-postgres-server-'));
    server = await startPostgresServer({ dir, settings: { max_connections: '23' } });
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('listens on loopback with the settings given, fsync off', async () => {
    expect(server.url).toBe(`postgres://postgres@127.0.0.1:${server.port}/postgres`);
    expect(await psql(server, 'SHOW max_connections')).toBe('23');
    expect(await psql(server, 'SHOW fsync')).toBe('off');
    expect(await psql(server, 'SHOW listen_addresses')).toBe('127.0.0.1');
  });

  it('keeps its data across an immediate stop and a restart, under a new pid', async () => {
    await psql(server, 'CREATE TABLE kept (n int); INSERT INTO kept VALUES (42)');
    const before = server.pid;
    await server.stop('immediate');
    expect(() => process.kill(before, 0)).toThrow();
    await expect(psql(server, 'SELECT 1')).rejects.toThrow();
    await server.restart();
    expect(server.pid).not.toBe(before);
    expect(await psql(server, 'SELECT n FROM kept')).toBe('42');
  });
});
