import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import {
  type Agent,
  type AgentOptions,
  BackendUnavailableError,
  type ChatClient,
  createAgent,
  InMemorySessionStore,
  InMemoryStreamStore,
  Message,
  type SessionStore,
  type StreamStore,
  type StreamWriter,
} from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import * as ai6 from 'ai';
import * as ai5 from 'ai-v5';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiSdkChatClient } from './ai-sdk-chat-client.js';
import { DEFAULT_MAX_BODY_BYTES, handleChatRequest, type HandleChatRequestOptions } from './handle-chat-request.js';
import { scriptedModel, type Version } from './test-helpers.js';
import type { UIMessage } from './ui-message.js';

/** The client side of each AI SDK major: its HTTP transport and its message reader. */
interface ClientSdk {
  DefaultChatTransport: typeof ai6.DefaultChatTransport;
  readUIMessageStream: typeof ai6.readUIMessageStream;
}

/** A `useChat` request body as the page sends it (`messages`, here only the new one). */
function userMessage(id: string, text: string): UIMessage {
  return { id, role: 'user', parts: [{ type: 'text', text }] };
}

/** Writes a web `Response` to a node:http response. */
async function send(web: Response, response: ServerResponse): Promise<void> {
  const headers: Record<string, string> = {};
  web.headers.forEach((value, name) => {
    headers[name] = value;
  });
  response.writeHead(web.status, headers);
  if (web.body) for await (const chunk of web.body as unknown as AsyncIterable<Uint8Array>) response.write(chunk);
  response.end();
}

/** A node:http request as a web `Request`. */
function webRequest(request: IncomingMessage): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    for (const item of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, item);
  }
  const hasBody = request.method !== 'GET' && request.method !== 'HEAD';
  return new Request(`http://127.0.0.1${request.url ?? '/'}`, {
    method: request.method ?? 'GET',
    headers,
    ...(hasBody ? { body: Readable.toWeb(request) as ReadableStream<Uint8Array>, duplex: 'half' } : {}),
  } as RequestInit);
}

/**
 * A server with the README's route, `POST /api/chat/:id`, on node:http at 127.0.0.1, port 0. The
 * user is the `x-user-id` header (the app's authentication in a real server).
 */
