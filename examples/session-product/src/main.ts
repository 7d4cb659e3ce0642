import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedisServer } from '@ctx/redis-test-server';
import { Redis } from 'ioredis';
import { chooseModels } from './models.js';
import { runScenario } from './scenario.js';

// REDIS_URL: your Redis (keys under `session-product:`); otherwise a redis-server is started on 127.0.0.1 and stopped after.
const dir = process.env.REDIS_URL ? undefined : mkdtempSync(join(tmpdir(), 'ctx-session-product-'));
const server = dir ? await startRedisServer({ dir }) : undefined;
const redis = server ? new Redis({ host: server.host, port: server.port }) : new Redis(process.env.REDIS_URL!);
console.log(`Redis: ${server ? `127.0.0.1:${server.port} (started for this demo)` : 'REDIS_URL'}`);
console.log(process.env.OPENAI_API_KEY ? 'Model: OpenAI through @ctx/openai' : 'Model: offline (a scripted model)');
try {
  await runScenario({ redis, ...(await chooseModels()), print: (line) => console.log(line) });
} finally {
  redis.disconnect();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}
