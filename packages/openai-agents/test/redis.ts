import { Redis } from 'ioredis';
import { afterAll, inject } from 'vitest';

const clients: Redis[] = [];
afterAll(async () => {
  await Promise.all(clients.splice(0).map((c) => c.quit().catch(() => c.disconnect())));
});

/** A client of the redis-server the global setup started on 127.0.0.1, closed after the file. */
export function redisClient(): Redis {
  const client = new Redis({ host: '127.0.0.1', port: inject('redisPort'), maxRetriesPerRequest: 1, commandTimeout: 5000 });
  clients.push(client);
  return client;
}

/** A unique key prefix per call, so test files sharing the server never meet. */
export function uniquePrefix(name: string): string {
  return `t-${name}-${Math.random().toString(36).slice(2, 8)}`;
}
