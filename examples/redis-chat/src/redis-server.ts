import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

/** A redis-server this process started on 127.0.0.1. */
export interface LocalRedis {
  url: string;
  /** Stops it by its pid and removes its directory. */
  stop(): Promise<void>;
}

/** Starts `redis-server` on a free loopback port, without persistence, and waits until it answers PING. */
export async function startLocalRedis(): Promise<LocalRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'ctx-redis-chat-'));
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
    stdio: 'ignore',
  });
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  const failed = new Promise<never>((_, reject) =>
    server.once('error', (error) => reject(new Error(`Could not start redis-server (is it installed?): ${error.message}`))),
  );
  const url = `redis://127.0.0.1:${port}`;
  const stop = async () => {
    if (server.exitCode === null) process.kill(server.pid!, 'SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await Promise.race([waitForPing(url), failed]);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, stop };
}

async function waitForPing(url: string): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.ping();
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      client.disconnect();
    }
  }
  throw new Error(`redis-server at ${url} did not answer PING within 5 s`);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}
