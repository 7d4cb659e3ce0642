import { type Agent, type AgentSession, type ChatClient, createAgent, defineTool, Message } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import * as ai6 from 'ai';
import * as ai5 from 'ai-v5';
import { describe, expect, it } from 'vitest';
import { runInputFromUIMessages } from './run-input-from-ui-messages.js';
import type { UIApprovalMode, UIMessage, UIToolPart } from './ui-message.js';
import { DEFAULT_UI_ERROR_TEXT, toUIMessageStream, toUIMessageStreamResponse, UI_MESSAGE_STREAM_HEADERS } from './ui-message-stream.js';
import { uiMessagesFromHistory } from './ui-messages-from-history.js';

/** The client side of each AI SDK major: its HTTP transport (the real SSE parser and chunk schema) and its message reader. */
interface ClientSdk {
  DefaultChatTransport: typeof ai6.DefaultChatTransport;
  readUIMessageStream: typeof ai6.readUIMessageStream;
}

const weather = defineTool({
  name: 'weather',
  description: 'The weather in a city today.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  execute: ({ city }) => `Sunny in ${String(city)}`,
});
const bookTable = defineTool({
  name: 'book_table',
  description: 'Books a table; the user approves each booking.',
  parameters: { type: 'object', properties: { people: { type: 'number' } }, required: ['people'] },
  needsApproval: true,
  execute: ({ people }) => ({ booked: Number(people), at: '20:00' }),
});
const tools = [weather, bookTable];

/** A model that calls the weather tool, the booking tool, answers results in words, and echoes anything else. */
function model(): ChatClient {
  return new ScriptedChatClient({
    replies: (messages) => {
      const result = messages.at(-1)?.contents.find((c) => c.type === 'function-result');
      if (result?.type === 'function-result')
        return result.isError ? `Failed: ${(result.result as { error: string }).error}` : `Done: ${JSON.stringify(result.result)}`;
      const question = Message.text(messages.filter((m) => m.role === 'user').at(-1)!);
      const city = /weather in (\w+)/i.exec(question)?.[1];
      if (city) return { text: 'Let me look.', toolCalls: [{ name: 'weather', arguments: { city } }] };
      const people = /table for (\d+)/i.exec(question)?.[1];
      if (people) return { toolCalls: [{ name: 'book_table', arguments: { people: Number(people) } }] };
      return `You said: ${question}`;
    },
  });
}

/**
 * A page and its server in one process: the page holds `messages` as `useChat` does and sends them
 * through the SDK's `DefaultChatTransport`; the server answers as a route would.
 */
function chat(sdk: ClientSdk, options: { approvals: UIApprovalMode; agent?: Agent; onError?: (error: unknown) => string }) {
  const agent = options.agent ?? createAgent({ client: model(), tools });
  const session: AgentSession = agent.createSession();
  const messages: UIMessage[] = [];
  const errors: string[] = [];
  let response: Response | undefined;
  const transport = new sdk.DefaultChatTransport({
    api: 'http://127.0.0.1/api/chat',
    fetch: async (_url, init) => {
      const body = JSON.parse(String(init?.body)) as { messages: unknown };
      const { input, approvals } = runInputFromUIMessages(body.messages, { pendingApprovals: session.pending?.approvals });
      response = toUIMessageStreamResponse(agent.runStream(input, { session, approvals }), {
        approvals: options.approvals,
        ...(options.onError ? { onError: options.onError } : {}),
      });
      return response;
    },
  });
  /** Sends the page's messages; the streamed reply continues the last assistant message or follows it, as `useChat` does. */
  const send = async (): Promise<UIMessage> => {
    const stream = await transport.sendMessages({
      chatId: session.sessionId,
      messages: messages as never,
      abortSignal: undefined,
      trigger: 'submit-message',
      messageId: undefined,
    });
    const last = messages.at(-1);
    const continued = last?.role === 'assistant' ? structuredClone(last) : undefined;
    let message: UIMessage | undefined;
    for await (const snapshot of sdk.readUIMessageStream({
      stream: stream as never,
      ...(continued ? { message: continued as never } : {}),
      onError: (error: unknown) => errors.push((error as Error).message),
    })) {
      message = snapshot as unknown as UIMessage;
    }
    if (message) {
      if (message.id === last?.id) messages[messages.length - 1] = message;
      else messages.push(message);
    }
    return message!;
  };
  return {
    agent,
    session,
    messages,
    errors,
    response: () => response!,
    say: (id: string, text: string) => {
      messages.push({ id, role: 'user', parts: [{ type: 'text', text }] });
      return send();
    },
    /** The page answers every waiting call of its last message, as `addToolApprovalResponse` (ai 6+) or `addToolResult` (ai 5) do. */
    answer: (approved: boolean, reason?: string) => {
      const last = messages.at(-1)!;
      for (const part of last.parts as Array<{
        state: string;
        approval?: { id: string; approved?: boolean; reason?: string };
        output?: unknown;
      }>) {
        if (part.state === 'approval-requested') {
          part.state = 'approval-responded';
          part.approval = { id: part.approval!.id, approved, ...(reason ? { reason } : {}) };
        } else if (options.approvals === 'input-available' && part.state === 'input-available') {
          part.state = 'output-available';
          part.output = { approved, ...(reason ? { reason } : {}) };
        }
      }
      return send();
    },
    /** What a reload shows: the stored conversation as UI messages. */
    reload: async () =>
      uiMessagesFromHistory(await agent.getHistory(session), {
        pendingApprovals: session.pending?.approvals ?? [],
        approvals: options.approvals,
        tools,
      }),
  };
}

