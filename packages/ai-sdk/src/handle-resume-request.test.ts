import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import {
  type Agent,
  type ChatClient,
  type ChatOptions,
  type ContextProvider,
  createAgent,
  InMemorySessionStore,
  InvalidInputError,
  type SessionStore,
  InMemoryStreamStore,
  Message,
  type StreamStore,
} from '@ctx/core';
import * as ai6 from 'ai';
import * as ai5 from 'ai-v5';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { handleChatRequest } from './handle-chat-request.js';
import { type HandleResumeRequestOptions, handleResumeRequest, runningTurnInput } from './handle-resume-request.js';
import { handleStopRequest } from './handle-stop-request.js';
import type { UIMessage, UIMessageChunk } from './ui-message.js';

/** The client side of each AI SDK major: its HTTP transport and its message reader. */
interface ClientSdk {
  DefaultChatTransport: typeof ai6.DefaultChatTransport;
  readUIMessageStream: typeof ai6.readUIMessageStream;
}

// ai 7 declares Node >= 22, yet its client side (transport, reader) runs on Node 20 too.
const SDKS: [string, () => Promise<ClientSdk>][] = [
  ['ai 5', async () => ai5 as unknown as ClientSdk],
  ['ai 6', async () => ai6],
  ['ai 7', async () => (await import('ai-v7')) as unknown as ClientSdk],
];

/**
 * A model that says `words` one by one, each once `release` lets it (so a test knows how much was
 * said), and fails with the abort reason when its call is aborted; `calls` counts its calls.
 */
function gatedModel(words: string[]) {
  let released = 0;
  let wake: (() => void) | undefined;
  const stats = { calls: 0 };
  const client: ChatClient = {
    specificationVersion: 'v1',
    provider: 'test',
    modelId: 'gated',
    getResponse: () => Promise.reject(new Error('only streams')),
    async *getStreamingResponse(_messages, options: ChatOptions) {
      stats.calls++;
      const messageId = `reply-${stats.calls}`;
      for (let i = 0; i < words.length; i++) {
        while (released <= i) {
          options.signal?.throwIfAborted();
          await new Promise<void>((resolve) => {
            wake = resolve;
            options.signal?.addEventListener('abort', () => resolve(), { once: true });
          });
        }
        options.signal?.throwIfAborted();
        yield { messageId, role: 'assistant', contents: [{ type: 'text', text: words[i]! }] };
      }
      yield { contents: [], finishReason: 'stop' };
    },
  };
  const release = (count = words.length) => {
    released = count;
    wake?.();
  };
  return { client, stats, release };
}

const userMessage = (id: string, text: string): UIMessage => ({ id, role: 'user', parts: [{ type: 'text', text }] });

/** Writes a web `Response` to a node:http response; a page that goes away cancels the body. */
async function send(web: Response, response: ServerResponse): Promise<void> {
  const headers: Record<string, string> = {};
  web.headers.forEach((value, name) => {
    headers[name] = value;
  });
  response.writeHead(web.status, headers);
  if (!web.body) return void response.end();
  const reader = web.body.getReader();
  response.once('close', () => {
    if (!response.writableFinished) reader.cancel().catch(() => {});
  });
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    response.write(value);
  }
  response.end();
}

function webRequest(request: IncomingMessage): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    for (const item of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, item);
  }
  const hasBody = request.method === 'POST';
  return new Request(`http://127.0.0.1${request.url ?? '/'}`, {
    method: request.method ?? 'GET',
    headers,
    ...(hasBody ? { body: Readable.toWeb(request) as ReadableStream<Uint8Array>, duplex: 'half' } : {}),
  } as RequestInit);
}

