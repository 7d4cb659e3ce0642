import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  BackendUnavailableError,
  ConfigurationError,
  ContextWindowExceededError,
  createAgent,
  defineTool,
  InMemoryHistoryProvider,
  Message,
  type ChatResponseUpdate,
} from '@ctx/core';
import { recordedBody, recordedEvents, startOpenAITestServer, type OpenAITestServer, type ScriptedFailure } from '@ctx/openai-test-server';
import { OpenAIResponsesClient } from './openai-responses-client.js';

let server: OpenAITestServer;
beforeAll(async () => {
  server = await startOpenAITestServer({ apiKey: 'test-key' });
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const responses = () => new OpenAIResponsesClient({ baseURL: server.url, apiKey: 'test-key', model: 'gpt-4.1', maxRetries: 0 });
type Body = { input: Array<Record<string, unknown>>; previous_response_id?: string; [key: string]: unknown };
const bodies = () => server.requests.filter((r) => r.path.endsWith('/responses')).map((r) => r.body as Body);

describe('OpenAIResponsesClient', () => {
  it('lets the service keep the conversation: only new messages are sent, a store-only provider still audits', async () => {
    server.enqueue({ text: 'Hi Ann.' }, { text: 'You are Ann.' });
    const audit = new InMemoryHistoryProvider({ sourceId: 'audit', loadMessages: false });
    const agent = createAgent({ client: responses(), instructions: 'Be brief.', contextProviders: [audit] });
    const session = agent.createSession();
    const first = await agent.run('I am Ann', { session });
    expect(first.conversationId).toMatch(/^resp_/);
    expect(session.serviceSessionId).toBe(first.conversationId);
    const second = await agent.run('Who am I?', { session });
    expect(second.text).toBe('You are Ann.');
    const [b1, b2] = bodies();
    expect(b1!.previous_response_id).toBeUndefined();
    expect(b2!.previous_response_id).toBe(first.conversationId);
    expect(b2!.input).toEqual([{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Who am I?' }] }]);
    expect(b2!.instructions).toBe('Be brief.');
    expect(session.state.memory).toBeUndefined(); // no local history was kept or loaded
    expect((session.state.audit!.messages as unknown as Message[]).map((m) => Message.text(m))).toEqual([
      'I am Ann',
      'Hi Ann.',
      'Who am I?',
      'You are Ann.',
    ]);
    // the service holds the whole chain
    const chain = JSON.stringify(server.conversation(second.conversationId!));
    expect(chain).toContain('I am Ann');
    expect(chain).toContain('Hi Ann.');
    expect(chain).toContain('Who am I?');
  });

  it('with store: false keeps history locally and sends it every turn', async () => {
    server.enqueue({ text: 'one' }, { text: 'two' });
    const agent = createAgent({ client: responses() });
    const session = agent.createSession();
    const first = await agent.run('a', { session, options: { store: false } });
    expect(first.conversationId).toBeUndefined();
    await agent.run('b', { session, options: { store: false } });
    const b2 = bodies()[1]!;
    expect(b2.store).toBe(false);
    expect(b2.include).toEqual(['reasoning.encrypted_content']);
    expect(b2.previous_response_id).toBeUndefined();
    expect(b2.input).toEqual([
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'a' }] },
      { role: 'assistant', content: 'one' },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'b' }] },
    ]);
  });

  it('with store: false sends reasoning items back with the calls they led to', async () => {
    server.enqueue(
      { reasoning: 'check the weather first', toolCalls: [{ name: 'weather', arguments: {}, id: 'call_r' }] },
      { text: 'Sunny.' },
    );
    const weather = defineTool({ name: 'weather', parameters: { type: 'object' }, execute: () => 'sunny' });
    const res = await createAgent({ client: responses(), tools: [weather] }).run('Weather?', { options: { store: false } });
    expect(res.text).toBe('Sunny.');
    const reasoning = res.messages[0]!.contents[0] as { id: string; encrypted: string };
    expect(reasoning.encrypted).toMatch(/^gAAAAA/);
    // The server verifies the encrypted content it issued: a reasoning item without it, or with another, is refused.
    expect(bodies()[1]!.input.slice(1)).toEqual([
      {
        type: 'reasoning',
        id: reasoning.id,
        summary: [{ type: 'summary_text', text: 'check the weather first' }],
        encrypted_content: reasoning.encrypted,
      },
      { type: 'function_call', call_id: 'call_r', name: 'weather', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_r', output: 'sunny' },
    ]);
  });

  it('runs a tool loop with function_call and function_call_output items, chained by response id', async () => {
    server.enqueue(
      { reasoning: 'need the weather', toolCalls: [{ name: 'weather', arguments: { city: 'Oslo' }, id: 'call_1' }] },
      { text: 'Cold: -3.' },
    );
    const weather = defineTool({ name: 'weather', parameters: { type: 'object' }, execute: () => ({ celsius: -3 }) });
    const res = await createAgent({ client: responses(), tools: [weather] }).run('Weather in Oslo?', { session: undefined });
    expect(res.text).toBe('Cold: -3.');
    const first = res.messages[0]!;
    expect(first.contents[0]).toMatchObject({ type: 'reasoning', text: 'need the weather' });
    expect((first.contents[0] as { id?: string }).id).toMatch(/^rs_/);
    const [b1, b2] = bodies();
    expect(b1!.tools).toEqual([{ type: 'function', name: 'weather', parameters: { type: 'object' }, strict: false }]);
    expect(b2!.previous_response_id).toBe(first.metadata?.serviceMessageId);
    expect(first.id).not.toBe(first.metadata?.serviceMessageId);
    expect(b2!.input).toEqual([{ type: 'function_call_output', call_id: 'call_1', output: '{"celsius":-3}' }]);
  });

  it('streams events into updates and finishes with usage and the response id', async () => {
    server.enqueue(
      { toolCalls: [{ name: 'lookup', arguments: { q: 'streaming arguments in pieces' }, id: 'call_9' }] },
      { text: 'A streamed answer in several deltas.' },
    );
    const lookup = defineTool({ name: 'lookup', parameters: { type: 'object' }, execute: ({ q }: { q: string }) => q.toUpperCase() });
    const agent = createAgent({ client: responses(), tools: [lookup] });
    const session = agent.createSession();
    const stream = agent.runStream('go', { session });
    let textUpdates = 0;
    for await (const u of stream) if (u.contents.some((c) => c.type === 'text')) textUpdates++;
    const res = await stream.response;
    expect(textUpdates).toBeGreaterThan(2);
    expect(res.text).toBe('A streamed answer in several deltas.');
    expect(Message.functionCalls(res.messages[0]!)[0]).toMatchObject({
      callId: 'call_9',
      name: 'lookup',
      arguments: '{"q":"streaming arguments in pieces"}',
    });
    expect(res.messages[1]!.contents[0]).toMatchObject({ result: 'STREAMING ARGUMENTS IN PIECES' });
    expect(res.usage?.totalTokens).toBeGreaterThan(0);
    expect(session.serviceSessionId).toMatch(/^resp_/);
    expect(bodies()[1]!.previous_response_id).toBe(res.messages[0]!.metadata?.serviceMessageId);
    expect(res.messages[0]!.metadata?.serviceMessageId).toMatch(/^resp_/);
  });

  it('continues a Conversations API conversation by its conv_ id', async () => {
    const conversation = await responses().client.conversations.create({});
    server.enqueue({ text: 'first' }, { text: 'second' });
    const agent = createAgent({ client: responses() });
    const session = agent.createSession({ serviceSessionId: conversation.id });
    await agent.run('one', { session });
    await agent.run('two', { session });
    expect(session.serviceSessionId).toBe(conversation.id);
    expect(bodies().map((b) => [b.conversation, b.previous_response_id])).toEqual([
      [conversation.id, undefined],
      [conversation.id, undefined],
    ]);
  });

  it('an unknown previous response is a clear error', async () => {
    const agent = createAgent({ client: responses() });
    const session = agent.createSession({ serviceSessionId: 'resp_missing' });
    await expect(agent.run('hi', { session })).rejects.toSatisfy(
      (e) => ConfigurationError.isInstance(e) && /resp_missing|previous/i.test((e as Error).message),
    );
  });

  it('says it stores by default', () => {
    expect(responses().storesByDefault).toBe(true);
  });
});

