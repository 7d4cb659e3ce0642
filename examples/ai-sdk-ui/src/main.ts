import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedisServer } from '@ctx/redis-test-server';
import { RedisStreamStore } from '@ctx/redis';
import { Redis } from 'ioredis';
import { chatTools, createChatAgent } from './chat-agent.js';
import { createChatServer } from './chat-server.js';
import { offlineModel } from './offline-model.js';
import { buildPageScript } from './page-bundle.js';

// REDIS_URL: your Redis (keys under `ai-sdk-ui:`); otherwise a redis-server is started on 127.0.0.1 and stopped on Ctrl-C (or SIGTERM).
// PORT: where the page is served (default 3000, on 127.0.0.1).
const dir = process.env.REDIS_URL ? undefined : mkdtempSync(join(tmpdir(), 'ctx-ai-sdk-ui-'));
const redisServer = dir ? await startRedisServer({ dir }) : undefined;
const redis = redisServer ? new Redis({ host: redisServer.host, port: redisServer.port }) : new Redis(process.env.REDIS_URL!);
const server = createChatServer({
  agent: createChatAgent({ redis, client: offlineModel() }),
  tools: chatTools,
  pageScript: await buildPageScript(),
  // In Redis too, so any instance behind a load balancer serves a resume or a stop.
  streams: new RedisStreamStore({ client: redis, prefix: 'ai-sdk-ui' }),
});
await new Promise<void>((resolve) => server.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', resolve));
console.log(`Chat page: http://127.0.0.1:${(server.address() as AddressInfo).port}/ (Ctrl-C stops it)`);

const shutdown = async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  redis.disconnect();
  await redisServer?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
};
process.once('SIGINT', shutdown);
process.once('SIGTERM', shutdown);
