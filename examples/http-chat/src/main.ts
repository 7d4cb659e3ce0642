import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedisServer } from '@ctx/redis-test-server';
import { Redis } from 'ioredis';
import { createChatAgent } from './chat-agent.js';
import { createChatServer } from './chat-server.js';
import { type Answer, chatApi, messagesOf } from './http-client.js';
import { offlineModel } from './offline-model.js';

// REDIS_URL: your Redis (keys under `http-chat:`); otherwise a redis-server is started on 127.0.0.1 and stopped after.
// --serve keeps the server listening (on PORT, default 3000) instead of running the walk-through.
const dir = process.env.REDIS_URL ? undefined : mkdtempSync(join(tmpdir(), 'ctx-http-chat-'));
const redisServer = dir ? await startRedisServer({ dir }) : undefined;
const redis = redisServer ? new Redis({ host: redisServer.host, port: redisServer.port }) : new Redis(process.env.REDIS_URL!);
const serve = process.argv.includes('--serve');
const server = createChatServer({ agent: createChatAgent({ redis, client: offlineModel() }) });
await new Promise<void>((resolve) => server.listen(serve ? Number(process.env.PORT ?? 3000) : 0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
console.log(`Chat server: ${url} (Redis ${redisServer ? `127.0.0.1:${redisServer.port}, started for this demo` : 'REDIS_URL'})`);

const shutdown = async () => {
  await new Promise((resolve) => server.close(resolve));
  redis.disconnect();
  await redisServer?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
};

if (serve) {
  console.log('Listening; try: curl -N -H "x-user-id: ada" -X POST', `${url}/conversations`);
  process.once('SIGINT', () => void shutdown());
} else {
  try {
    await walkThrough(url);
  } finally {
    await shutdown();
  }
}

/** A page's life against the server, printed request by request. */
async function walkThrough(base: string): Promise<void> {
  const ada = chatApi(base, 'ada');
  const bob = chatApi(base, 'bob');
  const show = (what: string, answer: Answer, extra = '') => {
    const text = answer.events
      .filter((e) => e.event === 'text')
      .map((e) => e.data.text)
      .join('');
    console.log(`${what} -> ${answer.status}${text ? `: "${text}"` : ''}${extra}`);
  };

  const chat = await ada.create('Dinner plans');
  console.log(`POST /conversations (ada) -> 201 ${chat}`);
  show('POST a message, streamed', await ada.send(chat, { id: randomUUID(), text: "What's the weather in Lima?" }));

  // A double submit: the page sends the same message twice at once. One turn, stored once.
  const twice = { id: randomUUID(), text: 'Do you have vegetarian dishes?' };
  const [first, second] = await Promise.all([ada.send(chat, twice), ada.send(chat, twice)]);
  show('POST the same message twice at once (1)', first);
  show('POST the same message twice at once (2)', second);

  // A tool that waits for the user's approval.
  const booking = await ada.send(chat, { id: randomUUID(), text: 'Book a table for 4, please.' });
  const waiting = booking.body.pendingApprovals as { callId: string; toolName: string }[];
  show('POST a message that needs approval', booking, `, waiting: ${waiting.map((w) => w.toolName).join(', ')}`);
  show('POST /approvals', await ada.approve(chat, [{ callId: waiting[0]!.callId, approved: true }]));

  // What the page shows after a reload.
  const history = messagesOf(await ada.get(chat));
  console.log(`GET the conversation -> ${history.length} messages:`);
  for (const m of history) console.log(`  ${m.role}: ${m.toolCalls ? `(calls ${m.toolCalls.map((c) => c.name).join(', ')})` : m.text}`);

  // Another user, the same conversation id: as if it did not exist.
  show("GET ada's conversation as bob", await bob.get(chat));
  show("POST to ada's conversation as bob", await bob.send(chat, { id: randomUUID(), text: 'hi' }));
  // A 300 KB paste: over the agent's limit, refused before the model or Redis sees it.
  const paste = await ada.send(chat, { id: randomUUID(), text: 'x'.repeat(300 * 1024) });
  const refusal = paste.body.error as { type: string; message: string };
  show('POST a 300 KB paste', paste, ` ${refusal.type}: ${refusal.message}`);
  // A 2 MB body: refused by the server before it is read.
  show('POST a 2 MB body', await ada.sendRaw(chat, JSON.stringify({ id: 'big', text: 'x'.repeat(2 * 1024 * 1024) })));

  const listed = (await ada.list()).body.conversations as { id: string; title?: string }[];
  console.log(`GET /conversations (ada) -> ${listed.map((c) => c.title).join(', ')}`);
  console.log(`DELETE /me (ada) -> ${JSON.stringify((await ada.removeMe()).body)}`);
  show('GET the conversation after the delete', await ada.get(chat));
}