async function serve(agent: Agent, extra: Partial<HandleChatRequestOptions> = {}): Promise<{ base: string; server: Server }> {
  const server = createServer((request, response) => {
    const id = /^\/api\/chat\/([^/]+)$/.exec(request.url ?? '')?.[1];
    if (request.method !== 'POST' || id === undefined) return void response.writeHead(404).end();
    const userId = String(request.headers['x-user-id']);
    handleChatRequest(webRequest(request), { agent, sessionId: decodeURIComponent(id), userId, ...extra })
      .then((web) => send(web, response))
      .catch(() => response.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** What a refusal must be: its status, a JSON body, and nothing of the stream protocol. */
async function expectRefusal(response: Response, status: number): Promise<{ error: Record<string, unknown> }> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(response.headers.get('x-vercel-ai-ui-message-stream')).toBeNull();
  const text = await response.text();
  expect(text).not.toMatch(/^data:/m);
  return JSON.parse(text) as { error: Record<string, unknown> };
}

/** The text a UI message stream's `text-delta` chunks carry. */
function textOf(sse: string): string {
  return sse
    .split('\n')
    .filter((line) => line.startsWith('data: {'))
    .map((line) => JSON.parse(line.slice('data: '.length)) as { type: string; delta?: string })
    .filter((chunk) => chunk.type === 'text-delta')
    .map((chunk) => chunk.delta)
    .join('');
}

const post = (base: string, id: string, userId: string, body: string) =>
  fetch(`${base}/api/chat/${encodeURIComponent(id)}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-user-id': userId },
    body,
  });

// ai 7 declares Node >= 22, yet its client side (transport, reader) runs on Node 20 too: all three run everywhere.
const SDKS: [string, Version, () => Promise<ClientSdk>][] = [
  ['ai 5', 'v2', async () => ai5 as unknown as ClientSdk],
  ['ai 6', 'v3', async () => ai6],
  ['ai 7', 'v4', async () => (await import('ai-v7')) as unknown as ClientSdk],
];

describe.each(SDKS)('handleChatRequest over HTTP, useChat on %s', (_name, version, load) => {
  let agent: Agent;
  let base: string;
  let server: Server;
  /** The status of every response the page's transport got. */
  const statuses: number[] = [];

  beforeAll(async () => {
    const { model } = scriptedModel(version, [{ text: 'Hello, Ann.' }, { text: 'Noted.' }, { text: 'Again.' }]);
    agent = createAgent({
      client: aiSdkChatClient(model),
      sessionStore: new InMemorySessionStore(),
      limits: { maxMessageBytes: 256 * 1024 },
    });
    ({ base, server } = await serve(agent));
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  /** Sends `message` as the page's `useChat` does (`DefaultChatTransport`, real fetch) and reads the reply. */
  async function say(sdk: ClientSdk, chatId: string, userId: string, message: UIMessage): Promise<UIMessage> {
    const transport = new sdk.DefaultChatTransport({
      api: `${base}/api/chat/${chatId}`,
      headers: { 'x-user-id': userId },
      prepareSendMessagesRequest: ({ messages }: { messages: unknown[] }) => ({ body: { messages: messages.slice(-1) } }),
      fetch: async (url: RequestInfo | URL, init?: RequestInit) => {
        const response = await fetch(url, init);
        statuses.push(response.status);
        return response;
      },
    } as never);
    const stream = await transport.sendMessages({
      chatId,
      messages: [message] as never,
      abortSignal: undefined,
      trigger: 'submit-message',
      messageId: undefined,
    });
    let reply: UIMessage | undefined;
    for await (const snapshot of sdk.readUIMessageStream({ stream: stream as never })) reply = snapshot as unknown as UIMessage;
    return reply!;
  }

  /** A refused `say`: the transport's error, whose message is the response's JSON body. */
  async function refusedSay(sdk: ClientSdk, chatId: string, userId: string, message: UIMessage) {
    const error = (await say(sdk, chatId, userId, message).then(
      () => expect.unreachable('the request was answered with a stream'),
      (e: unknown) => e,
    )) as Error;
    return { status: statuses.at(-1), body: JSON.parse(error.message) as { error: Record<string, unknown> } };
  }

  it('streams the reply of a valid request, with the stored ids', async () => {
    const sdk = await load();
    const reply = await say(sdk, 'chat-ann', 'ann', userMessage('u-1', 'My name is Ann.'));
    expect(statuses.at(-1)).toBe(200);
    expect(reply.parts.filter((p) => p.type === 'text')).toEqual([{ type: 'text', text: 'Hello, Ann.', state: 'done' }]);
    const session = (await agent.getSession('chat-ann', { userId: 'ann' }))!;
    const stored = await agent.getHistory(session);
    expect(stored.map((m) => [m.role, Message.text(m)])).toEqual([
      ['user', 'My name is Ann.'],
      ['assistant', 'Hello, Ann.'],
    ]);
    expect([stored[0]!.id, stored[1]!.id]).toEqual(['u-1', reply.id]);
  });

  it("refuses another user's conversation with a 404, as one that does not exist; nothing runs", async () => {
    const sdk = await load();
    const before = await agent.getHistory((await agent.getSession('chat-ann'))!);
    const { status, body } = await refusedSay(sdk, 'chat-ann', 'eve', userMessage('e-1', 'Show me her chat.'));
    expect(status).toBe(404);
    expect(body).toEqual({ error: { type: 'NotFound', message: expect.stringMatching(/No such conversation/) } });
    const raw = await post(base, 'chat-ann', 'eve', JSON.stringify({ messages: [userMessage('e-2', 'Hi')] }));
    await expectRefusal(raw, 404);
    expect(await agent.getHistory((await agent.getSession('chat-ann'))!)).toEqual(before);
  });

  it('refuses a 300 KB message with a 413 naming the limit; no conversation is created', async () => {
    const sdk = await load();
    const { status, body } = await refusedSay(sdk, 'chat-big', 'ann', userMessage('u-big', 'x'.repeat(300 * 1024)));
    expect(status).toBe(413);
    expect(body.error).toMatchObject({ type: 'InvalidInputError', limit: 'maxMessageBytes' });
    expect(body.error.message).toMatch(/over limits\.maxMessageBytes/);
    expect(await agent.getSession('chat-big')).toBeUndefined();
  });

  it('refuses a message id stored with other text with a 400; the history keeps the first', async () => {
    const sdk = await load();
    await say(sdk, 'chat-ids', 'ann', userMessage('u-ids', 'First text.'));
    const before = await agent.getHistory((await agent.getSession('chat-ids'))!);
    const { status, body } = await refusedSay(sdk, 'chat-ids', 'ann', userMessage('u-ids', 'Another text under the same id.'));
    expect(status).toBe(400);
    expect(body.error).toMatchObject({
      type: 'InvalidInputError',
      message: expect.stringMatching(/"u-ids" has the id of another message/),
    });
    expect(await agent.getHistory((await agent.getSession('chat-ids'))!)).toEqual(before);
  });

  it('refuses a body that is not JSON, or not a useChat request, with a 400', async () => {
    const notJson = await expectRefusal(await post(base, 'chat-json', 'ann', '{"messages": [oops'), 400);
    expect(notJson).toEqual({ error: { type: 'InvalidInputError', message: expect.stringMatching(/body is not JSON/) } });
    const empty = await expectRefusal(await post(base, 'chat-json', 'ann', ''), 400);
    expect(empty.error.message).toMatch(/body is empty/);
    const array = await expectRefusal(await post(base, 'chat-json', 'ann', '[]'), 400);
    expect(array.error.message).toMatch(/not a JSON object/);
    const noMessages = await expectRefusal(await post(base, 'chat-json', 'ann', '{"text":"hi"}'), 400);
    expect(noMessages.error.message).toMatch(/messages must be a non-empty array/);
    expect(await agent.getSession('chat-json')).toBeUndefined();
  });
});

describe('handleChatRequest', () => {
  const request = (body: BodyInit | null, headers: Record<string, string> = {}) =>
    new Request('http://127.0.0.1/api/chat/c1', { method: 'POST', body, headers, duplex: 'half' } as RequestInit);
  const json = (messages: unknown) => request(JSON.stringify({ messages }));
  const agentWith = (options: Partial<AgentOptions> = {}) =>
    createAgent({ client: new ScriptedChatClient({ replies: ['Hi.'] }), sessionStore: new InMemorySessionStore(), ...options });

  it('refuses an option it does not know, naming it, before it reads the request', async () => {
    const agent = agentWith();
    await expect(
      handleChatRequest(json([userMessage('u-1', 'Hi')]), { agent, sessionId: 'c1', userId: 'ann', maxBodyByte: 100 } as never),
    ).rejects.toThrow(/handleChatRequest: unknown option "maxBodyByte" \(did you mean "maxBodyBytes"\?\)/);
    expect(await agent.getSession('c1')).toBeUndefined();
  });

  it('with streams, stores the turn input with its first chunks in one append, not in an append of its own before them', async () => {
    const agent = agentWith();
    const store = new InMemoryStreamStore();
    const appends: string[][] = [];
    const streams: StreamStore = {
      specificationVersion: 'v1',
      open: async (ref, options) => {
        const opened = await store.open(ref, options);
        if (!opened.created) return opened;
        // A store without appendJson: it gets the chunks themselves.
        const { appendJson: _, ...writer } = opened.writer;
        const append: StreamWriter['append'] = (chunks, options) => {
          appends.push(chunks.map((chunk) => String((chunk as { type?: unknown }).type)));
          return writer.append(chunks, options);
        };
        return { ...opened, writer: { ...writer, append } };
      },
      find: (sessionId, options) => store.find(sessionId, options),
      read: (ref, options) => store.read(ref, options),
      requestStop: (ref, options) => store.requestStop(ref, options),
    };
    const response = await handleChatRequest(json([userMessage('u-1', 'Hi')]), { agent, sessionId: 'c1', userId: 'ann', streams });
    expect(await response.text()).toMatch(/"delta":"Hi\."/);
    expect(appends[0]?.slice(0, 2)).toEqual(['ctx-turn-input', 'start']);
    const stored = [];
    for await (const item of store.read({ sessionId: 'c1', turnId: 'u-1' })) stored.push(item);
    expect(stored[0]).toMatchObject({ type: 'chunk', index: 0, chunk: { type: 'ctx-turn-input', message: { id: 'u-1' } } });
    expect(stored.at(-1)).toEqual({ type: 'end', status: 'finished' });
  });

  it('with a store that takes JSON texts (appendJson), each chunk is serialized once: the store keeps the very texts the page is sent', async () => {
    const agent = agentWith();
    const store = new InMemoryStreamStore();
    const texts: string[] = [];
    let objectAppends = 0;
    const streams: StreamStore = {
      specificationVersion: 'v1',
      open: async (ref, options) => {
        const opened = await store.open(ref, options);
        if (!opened.created) return opened;
        const { writer } = opened;
        const appendJson: NonNullable<StreamWriter['appendJson']> = (json, options) => {
          texts.push(...json);
          return writer.appendJson!(json, options);
        };
        const append: StreamWriter['append'] = (chunks, options) => {
          objectAppends++;
          return writer.append(chunks, options);
        };
        return { ...opened, writer: { ...writer, append, appendJson } };
      },
      find: (sessionId, options) => store.find(sessionId, options),
      read: (ref, options) => store.read(ref, options),
      requestStop: (ref, options) => store.requestStop(ref, options),
    };
    const response = await handleChatRequest(json([userMessage('u-1', 'Hi')]), { agent, sessionId: 'c1', userId: 'ann', streams });
    const sent = [...(await response.text()).matchAll(/^data: (.*)$/gm)].map((match) => match[1]!).filter((data) => data !== '[DONE]');
    expect(objectAppends).toBe(0);
    expect(JSON.parse(texts[0]!)).toMatchObject({ type: 'ctx-turn-input', message: { id: 'u-1' } });
    expect(texts.slice(1)).toEqual(sent);
    expect(sent.map((data) => (JSON.parse(data) as { type: string }).type)).toContain('text-delta');
    const stored = [];
    for await (const item of store.read({ sessionId: 'c1', turnId: 'u-1' })) stored.push(item);
    expect(stored.slice(1, -1).map((item) => (item.type === 'chunk' ? JSON.stringify(item.chunk) : ''))).toEqual(sent);
    expect(stored.at(-1)).toEqual({ type: 'end', status: 'finished' });
  });

  it('refuses a conversation stored without an owner with a 404', async () => {
    const agent = agentWith();
    await agent.saveSession(agent.createSession({ sessionId: 'c1' }));
    const response = await handleChatRequest(json([userMessage('u-1', 'Hi')]), { agent, sessionId: 'c1', userId: 'ann' });
    expect((await expectRefusal(response, 404)).error.type).toBe('NotFound');
  });

  it('refuses a body over maxBodyBytes with a 413, by its content-length or as it streams, reading no further', async () => {
    const agent = agentWith();
    const declared = await handleChatRequest(request('{}', { 'content-length': String(DEFAULT_MAX_BODY_BYTES + 1) }), {
      agent,
      sessionId: 'c1',
      userId: 'ann',
    });
    expect((await expectRefusal(declared, 413)).error).toMatchObject({ type: 'InvalidInputError', limit: 'maxBodyBytes' });
    let pulled = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        if (pulled > 1000) return controller.close();
        controller.enqueue(new Uint8Array(1024).fill(32));
      },
    });
    const streamed = await handleChatRequest(request(endless), { agent, sessionId: 'c1', userId: 'ann', maxBodyBytes: 10 * 1024 });
    expect((await expectRefusal(streamed, 413)).error.message).toMatch(/at least 11264 bytes, over maxBodyBytes \(10240 bytes\)/);
    expect(pulled).toBeLessThan(20);
    expect(await agent.getSession('c1')).toBeUndefined();
  });

  it('refuses an answer to a call that does not wait with a 400', async () => {
    const agent = agentWith();
    const answer = {
      id: 'a-1',
      role: 'assistant',
      parts: [{ type: 'tool-book', toolCallId: 'call-x', state: 'approval-responded', approval: { id: 'call-x', approved: true } }],
    };
    const response = await handleChatRequest(json([answer]), { agent, sessionId: 'c1', userId: 'ann' });
    expect((await expectRefusal(response, 400)).error.message).toMatch(/call-x/);
  });

  it('answers a turn running in another process with a 409 and Retry-After; the turn is stored once', async () => {
    // Two agents on one store are two server processes; the first one's model answers when released.
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let called!: () => void;
    const modelCalled = new Promise<void>((resolve) => {
      called = resolve;
    });
    const gated: ChatClient = {
      specificationVersion: 'v1',
      provider: 'test',
      modelId: 'gated',
      getResponse: () => Promise.reject(new Error('only streams')),
      async *getStreamingResponse() {
        called();
        await released;
        yield { messageId: 'a-1', role: 'assistant', contents: [{ type: 'text', text: 'The one reply.' }] };
      },
    };
    const sessionStore = new InMemorySessionStore();
    const first = agentWith({ client: gated, sessionStore });
    const second = agentWith({ sessionStore, runningTurns: { waitMs: 0 } });
    const message = userMessage('u-1', 'Hi');
    const running = handleChatRequest(json([message]), { agent: first, sessionId: 'c1', userId: 'ann' });
    await modelCalled;
    const refused = await handleChatRequest(json([message]), { agent: second, sessionId: 'c1', userId: 'ann' });
    expect(refused.headers.get('retry-after')).toBe('1');
    expect((await expectRefusal(refused, 409)).error).toMatchObject({ type: 'ConcurrencyError', turnRunning: true, retryAfter: 1 });
    release();
    expect(textOf(await (await running).text())).toBe('The one reply.');
    const stored = await second.getHistory((await second.getSession('c1'))!);
    expect(stored.map((m) => Message.text(m))).toEqual(['Hi', 'The one reply.']);
  });

  it('a double submit on one server: both requests stream the one reply, stored once', async () => {
    const client = new ScriptedChatClient({ replies: ['First reply.', 'Second reply.'] });
    const agent = agentWith({ client });
    const message = userMessage('u-1', 'Only once');
    // Each page reads its own answer as it comes (the second one's starts once the first turn is stored).
    const answers = await Promise.all(
      [0, 1].map(async () => {
        const answer = await handleChatRequest(json([message]), { agent, sessionId: 'c1', userId: 'ann' });
        return { status: answer.status, text: await answer.text() };
      }),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    expect(answers.map((a) => textOf(a.text))).toEqual(['First reply.', 'First reply.']);
    expect(client.calls).toHaveLength(1);
    const stored = await agent.getHistory((await agent.getSession('c1'))!);
    expect(stored.map((m) => Message.text(m))).toEqual(['Only once', 'First reply.']);
  });

  it('answers a failure before the first update with its 5xx, a generic body, and onErrorResponse', async () => {
    const down = new BackendUnavailableError('openai', 'connect ECONNREFUSED 10.1.2.3:443 (key sk-secret)');
    const agent = agentWith({ client: new ScriptedChatClient({ replies: [{ error: down }] }) });
    const seen: Array<[unknown, number]> = [];
    const response = await handleChatRequest(json([userMessage('u-1', 'Hi')]), {
      agent,
      sessionId: 'c1',
      userId: 'ann',
      onErrorResponse: (error, status) => {
        seen.push([error, status]);
        throw new Error('a logger that fails changes nothing');
      },
    });
    const body = await expectRefusal(response, 503);
    expect(body.error.type).toBe('BackendUnavailableError');
    expect(JSON.stringify(body)).not.toMatch(/10\.1\.2\.3|sk-secret/);
    expect(seen).toEqual([[down, 503]]);
  });

  it('a failure after the first update is the stream’s error chunk (the headers are sent)', async () => {
    // A store whose saves after the run fail (creating the session works): the reply has streamed by then.
    const store = new InMemorySessionStore();
    const sessionStore: SessionStore = {
      specificationVersion: 'v1',
      get: (sessionId, options) => store.get(sessionId, options),
      set: async (session, options) => {
        if (options?.ifMatch !== null) throw new BackendUnavailableError('store', 'write failed');
        return store.set(session, options);
      },
      delete: (sessionId) => store.delete(sessionId),
    };
    const agent = agentWith({ sessionStore });
    const response = await handleChatRequest(json([userMessage('u-1', 'Hi')]), {
      agent,
      sessionId: 'c1',
      userId: 'ann',
      onError: () => 'Saving failed.',
    });
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toMatch(/"type":"text-delta","id":"[^"]+","delta":"Hi\."/);
    expect(text).toMatch(/"type":"error","errorText":"Saving failed\."/);
  });
});