/** The README's three routes on node:http at 127.0.0.1; the user is the `x-user-id` header (the app's authentication). */
async function serve(
  agent: Agent,
  streams: StreamStore,
  resumeOptions: Pick<HandleResumeRequestOptions, 'onError'> = {},
): Promise<{ base: string; server: Server }> {
  const server = createServer((request, response) => {
    const [, id, action] = /^\/api\/chat\/([^/]+)(?:\/(stream|stop))?$/.exec(request.url ?? '') ?? [];
    if (id === undefined) return void response.writeHead(404).end();
    const options = { agent, sessionId: decodeURIComponent(id), userId: String(request.headers['x-user-id']), streams };
    const answer =
      request.method === 'GET' && action === 'stream'
        ? handleResumeRequest(webRequest(request), { ...options, ...resumeOptions })
        : request.method === 'POST' && action === 'stop'
          ? handleStopRequest(webRequest(request), options)
          : request.method === 'POST' && action === undefined
            ? handleChatRequest(webRequest(request), options)
            : Promise.resolve(new Response(null, { status: 404 }));
    answer.then((web) => send(web, response)).catch(() => response.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** The chunks of a UI message stream response body. */
function chunksOf(sse: string): UIMessageChunk[] {
  return sse
    .split('\n')
    .filter((line) => line.startsWith('data: {'))
    .map((line) => JSON.parse(line.slice('data: '.length)) as UIMessageChunk);
}

const textOf = (message: UIMessage | undefined) =>
  (message?.parts ?? []).map((p) => (p.type === 'text' ? (p as { text: string }).text : '')).join('');

describe.each(SDKS)('resumable turns over HTTP, useChat on %s', (_name, load) => {
  let server: Server;
  let base: string;
  let agent: Agent;
  let streams: InMemoryStreamStore;
  let model: ReturnType<typeof gatedModel>;
  const words = ['One ', 'two ', 'three ', 'four.'];

  beforeEach(async () => {
    model = gatedModel(words);
    streams = new InMemoryStreamStore();
    agent = createAgent({ client: model.client, sessionStore: new InMemorySessionStore() });
    ({ base, server } = await serve(agent, streams));
  });
  afterEach(async () => {
    model.release();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  /** The page's transport: sends only the new message to `/api/chat/:id`, resumes at `/api/chat/:id/stream`. */
  async function transportFor(userId: string) {
    const sdk = await load();
    const transport = new sdk.DefaultChatTransport({
      api: `${base}/api/chat`,
      headers: { 'x-user-id': userId },
      prepareSendMessagesRequest: ({ id, messages }: { id: string; messages: unknown[] }) => ({
        api: `${base}/api/chat/${id}`,
        body: { messages: messages.slice(-1) },
      }),
    } as never) as unknown as {
      sendMessages(options: unknown): Promise<ReadableStream>;
      reconnectToStream(options: unknown): Promise<ReadableStream | null>;
    };
    /** Reads a stream as the page does, to its last message snapshot. */
    const read = async (stream: ReadableStream) => {
      let last: UIMessage | undefined;
      for await (const snapshot of sdk.readUIMessageStream({ stream: stream as never })) last = snapshot as unknown as UIMessage;
      return last;
    };
    return {
      send: (chatId: string, message: UIMessage) =>
        transport.sendMessages({ chatId, messages: [message], abortSignal: undefined, trigger: 'submit-message', messageId: undefined }),
      resume: (chatId: string) => transport.reconnectToStream({ chatId }),
      read,
    };
  }

  const post = (chatId: string, userId: string, message: UIMessage) =>
    fetch(`${base}/api/chat/${chatId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user-id': userId },
      body: JSON.stringify({ messages: [message] }),
    });

  it('a reload mid-reply replays the turn from its first chunk and follows it live; two resumes at once each get the whole reply, with the stored id', async () => {
    const page = await transportFor('ann');
    model.release(2);
    const first = await page.send('c1', userMessage('u-1', 'Count.'));
    // The reloaded page gets the running turn's question too (the history stores it when the turn ends).
    expect(await runningTurnInput(streams, 'c1')).toEqual(userMessage('u-1', 'Count.'));
    const reloads = await Promise.all([page.resume('c1'), page.resume('c1')]);
    expect(reloads.every((r) => r !== null)).toBe(true);
    const reads = [first, ...(reloads as ReadableStream[])].map((stream) => page.read(stream));
    model.release();
    const replies = await Promise.all(reads);
    const stored = await agent.getHistory((await agent.getSession('c1', { userId: 'ann' }))!);
    expect(stored.map((m) => [m.role, Message.text(m)])).toEqual([
      ['user', 'Count.'],
      ['assistant', 'One two three four.'],
    ]);
    for (const reply of replies) {
      expect(textOf(reply)).toBe('One two three four.');
      expect(reply!.id).toBe(stored[1]!.id);
    }
    expect(model.stats.calls).toBe(1);
    expect(await runningTurnInput(streams, 'c1')).toBeUndefined();
  });

  it('a page that goes away leaves the turn running; a resume after it ended answers with the stored reply, 204 when none is kept', async () => {
    const page = await transportFor('ann');
    model.release(1);
    const gone = await post('c1', 'ann', userMessage('u-1', 'Count.'));
    await gone.body!.cancel();
    const reload = await page.resume('c1');
    model.release();
    const reply = await page.read(reload!);
    const stored = await agent.getHistory((await agent.getSession('c1', { userId: 'ann' }))!);
    expect(stored.map((m) => Message.text(m))).toEqual(['Count.', 'One two three four.']);
    // After the turn: the same reply, once, under the stored id (the page replaces its stored copy by that id).
    const again = await page.read((await page.resume('c1'))!);
    expect([textOf(reply), reply!.id]).toEqual(['One two three four.', stored[1]!.id]);
    expect([textOf(again), again!.id]).toEqual(['One two three four.', stored[1]!.id]);
    expect(model.stats.calls).toBe(1);
    // A conversation without a kept stream, and one not stored: 204, which the transport reads as nothing to resume.
    await agent.saveSession(agent.createSession({ sessionId: 'c2', userId: 'ann' }));
    expect(await page.resume('c2')).toBeNull();
    expect(await page.resume('c-none')).toBeNull();
  });

  it("refuses another user's conversation with the POST route's 404 body", async () => {
    model.release();
    await (await post('c1', 'ann', userMessage('u-1', 'Count.'))).text();
    const eve = await fetch(`${base}/api/chat/c1/stream`, { headers: { 'x-user-id': 'eve' } });
    const posted = await post('c1', 'eve', userMessage('e-1', 'Hi'));
    expect([eve.status, posted.status]).toEqual([404, 404]);
    const body = await eve.json();
    expect(body).toEqual(await posted.json());
    expect(body).toEqual({ error: { type: 'NotFound', message: expect.stringMatching(/No such conversation/) } });
    const stop = await fetch(`${base}/api/chat/c1/stop`, { method: 'POST', headers: { 'x-user-id': 'eve' } });
    expect([stop.status, await stop.json()]).toEqual([404, body]);
    const page = await transportFor('eve');
    await expect(page.resume('c1')).rejects.toThrow(/No such conversation/);
  });

  it('a double submit joins the running turn’s stream: the model is called once, both pages get the whole reply', async () => {
    const page = await transportFor('ann');
    model.release(1);
    const message = userMessage('u-1', 'Count.');
    const streams = await Promise.all([page.send('c1', message), page.send('c1', message)]);
    const reads = streams.map((stream) => page.read(stream));
    model.release();
    const replies = await Promise.all(reads);
    expect(replies.map(textOf)).toEqual(['One two three four.', 'One two three four.']);
    expect(replies[0]!.id).toBe(replies[1]!.id);
    expect(model.stats.calls).toBe(1);
    const stored = await agent.getHistory((await agent.getSession('c1', { userId: 'ann' }))!);
    expect(stored.map((m) => Message.text(m))).toEqual(['Count.', 'One two three four.']);
  });

  it('a message of another turn while one streams is a 409 with Retry-After; nothing of it runs', async () => {
    model.release(1);
    const running = await post('c1', 'ann', userMessage('u-1', 'Count.'));
    const other = await post('c1', 'ann', userMessage('u-2', 'Something else.'));
    expect([other.status, other.headers.get('retry-after')]).toEqual([409, '1']);
    expect((await other.json()).error).toMatchObject({ type: 'ConcurrencyError', turnRunning: true });
    model.release();
    expect(chunksOf(await running.text()).at(-1)).toMatchObject({ type: 'finish' });
    const stored = await agent.getHistory((await agent.getSession('c1', { userId: 'ann' }))!);
    expect(stored.map((m) => Message.text(m))).toEqual(['Count.', 'One two three four.']);
    expect(model.stats.calls).toBe(1);
  });

  it('a stop mid-reply stores what was said, marked stopped; the pages get a finish, and a reload shows the same text', async () => {
    const page = await transportFor('ann');
    model.release(2);
    const posted = await post('c1', 'ann', userMessage('u-1', 'Count.'));
    const text = posted.text();
    const follower = await page.resume('c1');
    const stop = await fetch(`${base}/api/chat/c1/stop`, { method: 'POST', headers: { 'x-user-id': 'ann' } });
    expect([stop.status, await stop.json()]).toEqual([200, { turnId: 'u-1', status: 'stopped' }]);
    const chunks = chunksOf(await text);
    expect(chunks.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' });
    const said = chunks.map((c) => (c.type === 'text-delta' ? c.delta : '')).join('');
    expect(said).toBe('One two ');
    const stored = await agent.getHistory((await agent.getSession('c1', { userId: 'ann' }))!);
    expect(stored.map((m) => [m.role, Message.text(m)])).toEqual([
      ['user', 'Count.'],
      ['assistant', 'One two '],
    ]);
    expect(stored[1]!.metadata).toMatchObject({ stopped: true });
    expect(stored[1]!.id).toBe(chunks.find((c) => c.type === 'start')!.messageId);
    const followed = await page.read(follower!);
    const reloaded = await page.read((await page.resume('c1'))!);
    expect([textOf(followed), textOf(reloaded), reloaded!.id]).toEqual(['One two ', 'One two ', stored[1]!.id]);
    // Nothing runs any more: a second stop is a 204.
    expect((await fetch(`${base}/api/chat/c1/stop`, { method: 'POST', headers: { 'x-user-id': 'ann' } })).status).toBe(204);
    expect(model.stats.calls).toBe(1);
  });

  it('a stop before the first word answers the POST with an empty reply that finishes (no error), and stores the question', async () => {
    const posted = post('c1', 'ann', userMessage('u-1', 'Count.'));
    // The turn's stream is open once the model is called.
    for (let i = 0; i < 200 && model.stats.calls === 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    const stop = await fetch(`${base}/api/chat/c1/stop`, { method: 'POST', headers: { 'x-user-id': 'ann' } });
    expect([stop.status, await stop.json()]).toEqual([200, { turnId: 'u-1', status: 'stopped' }]);
    const answer = await posted;
    expect(answer.status).toBe(200);
    const chunks = chunksOf(await answer.text());
    expect(chunks.map((c) => c.type)).not.toContain('error');
    expect(chunks.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' });
    const stored = await agent.getHistory((await agent.getSession('c1', { userId: 'ann' }))!);
    expect(stored.map((m) => [m.role, Message.text(m)])).toEqual([['user', 'Count.']]);
    expect(model.stats.calls).toBe(1);
    // A reload shows the question and nothing to resume; the same message sent again starts a new turn.
    expect((await fetch(`${base}/api/chat/c1/stream`, { headers: { 'x-user-id': 'ann' } })).status).toBe(204);
  });

  it('a stream abandoned after its turn was stored (the store lost mid-turn) resumes as nothing, so the page keeps the stored reply', async () => {
    const streams = new InMemoryStreamStore({ leaseMs: 300 });
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    ({ base, server } = await serve(agent, streams));
    model.release();
    const input: Message = { id: 'u-1', role: 'user', contents: [{ type: 'text', text: 'Count.' }], createdAt: new Date().toISOString() };
    const run = agent.runStream([input], { sessionId: 'c1', userId: 'ann' });
    for await (const _ of run);
    await run.response;
    const stored = await agent.getHistory((await agent.getSession('c1', { userId: 'ann' }))!);
    // The producer's stream lost its lease mid-turn (a store outage), yet the turn ended and was stored.
    const opened = await streams.open({ sessionId: 'c1', turnId: 'u-1' });
    if (!opened.created) throw new Error('expected a new stream');
    await opened.writer.append([
      { type: 'start', messageId: stored[1]!.id },
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', delta: 'One ' },
    ]);
    opened.writer.release();
    const items = [];
    for await (const item of streams.read({ sessionId: 'c1', turnId: 'u-1' })) items.push(item);
    expect(items.at(-1)).toEqual({ type: 'end', status: 'abandoned' });
    const resumed = await fetch(`${base}/api/chat/c1/stream`, { headers: { 'x-user-id': 'ann' } });
    expect(resumed.status).toBe(204);
  });

  it('a resume whose page goes away before the turn’s first chunk answers 204 at once instead of waiting for it', async () => {
    await agent.saveSession(agent.createSession({ sessionId: 'c1', userId: 'ann' }));
    const opened = await streams.open({ sessionId: 'c1', turnId: 'u-1' });
    if (!opened.created) throw new Error('expected a new stream');
    const gone = new AbortController();
    const answer = handleResumeRequest(new Request(`${base}/api/chat/c1/stream`, { signal: gone.signal }), {
      agent,
      sessionId: 'c1',
      userId: 'ann',
      streams,
    });
    gone.abort();
    expect((await answer).status).toBe(204);
    await opened.writer.close('failed');
  });

  it('runningTurnInput of a turn that has no chunk yet answers undefined at once instead of waiting for its first update', async () => {
    const opened = await streams.open({ sessionId: 'c1', turnId: 'u-1' });
    if (!opened.created) throw new Error('expected a new stream');
    expect(await runningTurnInput(streams, 'c1')).toBeUndefined();
    await opened.writer.close('failed');
  });

  it('a producer that dies mid-reply: a resume returns what was produced and ends with an error chunk, never hangs', async () => {
    // A store whose producers' leases run out soon, so a dead producer is noticed within the test.
    const streams = new InMemoryStreamStore({ leaseMs: 300 });
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    ({ base, server } = await serve(agent, streams));
    await agent.saveSession(agent.createSession({ sessionId: 'c1', userId: 'ann' }));
    const opened = await streams.open({ sessionId: 'c1', turnId: 'u-1' });
    if (!opened.created) throw new Error('expected a new stream');
    await opened.writer.append([
      { type: 'start', messageId: 'reply-x' },
      { type: 'start-step' },
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', delta: 'Half a ' },
    ]);
    const page = await transportFor('ann');
    const reload = await page.resume('c1');
    opened.writer.release(); // the producing process dies: no more renewals, no close
    const chunks: UIMessageChunk[] = [];
    for await (const chunk of reload! as unknown as AsyncIterable<UIMessageChunk>) chunks.push(chunk);
    expect(chunks.map((c) => c.type)).toEqual(['start', 'start-step', 'text-start', 'text-delta', 'error']);
    expect(chunks.at(-1)).toEqual({ type: 'error', errorText: 'An error occurred.' });
    // Read again after it was abandoned: the same, at once.
    const raw = await fetch(`${base}/api/chat/c1/stream`, { headers: { 'x-user-id': 'ann' } });
    expect(chunksOf(await raw.text()).map((c) => c.type)).toEqual(['start', 'start-step', 'text-start', 'text-delta', 'error']);
  });

  /** Serves the routes again on another agent or stream store (the old server is closed). */
  async function serveAgain(
    next: { agent?: Agent; streams?: StreamStore },
    resumeOptions: Pick<HandleResumeRequestOptions, 'onError'> = {},
  ) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    if (next.agent) agent = next.agent;
    ({ base, server } = await serve(agent, next.streams ?? streams, resumeOptions));
  }

  /** Polls `check` a bounded number of times, a turn of the timers apart. */
  async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
    for (let i = 0; i < 400; i++) {
      if (await check()) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error(`Timed out waiting until ${what}.`);
  }

  it('a reply past the store’s maxBytes: a reload gets what the store took, then an error saying the reply outgrew it; a stop still stops the turn', async () => {
    const long = ['a'.repeat(300), 'b'.repeat(300), 'c'.repeat(300), 'd'];
    const big = gatedModel(long);
    const streams = new InMemoryStreamStore({ maxBytes: 700 });
    const errors: unknown[] = [];
    const onError = (error: unknown) => {
      errors.push(error);
      return error instanceof Error ? error.message : String(error);
    };
    await serveAgent(createAgent({ client: big.client, sessionStore: new InMemorySessionStore() }), streams, onError);
    big.release(2);
    const posted = await post('c1', 'ann', userMessage('u-1', 'Say a lot.'));
    const text = posted.text();
    await until(async () => (await streams.find('c1'))?.limitReached === 'maxBytes', 'the reply outgrows the store');
    expect(await streams.find('c1')).toMatchObject({ status: 'running' });
    const page = await transportFor('ann');
    const raw = await fetch(`${base}/api/chat/c1/stream`, { headers: { 'x-user-id': 'ann' } });
    const resumed = chunksOf(await raw.text());
    expect(resumed.map((c) => (c.type === 'text-delta' ? c.delta : '')).join('')).toBe(long[0]);
    expect(resumed.at(-1)).toEqual({ type: 'error', errorText: expect.stringMatching(/outgrew the stream store's maxBytes/) });
    expect(InvalidInputError.isInstance(errors[0]) && errors[0].limit).toBe('maxBytes');
    // The page's transport gets the same.
    const reload: UIMessageChunk[] = [];
    for await (const chunk of (await page.resume('c1'))! as unknown as AsyncIterable<UIMessageChunk>) reload.push(chunk);
    expect(reload.at(-1)).toEqual({
      type: 'error',
      errorText: expect.stringMatching(/outgrew the stream store's maxBytes.*raise the stream store's maxBytes/),
    });
    // The turn still stops: what was said is stored, marked stopped, and the POST gets its finish.
    const stop = await fetch(`${base}/api/chat/c1/stop`, { method: 'POST', headers: { 'x-user-id': 'ann' } });
    expect([stop.status, await stop.json()]).toEqual([200, { turnId: 'u-1', status: 'stopped' }]);
    expect(chunksOf(await text).at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' });
    const stored = await agent.getHistory((await agent.getSession('c1', { userId: 'ann' }))!);
    expect(stored.map((m) => [m.role, Message.text(m)])).toEqual([
      ['user', 'Say a lot.'],
      ['assistant', long[0]! + long[1]!],
    ]);
    expect(stored[1]!.metadata).toMatchObject({ stopped: true });
    // After the turn the history holds the whole reply: nothing to resume.
    expect((await fetch(`${base}/api/chat/c1/stream`, { headers: { 'x-user-id': 'ann' } })).status).toBe(204);
  });

  async function serveAgent(next: Agent, nextStreams: StreamStore, onError?: (error: unknown) => string) {
    await serveAgain({ agent: next, streams: nextStreams }, onError ? { onError } : {});
  }

  it('a stop stores the stopped reply without running the other providers again (their lookups ran once)', async () => {
    const calls = { rag: 0, memory: 0 };
    const rag: ContextProvider = { sourceId: 'rag', beforeRun: () => void calls.rag++ };
    const memory: ContextProvider = { sourceId: 'memory-notes', beforeRun: () => void calls.memory++ };
    await serveAgent(
      createAgent({ client: model.client, sessionStore: new InMemorySessionStore(), contextProviders: [rag, memory] }),
      streams,
    );
    model.release(2);
    const posted = await post('c1', 'ann', userMessage('u-1', 'Count.'));
    const text = posted.text();
    const stop = await fetch(`${base}/api/chat/c1/stop`, { method: 'POST', headers: { 'x-user-id': 'ann' } });
    expect([stop.status, await stop.json()]).toEqual([200, { turnId: 'u-1', status: 'stopped' }]);
    await text;
    const stored = await agent.getHistory((await agent.getSession('c1', { userId: 'ann' }))!);
    expect(stored.map((m) => Message.text(m))).toEqual(['Count.', 'One two ']);
    expect(stored[1]!.metadata).toMatchObject({ stopped: true });
    // Each looked up once, in the stopped run, and not again to store its reply.
    expect(calls).toEqual({ rag: 1, memory: 1 });
  });

  it('a stop landing while the turn is being stored changes nothing: the whole reply is stored once, and a reload shows it once', async () => {
    const inner = new InMemorySessionStore();
    let saving: (() => void) | undefined;
    let release: (() => void) | undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const saves = new Promise<void>((resolve) => (saving = resolve));
    // The turn's save (not the new conversation's first write) waits until the test lets it go.
    const set: SessionStore['set'] = async (...args) => {
      if (args[1]?.ifMatch !== null) {
        saving?.();
        await held;
        args[1]?.signal?.throwIfAborted(); // as a store on a network honours the run's signal
      }
      return inner.set(...args);
    };
    const sessionStore = new Proxy(inner, {
      get: (target, name) => {
        if (name === 'set') return set;
        const value: unknown = Reflect.get(target, name);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as SessionStore;
    await serveAgent(createAgent({ client: model.client, sessionStore }), streams);
    const page = await transportFor('ann');
    model.release();
    const posted = await post('c1', 'ann', userMessage('u-1', 'Count.'));
    const text = posted.text();
    await saves;
    const stop = fetch(`${base}/api/chat/c1/stop`, { method: 'POST', headers: { 'x-user-id': 'ann' } });
    await until(async () => (await streams.find('c1'))?.stopRequested === true, 'the stop is asked');
    release!();
    const answer = await stop;
    expect([answer.status, await answer.json()]).toEqual([200, { turnId: 'u-1', status: 'finished' }]);
    const chunks = chunksOf(await text);
    expect(chunks.at(-1)).toMatchObject({ type: 'finish' });
    expect(chunks.map((c) => (c.type === 'text-delta' ? c.delta : '')).join('')).toBe('One two three four.');
    const stored = await agent.getHistory((await agent.getSession('c1', { userId: 'ann' }))!);
    expect(stored.map((m) => [m.role, Message.text(m)])).toEqual([
      ['user', 'Count.'],
      ['assistant', 'One two three four.'],
    ]);
    expect(stored[1]!.metadata?.stopped).toBeUndefined();
    const reloaded = await page.read((await page.resume('c1'))!);
    expect([textOf(reloaded), reloaded!.id]).toEqual(['One two three four.', stored[1]!.id]);
    expect(model.stats.calls).toBe(1);
  });
});
