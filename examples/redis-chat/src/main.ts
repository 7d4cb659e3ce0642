import { randomUUID } from 'node:crypto';
import { runConversation } from './conversation.js';
import { startLocalRedis } from './redis-server.js';

// REDIS_URL: your Redis; otherwise a redis-server is started on 127.0.0.1 for the demo and stopped after it.
const local = process.env.REDIS_URL ? undefined : await startLocalRedis();
const redisUrl = process.env.REDIS_URL ?? local!.url;
const sessionId = `redis-chat-${randomUUID()}`;
console.log(`Redis: ${local ? `${redisUrl} (started for this demo)` : 'REDIS_URL'}; session ${sessionId}`);
console.log(process.env.OPENAI_API_KEY ? 'Model: OpenAI through @ctx/openai' : 'Model: offline (answers only from what it is sent)');
try {
  await runConversation({ redisUrl, sessionId, print: (line) => console.log(line) });
} finally {
  await local?.stop();
}