/** Drains a streaming call: the updates before it failed, and what it threw. */
async function drain(stream: AsyncIterable<ChatResponseUpdate>): Promise<{ updates: ChatResponseUpdate[]; error: unknown }> {
  const updates: ChatResponseUpdate[] = [];
  try {
    for await (const update of stream) updates.push(update);
  } catch (error) {
    return { updates, error };
  }
  return { updates, error: undefined };
}

describe('failures the service reports inside a 200 stream or response (recorded)', () => {
  const recorded = recordedEvents('responses-error-insufficient-quota-stream.chunks.txt');
  const failedResponse = recorded.at(-1)!.response as { id: string };
  const quota = (id: string) =>
    `The OpenAI response ${id} failed (insufficient_quota): You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors. Check the plan and billing of the account or project the key belongs to`;

  it('the recorded insufficient_quota stream (nested error event, then response.failed) is a BackendUnavailableError naming the response', async () => {
    // A recorded completed stream first: the replay itself ends in a finished response.
    const completed = recordedEvents('responses-text-stream.chunks.txt');
    server.enqueue({ replay: { events: completed } }, { replay: { events: recorded } });
    const finished = await drain(responses().getStreamingResponse([Message.user('hi')], {}));
    expect(finished.error).toBeUndefined();
    expect(finished.updates.at(-1)).toMatchObject({
      finishReason: 'stop',
      conversationId: (completed.at(-1)!.response as { id: string }).id,
    });
    const { error } = await drain(responses().getStreamingResponse([Message.user('hi')], {}));
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    expect((error as Error).message.startsWith(quota(failedResponse.id))).toBe(true);
    expect((error as Error).message).not.toMatch(/rejected the request|\(0/);
  });

  it('derived from the recording: the error event flattened, or left out (only response.failed), gives the same error', async () => {
    const flattened = recorded.map((event) => {
      if (event.type !== 'error') return event;
      const { code, message, param } = event.error as Record<string, unknown>;
      return { type: 'error', sequence_number: event.sequence_number, code, message, param };
    });
    const failedOnly = recorded.filter((event) => event.type !== 'error');
    for (const events of [flattened, failedOnly]) {
      server.enqueue({ replay: { events } });
      const { error } = await drain(responses().getStreamingResponse([Message.user('hi')], {}));
      expect(BackendUnavailableError.isInstance(error)).toBe(true);
      expect((error as Error).message.startsWith(quota(failedResponse.id))).toBe(true);
    }
  });

  it('derived from the recording: the failed response as a plain 200 body is the same error, not an empty answer', async () => {
    server.enqueue({ replay: { status: 200, body: failedResponse } });
    const error = await responses()
      .getResponse([Message.user('hi')], {})
      .catch((e: unknown) => e);
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    expect((error as Error).message.startsWith(quota(failedResponse.id))).toBe(true);
  });

  it('the recorded error bodies: insufficient_quota (429) as its in-stream form, an unsupported parameter (400) as a rejected request', async () => {
    server.enqueue(
      { replay: { status: 429, body: recordedBody('responses-error-insufficient-quota.json') } },
      { replay: { status: 400, body: recordedBody('responses-error-unsupported-temperature.json') } },
    );
    const quotaError = await responses()
      .getResponse([Message.user('hi')], {})
      .catch((e: unknown) => e);
    expect(BackendUnavailableError.isInstance(quotaError)).toBe(true);
    expect((quotaError as Error).message).toMatch(
      /^The OpenAI account is out of quota or credit \(429 insufficient_quota\) after retries: You exceeded your current quota.* Check the plan and billing/,
    );
    const rejected = await responses()
      .getResponse([Message.user('hi')], { temperature: 0.5 })
      .catch((e: unknown) => e);
    expect(ConfigurationError.isInstance(rejected)).toBe(true);
    expect((rejected as Error).message).toBe(
      "The OpenAI service rejected the request (400): Unsupported parameter: 'temperature' is not supported with this model. Check the model, the options and the input; the same request fails again.",
    );
  });
});

describe('failures the service reports inside a 200 stream or response (local server)', () => {
  const cases: [ScriptedFailure['failure'], { isInstance: (e: unknown) => boolean }, string][] = [
    [{ code: 'server_error', message: 'The server had an error.' }, BackendUnavailableError, 'Retry the run later.'],
    [{ code: null, message: 'The server had an error.' }, BackendUnavailableError, 'Retry the run'],
    [{ code: 'rate_limit_exceeded', message: 'Rate limit reached.' }, BackendUnavailableError, 'Retry later, or lower the rate'],
    [{ code: 'insufficient_quota', message: 'Out of quota.' }, BackendUnavailableError, 'Check the plan and billing'],
    [{ code: 'service_unavailable', message: 'Overloaded.' }, BackendUnavailableError, 'Retry the run later.'],
    [{ code: 'vector_store_timeout', message: 'Timed out.' }, BackendUnavailableError, 'if it keeps timing out'],
    [{ code: 'context_length_exceeded', message: 'Too long.' }, ContextWindowExceededError, 'Compact the conversation'],
    [{ code: 'invalid_prompt', message: 'Invalid prompt.' }, ConfigurationError, 'Check the model, the options and the input'],
    [{ code: 'invalid_api_key', message: 'Bad key.' }, ConfigurationError, 'Check the API key'],
  ];

  it.each(cases)('%o streamed (nested, flat or no error event, after partial text) is a %O', async (failure, type, todo) => {
    for (const errorEvent of ['nested', 'flat', 'none'] as const) {
      server.enqueue({ failure: { ...failure, errorEvent, textBefore: 'Partial answer' } });
      const { updates, error } = await drain(responses().getStreamingResponse([Message.user('hi')], {}));
      expect(updates.flatMap((u) => u.contents.map((c) => (c.type === 'text' ? c.text : ''))).join('')).toBe('Partial answer');
      expect(type.isInstance(error), `${errorEvent}: ${String(error)}`).toBe(true);
      expect((error as Error).message).toMatch(/^The OpenAI response resp_\w+ failed/);
      expect((error as Error).message).toContain(todo);
    }
  });

  it.each(cases)('%o as a plain response with status failed is a %O', async (failure, type, todo) => {
    server.enqueue({ failure });
    const error = await responses()
      .getResponse([Message.user('hi')], {})
      .catch((e: unknown) => e);
    expect(type.isInstance(error), String(error)).toBe(true);
    expect((error as Error).message).toContain(todo);
  });

  it("an agent run fails with the typed error, and the failed response does not become the session's conversation", async () => {
    server.enqueue({ text: 'first' }, { failure: { code: 'server_error', message: 'The server had an error.' } });
    const agent = createAgent({ client: responses() });
    const session = agent.createSession();
    const first = await agent.run('one', { session });
    const error = await agent.run('two', { session }).catch((e: unknown) => e);
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    expect(session.serviceSessionId).toBe(first.conversationId);
  });
});

describe('a server that answers every response with one id', () => {
  let reusing: OpenAITestServer;
  beforeAll(async () => {
    reusing = await startOpenAITestServer({ reuseIds: true });
  });
  afterAll(() => reusing.close());

  for (const streaming of [false, true]) {
    it(`three turns kept locally (store: false) store every reply under a fresh id, the response id in metadata${streaming ? ' (streamed)' : ''}`, async () => {
      const client = new OpenAIResponsesClient({ baseURL: reusing.url, apiKey: 'test-key', model: 'gpt-4.1', maxRetries: 0 });
      const agent = createAgent({ client });
      const session = agent.createSession();
      const replies: Message[] = [];
      for (const text of ['one', 'two', 'three']) {
        const options = { session, options: { store: false } };
        if (streaming) {
          const stream = agent.runStream(text, options);
          const ids = new Set<string | undefined>();
          for await (const update of stream) ids.add(update.messageId);
          const response = await stream.response;
          expect([...ids]).toEqual([response.messages[0]!.id]);
          replies.push(...response.messages);
        } else replies.push(...(await agent.run(text, options)).messages);
      }
      const stored = session.state.memory!.messages as Message[];
      expect(stored.map((m) => `${m.role}:${Message.text(m)}`)).toEqual([
        'user:one',
        'assistant:You said: one',
        'user:two',
        'assistant:You said: two',
        'user:three',
        'assistant:You said: three',
      ]);
      expect(new Set(replies.map((m) => m.id)).size).toBe(3);
      for (const m of replies) expect(m.metadata?.serviceMessageId).toBe('resp_reused');
    });
  }
});
