import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BackendUnavailableError, type ChatClient, type ChatOptions, createAgent, defineTool, Message } from '@ctx/core';
import { RedisHistoryProvider, RedisSessionStore, RedisStreamStore } from '@ctx/redis';
import { type RedisServer, startRedisServer } from '@ctx/redis-test-server';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { handleChatRequest } from './handle-chat-request.js';
import { handleResumeRequest } from './handle-resume-request.js';
import { handleStopRequest } from './handle-stop-request.js';
import type { UIMessageChunk } from './ui-message.js';

/** A model that says `words` one by one, each once `release` lets it. */
function gatedModel(words: string[]) {
  let released = 0;
  let wake: (() => void) | undefined;
  const client: ChatClient = {
    specificationVersion: 'v1',
    provider: 'test',
    modelId: 'gated',
    getResponse: () => Promise.reject(new Error('only streams')),
    async *getStreamingResponse(_messages, options: ChatOptions) {
      for (let i = 0; i < words.length; i++) {
        while (released <= i) {
          options.signal?.throwIfAborted();
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
        }
        yield { messageId: 'reply-1', role: 'assistant', contents: [{ type: 'text', text: words[i]! }] };
      }
      yield { contents: [], finishReason: 'stop' };
    },
  };
  return {
    client,
    release: (count = words.length) => {
      released = count;
      wake?.();
    },
  };
}

const chunksOf = (sse: string) =>
  sse
    .split('\n')
    .filter((line) => line.startsWith('data: {'))
    .map((line) => JSON.parse(line.slice('data: '.length)) as UIMessageChunk);
const textOf = (chunks: UIMessageChunk[]) => chunks.map((c) => (c.type === 'text-delta' ? c.delta : '')).join('');

/** Polls `check` a bounded number of times, a turn of the timers apart. */
async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`Timed out waiting until ${what}.`);
}