// ai 7 declares Node >= 22, yet its client side (transport, reader) runs on Node 20 too: all three run everywhere.
const SDKS: [string, () => Promise<ClientSdk>][] = [
  ['ai 5', async () => ai5 as unknown as ClientSdk],
  ['ai 6', async () => ai6],
  ['ai 7', async () => (await import('ai-v7')) as unknown as ClientSdk],
];

describe.each(SDKS)('useChat on %s reads a ctx run', (name, load) => {
  const mode: UIApprovalMode = name === 'ai 5' ? 'input-available' : 'request';

  it('streams text, a tool call and its result with the stored ids, and a reload shows the same messages', async () => {
    const page = chat(await load(), { approvals: mode });
    const reply = await page.say('u-1', 'What is the weather in Lima?');
    const stored = await page.agent.getHistory(page.session);
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(stored[0]!.id).toBe('u-1');
    expect(reply.id).toBe(stored[1]!.id);
    expect(reply.parts).toEqual([
      { type: 'step-start' },
      { type: 'text', text: 'Let me look.', state: 'done' },
      { type: 'tool-weather', toolCallId: expect.any(String), state: 'output-available', input: { city: 'Lima' }, output: 'Sunny in Lima' },
      { type: 'step-start' },
      { type: 'text', text: 'Done: "Sunny in Lima"', state: 'done' },
    ]);
    expect(await page.reload()).toEqual(page.messages);
    await page.say('u-2', 'Thanks!');
    expect(page.messages.map((m) => m.id)).toEqual((await page.reload()).map((m) => m.id));
    expect(await page.reload()).toEqual(page.messages);
    expect(page.errors).toEqual([]);
  });

  it('shows a call waiting for approval, takes the answer back, and runs it', async () => {
    const page = chat(await load(), { approvals: mode });
    const waiting = await page.say('u-1', 'A table for 4, please.');
    const call = waiting.parts.find((p): p is UIToolPart => p.type === 'tool-book_table')!;
    expect(page.session.pending?.approvals.map((a) => a.callId)).toEqual([call.toolCallId]);
    expect(call.state).toBe(mode === 'request' ? 'approval-requested' : 'input-available');
    if (mode === 'request') expect(call.approval).toEqual({ id: call.toolCallId });
    expect(await page.reload()).toEqual(page.messages);

    const done = await page.answer(true);
    expect(done.id).toBe(waiting.id);
    expect(page.session.pending).toBeUndefined();
    const booked = done.parts.find((p): p is UIToolPart => p.type === 'tool-book_table')!;
    expect(booked).toMatchObject({ state: 'output-available', output: { booked: 4, at: '20:00' } });
    if (mode === 'request') expect(booked.approval).toEqual({ id: call.toolCallId, approved: true });
    expect(done.parts.at(-1)).toEqual({ type: 'text', text: 'Done: {"booked":4,"at":"20:00"}', state: 'done' });
    expect(page.messages).toHaveLength(2);
    expect(await page.reload()).toEqual(page.messages);
    expect(page.errors).toEqual([]);
  });

  it('shows a denied call as denied, with the reason the model got', async () => {
    const page = chat(await load(), { approvals: mode });
    await page.say('u-1', 'A table for 12, please.');
    const done = await page.answer(false, 'too many people');
    const denied = done.parts.find((p): p is UIToolPart => p.type === 'tool-book_table')!;
    if (mode === 'request') {
      expect(denied).toMatchObject({ state: 'output-denied', approval: { approved: false, reason: 'too many people' } });
    } else {
      expect(denied).toMatchObject({ state: 'output-error', errorText: 'Not run: the call was denied: too many people' });
    }
    expect(done.parts.at(-1)).toMatchObject({ text: 'Failed: Not run: the call was denied: too many people' });
    expect(await page.reload()).toEqual(page.messages);
  });

  it('a failed run is an error chunk with a safe text, or the text the app maps it to', async () => {
    const failing = () =>
      createAgent({
        client: new ScriptedChatClient({ replies: [{ error: new Error('connect ECONNREFUSED 10.1.2.3:6379 (password=hunter2)') }] }),
      });
    const page = chat(await load(), { approvals: mode, agent: failing() });
    await page.say('u-1', 'Hello?');
    expect(page.errors).toEqual([DEFAULT_UI_ERROR_TEXT]);
    const mapped = chat(await load(), { approvals: mode, agent: failing(), onError: () => 'The model is unavailable; try again.' });
    await mapped.say('u-1', 'Hello?');
    expect(mapped.errors).toEqual(['The model is unavailable; try again.']);
  });
});

describe('toUIMessageStream on the protocol edges', () => {
  it('sends message metadata at the start and the finish; the page merges it', async () => {
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: [{ text: 'Hi.', usage: { inputTokens: 7, outputTokens: 2 } }] }),
    });
    const transport = new ai6.DefaultChatTransport({
      fetch: async () =>
        toUIMessageStreamResponse(agent.runStream(Message.user('Hello', { id: 'u-1' })), {
          messageMetadata: (event) =>
            event.type === 'start' ? { model: 'scripted' } : { outputTokens: event.response.usage?.outputTokens },
        }),
    });
    const stream = await transport.sendMessages({
      chatId: 'c',
      messages: [],
      abortSignal: undefined,
      trigger: 'submit-message',
      messageId: undefined,
    });
    let message: ai6.UIMessage | undefined;
    for await (const snapshot of ai6.readUIMessageStream({ stream })) message = snapshot;
    expect(message?.metadata).toEqual({ model: 'scripted', outputTokens: 2 });
  });

  it("ai 5's reader refuses the approval chunk: its pages take approvals: 'input-available'", async () => {
    const page = chat(ai5 as unknown as ClientSdk, { approvals: 'request' });
    await page.say('u-1', 'A table for 2, please.');
    expect(page.errors).toHaveLength(1);
    expect(page.errors[0]).toMatch(/^Type validation failed: Value: \{"type":"tool-approval-request"/);
  });
});

describe('toUIMessageStreamResponse', () => {
  it('sets the protocol headers and writes server-sent events ending with [DONE]', async () => {
    const agent = createAgent({ client: new ScriptedChatClient({ replies: ['Hi.'] }) });
    const response = toUIMessageStreamResponse(agent.runStream('Hello'), { headers: { 'x-request-id': 'r1' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1');
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    expect(response.headers.get('x-request-id')).toBe('r1');
    expect(Object.keys(UI_MESSAGE_STREAM_HEADERS)).toContain('cache-control');
    const events = (await response.text()).split('\n\n').filter(Boolean);
    expect(events.at(-1)).toBe('data: [DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.replace(/^data: /, '')) as { type: string });
    expect(chunks.map((c) => c.type)).toEqual(['start', 'start-step', 'text-start', 'text-delta', 'text-end', 'finish-step', 'finish']);
    expect(chunks.at(-1)).toEqual({ type: 'finish', finishReason: 'stop' });
  });

  it('a stream cancelled mid-reply (the stop button) aborts the run and the model call: nothing is stored', async () => {
    let modelAborted = false;
    const client: ChatClient = {
      specificationVersion: 'v1',
      provider: 'test',
      modelId: 'endless',
      getResponse: () => Promise.reject(new Error('only streams')),
      async *getStreamingResponse(_messages, { signal }) {
        yield { messageId: 'a-1', role: 'assistant', contents: [{ type: 'text', text: 'Hel' }] };
        await new Promise((_resolve, reject) =>
          signal!.addEventListener('abort', () => {
            modelAborted = true;
            reject(signal!.reason);
          }),
        );
      },
    };
    const agent = createAgent({ client });
    const session = agent.createSession();
    const stream = agent.runStream(Message.user('Hello', { id: 'u-1' }), { session });
    const reader = toUIMessageStream(stream).getReader();
    const seen: string[] = [];
    for (let i = 0; i < 10 && !seen.includes('text-delta'); i++) seen.push((await reader.read()).value!.type);
    expect(seen).toEqual(['start', 'start-step', 'text-start', 'text-delta']);
    await reader.cancel();
    await expect(stream.response).rejects.toMatchObject({ name: 'AbortError' });
    expect(modelAborted).toBe(true);
    expect(await agent.getHistory(session)).toEqual([]);
  });

  it('a cancelled stream (the stop button) aborts the run: nothing is stored', async () => {
    const agent = createAgent({ client: new ScriptedChatClient({ replies: [{ text: 'A long answer.', delayMs: 60_000 }] }) });
    const session = agent.createSession();
    const stream = agent.runStream('Hello', { session });
    const response = toUIMessageStreamResponse(stream);
    const reader = response.body!.getReader();
    await reader.cancel();
    await expect(stream.response).rejects.toMatchObject({ name: 'AbortError' });
    expect(await agent.getHistory(session)).toEqual([]);
  });
});