// A dedicated redis-server (durable: appendfsync always), which the test kills and starts again by pid.
describe('resumable turns on Redis restarted mid-stream', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ctx-ai-sdk-resume-'));
  const servers: RedisServer[] = [];
  const clients: Redis[] = [];
  const stores: RedisStreamStore[] = [];
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    for (const client of clients) client.disconnect();
    await Promise.all(servers.map((server) => server.stop()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('the turn still completes and is stored, whole; a resume after it answers with the stored reply', async () => {
    let server = await startRedisServer({ dir, durable: true });
    servers.push(server);
    const redis = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 1, commandTimeout: 5000 });
    redis.on('error', () => {}); // the outage is on purpose
    clients.push(redis);
    const streams = new RedisStreamStore({ url: `redis://127.0.0.1:${server.port}`, prefix: 'resume', timeoutMs: 1000, blockMs: 200 });
    stores.push(streams);
    const model = gatedModel(['One ', 'two ', 'three ', 'four.']);
    const agent = createAgent({
      client: model.client,
      contextProviders: [new RedisHistoryProvider({ client: redis, prefix: 'resume' })],
      sessionStore: new RedisSessionStore({ client: redis, prefix: 'resume' }),
    });
    const storeErrors: unknown[] = [];
    const request = new Request('http://127.0.0.1/api/chat/c1', {
      method: 'POST',
      body: JSON.stringify({ messages: [{ id: 'u-1', role: 'user', parts: [{ type: 'text', text: 'Count.' }] }] }),
    });
    model.release(1);
    const posted = await handleChatRequest(request, {
      agent,
      sessionId: 'c1',
      userId: 'ann',
      streams,
      onStreamStoreError: (error) => storeErrors.push(error),
    });
    const text = posted.text();

    await server.stop('SIGKILL');
    model.release(2); // said while Redis is down: its append fails, and is sent again with the next
    await until(() => storeErrors.length > 0, 'an append fails in the outage');
    server = await startRedisServer({ dir, durable: true, port: server.port });
    servers.push(server);
    await until(
      () =>
        streams.find('c1').then(
          () => true,
          () => false,
        ),
      'Redis answers again',
    );
    model.release();

    const chunks = chunksOf(await text);
    expect(textOf(chunks)).toBe('One two three four.');
    expect(chunks.at(-1)).toMatchObject({ type: 'finish' });
    expect(storeErrors.every((error) => BackendUnavailableError.isInstance(error))).toBe(true);
    const stored = await agent.getHistory((await agent.getSession('c1', { userId: 'ann' }))!);
    expect(stored.map((m) => [m.role, Message.text(m)])).toEqual([
      ['user', 'Count.'],
      ['assistant', 'One two three four.'],
    ]);
    const resumed = await handleResumeRequest(new Request('http://127.0.0.1/api/chat/c1/stream'), {
      agent,
      sessionId: 'c1',
      userId: 'ann',
      streams,
    });
    expect(resumed.status).toBe(200);
    const replay = chunksOf(await resumed.text());
    expect(replay).toEqual(chunks);
    expect(replay[0]).toEqual({ type: 'start', messageId: stored[1]!.id });
  });

  it('a stop asked on another instance during a long tool call aborts the tool at once; the stop answers with the stored stopped reply', async () => {
    const server = await startRedisServer({ dir: mkdtempSync(join(tmpdir(), 'ctx-ai-sdk-stop-')) });
    servers.push(server);
    const url = `redis://127.0.0.1:${server.port}`;
    // Two instances of the app: the turn runs on the first, the stop request lands on the second.
    const [first, second] = [0, 1].map(() => new RedisStreamStore({ url, prefix: 'stop' }));
    stores.push(first!, second!);
    let started: (() => void) | undefined;
    const running = new Promise<void>((resolve) => (started = resolve));
    const tool = { aborted: false };
    // A tool that runs until its signal aborts.
    const slow = defineTool({
      name: 'slow_lookup',
      parameters: { type: 'object', properties: {} },
      execute: (_args: unknown, { signal }) =>
        new Promise((_resolve, reject) => {
          started?.();
          signal.addEventListener('abort', () => {
            tool.aborted = true;
            reject(signal.reason);
          });
        }),
    });
    let calls = 0;
    const client: ChatClient = {
      specificationVersion: 'v1',
      provider: 'test',
      modelId: 'tool-caller',
      getResponse: () => Promise.reject(new Error('only streams')),
      async *getStreamingResponse() {
        calls++;
        yield { messageId: 'reply-1', role: 'assistant', contents: [{ type: 'text', text: 'Looking it up.' }] };
        yield {
          messageId: 'reply-1',
          role: 'assistant',
          contents: [{ type: 'function-call', callId: 'call-1', name: 'slow_lookup', arguments: '{}' }],
        };
        yield { contents: [], finishReason: 'tool-calls' };
      },
    };
    const redis = new Redis({ host: '127.0.0.1', port: server.port });
    clients.push(redis);
    const agent = createAgent({
      client,
      tools: [slow],
      sessionStore: new RedisSessionStore({ client: redis, prefix: 'stop' }),
      contextProviders: [new RedisHistoryProvider({ client: redis, prefix: 'stop' })],
    });
    const request = new Request('http://127.0.0.1/api/chat/c1', {
      method: 'POST',
      body: JSON.stringify({ messages: [{ id: 'u-1', role: 'user', parts: [{ type: 'text', text: 'Look it up.' }] }] }),
    });
    const posted = await handleChatRequest(request, { agent, sessionId: 'c1', userId: 'ann', streams: first! });
    const text = posted.text();
    await running;
    // Before the turn ends (its tool waits for its signal), the route answers 202 after waitMs.
    const stop = await handleStopRequest(new Request('http://127.0.0.1/api/chat/c1/stop', { method: 'POST' }), {
      agent,
      sessionId: 'c1',
      userId: 'ann',
      streams: second!,
      waitMs: 5000,
    });
    expect([stop.status, await stop.json()]).toEqual([200, { turnId: 'u-1', status: 'stopped' }]);
    expect(tool.aborted).toBe(true);
    expect(chunksOf(await text).at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' });
    const stored = await agent.getHistory((await agent.getSession('c1', { userId: 'ann' }))!);
    expect(stored.map((m) => [m.role, Message.text(m)])).toEqual([
      ['user', 'Look it up.'],
      ['assistant', 'Looking it up.'],
    ]);
    expect(stored[1]!.metadata).toMatchObject({ stopped: true });
    expect(calls).toBe(1);
  });
});
