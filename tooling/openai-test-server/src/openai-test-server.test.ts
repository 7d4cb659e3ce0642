import OpenAI, { AzureOpenAI } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  contextLengthExceeded,
  deterministicEmbedding,
  recordedBody,
  recordedEvents,
  startOpenAITestServer,
  type OpenAITestServer,
} from './index.js';

let server: OpenAITestServer;
let client: OpenAI;

beforeAll(async () => {
  server = await startOpenAITestServer();
  client = new OpenAI({ baseURL: server.url, apiKey: 'test-key', maxRetries: 0 });
});

afterAll(async () => {
  await server.close();
});

beforeEach(() => {
  server.reset();
});

function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += (a[i] ?? 0) * (b[i] ?? 0);
    na += (a[i] ?? 0) ** 2;
    nb += (b[i] ?? 0) ** 2;
  }
  return dot / Math.sqrt(na * nb);
}

/** Waits until `check` holds, looking again every 10 ms, at most 3,000 times (the test's own timeout comes first). */
async function until(check: () => boolean): Promise<void> {
  for (let looks = 0; !check(); looks++) {
    if (looks === 3000) throw new Error('condition not met after 3,000 looks');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('chat completions', () => {
  it('echoes the last user message by default, with the documented shape and deterministic usage', async () => {
    const completion = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hello there' },
      ],
    });
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe('gpt-4o-mini');
    expect(typeof completion.created).toBe('number');
    const choice = completion.choices[0]!;
    expect(choice.message).toMatchObject({ role: 'assistant', content: 'You said: Hello there', refusal: null });
    expect(choice.message.tool_calls).toBeUndefined();
    expect(choice.finish_reason).toBe('stop');
    // 'Be brief.' (9 chars → 3) + 'Hello there' (11 chars → 3), plus 4 per message.
    expect(completion.usage).toMatchObject({ prompt_tokens: 14, completion_tokens: 6, total_tokens: 20 });

    const [request] = server.requests;
    expect(request).toMatchObject({ method: 'POST', path: '/v1/chat/completions', route: '/chat/completions' });
    expect(request?.headers.authorization).toBe('Bearer test-key');
    expect(request?.body).toMatchObject({ model: 'gpt-4o-mini', messages: [{ role: 'system' }, { role: 'user' }] });
  });

  it('returns scripted tool calls with content null and finish_reason tool_calls', async () => {
    server.enqueue({
      toolCalls: [
        { name: 'get_weather', arguments: { city: 'Paris' } },
        { name: 'get_time', arguments: '{"tz":"CET"}', id: 'call_fixed' },
      ],
      usage: { input: 111, output: 22 },
    });
    const completion = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'Weather and time in Paris?' }],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
    });
    const message = completion.choices[0]!.message;
    expect(message.content).toBeNull();
    expect(message.tool_calls).toHaveLength(2);
    const [first, second] = message.tool_calls!;
    expect(first).toMatchObject({ type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } });
    expect(first!.id).toMatch(/^call_/);
    expect(second).toMatchObject({ id: 'call_fixed', function: { name: 'get_time', arguments: '{"tz":"CET"}' } });
    expect(completion.choices[0]!.finish_reason).toBe('tool_calls');
    expect(completion.usage).toMatchObject({ prompt_tokens: 111, completion_tokens: 22, total_tokens: 133 });
  });

  it('serves replies FIFO, then the responder, then the default echo again after reset', async () => {
    server.enqueue({ text: 'first' }, { text: 'second' });
    server.respondWith((request) => ({ text: `fallback for ${String(request.body?.model)}` }));
    const ask = async (): Promise<string | null> =>
      (await client.chat.completions.create({ model: 'm1', messages: [{ role: 'user', content: 'q' }] })).choices[0]!.message.content;
    expect(await ask()).toBe('first');
    expect(await ask()).toBe('second');
    expect(await ask()).toBe('fallback for m1');
    expect(server.requests).toHaveLength(3);
    server.reset();
    expect(server.requests).toHaveLength(0);
    expect(await ask()).toBe('You said: q');
  });

  it('returns scripted JSON text as is in JSON mode, and valid JSON from the default echo', async () => {
    server.enqueue({ text: '{"memory":[{"id":"0","text":"Likes tea"}]}' });
    const scripted = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'extract facts' }],
      response_format: { type: 'json_object' },
    });
    expect(JSON.parse(scripted.choices[0]!.message.content!)).toEqual({ memory: [{ id: '0', text: 'Likes tea' }] });

    const echoed = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'hi' }],
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } },
    });
    expect(JSON.parse(echoed.choices[0]!.message.content!)).toEqual({ reply: 'You said: hi' });
  });

  it('streams text in several deltas with a role chunk, finish_reason, a usage chunk and [DONE]', async () => {
    server.enqueue({ text: 'The quick brown fox jumps over the lazy dog.' });
    const stream = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'Tell me about foxes' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);

    expect(chunks.every((chunk) => chunk.object === 'chat.completion.chunk' && chunk.model === 'gpt-4o')).toBe(true);
    expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);
    expect(chunks[0]!.choices[0]!.delta).toMatchObject({ role: 'assistant', content: '' });
    const contentDeltas = chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.delta.content ?? '')).filter(Boolean);
    expect(contentDeltas.length).toBeGreaterThan(3);
    expect(contentDeltas.join('')).toBe('The quick brown fox jumps over the lazy dog.');
    const finishChunk = chunks.at(-2)!;
    expect(finishChunk.choices[0]!.finish_reason).toBe('stop');
    const usageChunk = chunks.at(-1)!;
    expect(usageChunk.choices).toEqual([]);
    expect(usageChunk.usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 11, total_tokens: 20 });
    expect(chunks.slice(0, -1).every((chunk) => chunk.usage === null)).toBe(true);
  });

  it('streams tool calls that the SDK stream helper assembles', async () => {
    server.enqueue({
      text: 'Let me check.',
      toolCalls: [
        { name: 'lookup', arguments: { query: 'a rather long query string', limit: 5 } },
        { name: 'other', arguments: {} },
      ],
    });
    const stream = client.chat.completions.stream({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'look it up' }],
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
    });
    const argumentDeltas: string[] = [];
    stream.on('chunk', (chunk) => {
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) {
        if (call.function?.arguments) argumentDeltas.push(call.function.arguments);
      }
    });
    const completion = await stream.finalChatCompletion();
    const message = completion.choices[0]!.message;
    expect(message.content).toBe('Let me check.');
    expect(message.tool_calls).toHaveLength(2);
    const [lookup, other] = message.tool_calls!;
    expect(lookup!.type === 'function' && lookup!.function.name).toBe('lookup');
    expect(lookup!.type === 'function' && JSON.parse(lookup!.function.arguments)).toEqual({
      query: 'a rather long query string',
      limit: 5,
    });
    expect(other!.type === 'function' && other!.function.arguments).toBe('{}');
    expect(lookup!.id).toMatch(/^call_/);
    expect(argumentDeltas.length).toBeGreaterThan(2);
    expect(completion.choices[0]!.finish_reason).toBe('tool_calls');
  });

  it('rejects histories with unanswered tool calls or orphaned tool results, as the service does', async () => {
    const call = { id: 'call_1', type: 'function' as const, function: { name: 'f', arguments: '{}' } };
    const unanswered = client.chat.completions.create({
      model: 'gpt-4o',
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'user', content: 'again' },
      ],
    });
    await expect(unanswered).rejects.toMatchObject({
      status: 400,
      param: 'messages.[1].role',
      message: expect.stringContaining('did not have response messages: call_1'),
    });
    const orphaned = client.chat.completions.create({
      model: 'gpt-4o',
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'tool', tool_call_id: 'call_1', content: 'result' },
      ],
    });
    await expect(orphaned).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    const answered = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: 'call_1', content: 'result' },
      ],
    });
    expect(answered.choices[0]!.message.content).toBe('You said: hi');
  });
});

describe('responses', () => {
  it('returns a response object with every required field and the scripted output items', async () => {
    server.enqueue({ reasoning: 'Thinking about greetings.', text: 'Hello, Ada!' });
    const response = await client.responses.create({ model: 'gpt-4.1', input: 'Hi, I am Ada', instructions: 'Be nice.' });
    expect(response.id).toMatch(/^resp_/);
    expect(response).toMatchObject({
      object: 'response',
      status: 'completed',
      model: 'gpt-4.1',
      error: null,
      incomplete_details: null,
      instructions: 'Be nice.',
      metadata: {},
      parallel_tool_calls: true,
      previous_response_id: null,
      store: true,
      temperature: 1,
      tool_choice: 'auto',
      tools: [],
      top_p: 1,
    });
    expect(typeof response.created_at).toBe('number');
    expect(response.output).toHaveLength(2);
    const [reasoning, message] = response.output;
    expect(reasoning).toMatchObject({ type: 'reasoning', summary: [{ type: 'summary_text', text: 'Thinking about greetings.' }] });
    expect(reasoning!.id).toMatch(/^rs_/);
    expect(message).toMatchObject({
      type: 'message',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: 'Hello, Ada!', annotations: [] }],
    });
    expect(message!.id).toMatch(/^msg_/);
    expect(response.output_text).toBe('Hello, Ada!');
    expect(response.usage).toMatchObject({
      input_tokens: 13,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 10,
      output_tokens_details: { reasoning_tokens: 7 },
      total_tokens: 23,
    });
  });

  it('chains previous_response_id over stored responses and exposes the held history', async () => {
    const first = await client.responses.create({ model: 'gpt-4.1', input: 'My name is Ada.' });
    server.enqueue({ text: 'Your name is Ada.' });
    const second = await client.responses.create({
      model: 'gpt-4.1',
      previous_response_id: first.id,
      input: [{ role: 'user', content: 'What is my name?' }],
    });
    expect(second.previous_response_id).toBe(first.id);
    expect(second.usage!.input_tokens).toBeGreaterThan(first.usage!.input_tokens + first.usage!.output_tokens);

    const history = server.conversation(second.id);
    expect(history.map((item) => [item.type, item.role])).toEqual([
      ['message', 'user'],
      ['message', 'assistant'],
      ['message', 'user'],
      ['message', 'assistant'],
    ]);
    expect(history.map((item) => (item.content as { text: string }[])[0]!.text)).toEqual([
      'My name is Ada.',
      'You said: My name is Ada.',
      'What is my name?',
      'Your name is Ada.',
    ]);
    const retrieved = await client.responses.retrieve(second.id);
    expect(retrieved.output_text).toBe('Your name is Ada.');
    const inputItems = await client.responses.inputItems.list(second.id);
    expect(inputItems.data).toHaveLength(1);
  });

  it('does not store responses created with store: false and rejects unknown previous ids', async () => {
    const unstored = await client.responses.create({ model: 'gpt-4.1', input: 'secret', store: false });
    expect(unstored).toMatchObject({ store: false });
    expect(() => server.conversation(unstored.id)).toThrow(/store: false/);
    const error = await client.responses
      .create({ model: 'gpt-4.1', input: 'next', previous_response_id: unstored.id })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({
      status: 400,
      code: 'previous_response_not_found',
      param: 'previous_response_id',
      message: expect.stringContaining(`Previous response with id '${unstored.id}' not found.`),
    });
  });

  it('returns function calls and accepts their outputs only with the call in context', async () => {
    server.enqueue({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' }, id: 'call_w1' }] });
    const first = await client.responses.create({
      model: 'gpt-4.1',
      input: 'Weather in Oslo?',
      tools: [{ type: 'function', name: 'get_weather', parameters: { type: 'object' }, strict: false }],
    });
    const call = first.output[0]!;
    expect(call).toMatchObject({
      type: 'function_call',
      call_id: 'call_w1',
      name: 'get_weather',
      arguments: '{"city":"Oslo"}',
      status: 'completed',
    });
    expect(call.id).toMatch(/^fc_/);

    const output = { type: 'function_call_output' as const, call_id: 'call_w1', output: 'Sunny' };
    await expect(client.responses.create({ model: 'gpt-4.1', input: [output] })).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('No tool call found for function call output with call_id call_w1'),
    });
    await expect(client.responses.create({ model: 'gpt-4.1', previous_response_id: first.id, input: 'never mind' })).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('No tool output found for function call call_w1'),
    });

    server.enqueue({ text: 'It is sunny in Oslo.' });
    const second = await client.responses.create({ model: 'gpt-4.1', previous_response_id: first.id, input: [output] });
    expect(second.output_text).toBe('It is sunny in Oslo.');
    expect(server.conversation(second.id).map((item) => item.type)).toEqual([
      'message',
      'function_call',
      'function_call_output',
      'message',
    ]);
  });

  it('appends response items to a conversation and 404s on an unknown conversation', async () => {
    const conversation = await client.conversations.create({ metadata: { topic: 'test' } });
    expect(conversation).toMatchObject({ object: 'conversation', metadata: { topic: 'test' } });
    expect(conversation.id).toMatch(/^conv_/);

    const first = await client.responses.create({ model: 'gpt-4.1', input: 'Remember 42.', conversation: conversation.id });
    expect(first.conversation).toEqual({ id: conversation.id });
    server.enqueue({ text: 'You told me 42.' });
    const second = await client.responses.create({
      model: 'gpt-4.1',
      input: 'What number?',
      conversation: { id: conversation.id },
    });
    expect(second.output_text).toBe('You told me 42.');
    expect(second.usage!.input_tokens).toBeGreaterThan(first.usage!.input_tokens);
    const items = server.conversationItems(conversation.id);
    expect(items.map((item) => (item.content as { text: string }[])[0]!.text)).toEqual([
      'Remember 42.',
      'You said: Remember 42.',
      'What number?',
      'You told me 42.',
    ]);
    const listed = await client.conversations.items.list(conversation.id, { order: 'asc' });
    expect(listed.data.map((item) => item.id)).toEqual(items.map((item) => item.id));

    const missing = await client.responses.create({ model: 'gpt-4.1', input: 'x', conversation: 'conv_nope' }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect((missing as InstanceType<typeof OpenAI.NotFoundError>).message).toContain("Conversation with id 'conv_nope' not found.");
  });

  it('streams the documented event sequence with consecutive sequence numbers', async () => {
    server.enqueue({
      reasoning: 'Considering the weather tools.',
      text: 'Checking the forecast for you now.',
      toolCalls: [{ name: 'forecast', arguments: { city: 'Bergen', days: 3 } }],
    });
    const stream = await client.responses.create({ model: 'gpt-4.1', input: 'Forecast for Bergen', stream: true });
    const events = [];
    for await (const event of stream) events.push(event);

    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    const types = events.map((event) => event.type);
    expect(types.slice(0, 2)).toEqual(['response.created', 'response.in_progress']);
    expect(types.at(-1)).toBe('response.completed');
    for (const type of [
      'response.output_item.added',
      'response.reasoning_summary_text.delta',
      'response.content_part.added',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.function_call_arguments.done',
    ]) {
      expect(types).toContain(type);
    }
    const textDeltas = events.flatMap((event) => (event.type === 'response.output_text.delta' ? [event] : []));
    expect(textDeltas.length).toBeGreaterThan(3);
    expect(textDeltas.map((event) => event.delta).join('')).toBe('Checking the forecast for you now.');
    expect(textDeltas[0]).toMatchObject({ output_index: 1, content_index: 0, item_id: expect.stringMatching(/^msg_/) });
    const argDeltas = events.flatMap((event) => (event.type === 'response.function_call_arguments.delta' ? [event.delta] : []));
    expect(JSON.parse(argDeltas.join(''))).toEqual({ city: 'Bergen', days: 3 });
    const reasoningDeltas = events.flatMap((event) => (event.type === 'response.reasoning_summary_text.delta' ? [event.delta] : []));
    expect(reasoningDeltas.join('')).toBe('Considering the weather tools.');

    const completed = events.at(-1)!;
    expect(completed.type === 'response.completed' && completed.response.output.map((item) => item.type)).toEqual([
      'reasoning',
      'message',
      'function_call',
    ]);
    expect(completed.type === 'response.completed' && server.conversation(completed.response.id)).toHaveLength(4);
  });

  it('streams through the SDK responses.stream helper to a final response', async () => {
    server.enqueue({ text: 'Streaming via the helper works fine.' });
    const stream = client.responses.stream({ model: 'gpt-4.1', input: 'go' });
    const deltas: string[] = [];
    stream.on('response.output_text.delta', (event) => deltas.push(event.delta));
    const final = await stream.finalResponse();
    expect(final.output_text).toBe('Streaming via the helper works fine.');
    expect(deltas.join('')).toBe('Streaming via the helper works fine.');
    expect(final.status).toBe('completed');
  });

  it('reports length as an incomplete response', async () => {
    server.enqueue({ text: 'Cut', finishReason: 'length' });
    const response = await client.responses.create({ model: 'gpt-4.1', input: 'long story', max_output_tokens: 16 });
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(response.max_output_tokens).toBe(16);
  });
});

describe('responses: compaction', () => {
  const long = 'word '.repeat(400);

  it('compacts past context_management.compact_threshold, verifies the item sent back and reads from it on', async () => {
    const first = await client.responses.create({
      model: 'gpt-5.2',
      store: false,
      input: long,
      context_management: [{ type: 'compaction', compact_threshold: 200 }],
    });
    expect(first.output.map((item) => item.type)).toEqual(['message', 'compaction']);
    const item = first.output[1] as OpenAI.Responses.ResponseCompactionItem;
    expect(item.id).toMatch(/^cmp_/);
    expect(item.encrypted_content).toMatch(/^gAAAAA/);
    const below = await client.responses.create({
      model: 'gpt-5.2',
      store: false,
      input: 'short',
      context_management: [{ type: 'compaction', compact_threshold: 200 }],
    });
    expect(below.output.map((o) => o.type)).toEqual(['message']);

    const next = await client.responses.create({
      model: 'gpt-5.2',
      store: false,
      input: [{ role: 'user', content: long }, item, { role: 'user', content: 'and now?' }],
    });
    // What came before the compaction item is not read: only the item (16 + 4) and the new message.
    expect(next.usage?.input_tokens).toBeLessThan(40);
    await expect(
      client.responses.create({ model: 'gpt-5.2', store: false, input: [{ ...item, encrypted_content: `${item.encrypted_content}x` }] }),
    ).rejects.toMatchObject({ status: 400, code: 'invalid_encrypted_content' });
    await expect(
      client.responses.create({ model: 'gpt-5.2', input: 'x', context_management: [{ type: 'summary' }] } as never),
    ).rejects.toMatchObject({ status: 400, param: 'context_management[0].type' });
  });

  it('streams the compaction item whole in output_item.added and done, as recorded', async () => {
    const stream = await client.responses.create({
      model: 'gpt-5.2',
      input: long,
      stream: true,
      context_management: [{ type: 'compaction', compact_threshold: 10 }],
    });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const added = events.find((e) => e.type === 'response.output_item.added' && e.item.type === 'compaction');
    const done = events.find((e) => e.type === 'response.output_item.done' && e.item.type === 'compaction');
    expect(added && 'item' in added && added.item).toEqual(done && 'item' in done && done.item);
    expect(events.at(-1)?.type).toBe('response.completed');
  });

  it('answers responses.compact with every user message and one compaction item', async () => {
    const compacted = await client.responses.compact({
      model: 'gpt-5.2',
      input: [
        { role: 'user', content: 'I am Ann.' },
        { role: 'assistant', content: 'Hello Ann.' },
        { role: 'user', content: 'I live in Oslo.' },
      ],
    });
    expect(compacted.object).toBe('response.compaction');
    expect(compacted.output.map((o) => o.type)).toEqual(['message', 'message', 'compaction']);
    expect(compacted.output.slice(0, 2).map((o) => (o as OpenAI.Responses.ResponseOutputMessage).role)).toEqual(['user', 'user']);
    const next = await client.responses.create({
      model: 'gpt-5.2',
      store: false,
      input: [...compacted.output, { role: 'user', content: 'Where do I live?' }] as never,
    });
    expect(next.status).toBe('completed');
    expect(server.requests.at(-2)?.path).toBe('/v1/responses/compact');
  });

  it('registers the compaction item of the recorded body, so it verifies when sent back', async () => {
    server.enqueue({ replay: { status: 200, body: recordedBody('responses-compaction.json') } });
    const recorded = await client.responses.create({ model: 'gpt-5.2', store: false, input: 'Compare unit, integration and E2E tests.' });
    const item = recorded.output.find((o) => o.type === 'compaction') as OpenAI.Responses.ResponseCompactionItem;
    expect(item.encrypted_content).toHaveLength(41380);
    const next = await client.responses.create({
      model: 'gpt-5.2',
      store: false,
      input: [item, { role: 'user', content: 'Which first?' }],
    });
    expect(next.status).toBe('completed');
  });
});

describe('embeddings', () => {
  const texts = ['The cat sat on the mat', 'A cat sat on a mat', 'Quarterly revenue grew by ten percent'];

  it('returns float vectors for a batch, unit length, with similar texts closer than unrelated ones', async () => {
    const result = await client.embeddings.create({ model: 'text-embedding-3-small', input: texts, encoding_format: 'float' });
    expect(result).toMatchObject({ object: 'list', model: 'text-embedding-3-small' });
    expect(result.data.map((item) => [item.object, item.index])).toEqual([
      ['embedding', 0],
      ['embedding', 1],
      ['embedding', 2],
    ]);
    const [cat, cat2, revenue] = result.data.map((item) => item.embedding);
    expect(cat).toHaveLength(1536);
    expect(Math.hypot(...cat!)).toBeCloseTo(1, 5);
    expect(cosine(cat!, cat2!)).toBeGreaterThan(0.6);
    expect(cosine(cat!, revenue!)).toBeLessThan(0.2);
    expect(result.usage.prompt_tokens).toBe(result.usage.total_tokens);
    expect(result.usage.prompt_tokens).toBe(6 + 5 + 10);
    expect(server.requests[0]!.batchSize).toBe(3);
    expect(cat).toEqual(deterministicEmbedding(texts[0]!));
  });

  it('sends base64 (the SDK default) that the SDK decodes to the float values', async () => {
    const floats = await client.embeddings.create({ model: 'text-embedding-3-small', input: texts, encoding_format: 'float' });
    const decoded = await client.embeddings.create({ model: 'text-embedding-3-small', input: texts });
    expect(server.requests[1]!.body?.encoding_format).toBe('base64');
    decoded.data.forEach((item, index) => {
      const expected = floats.data[index]!.embedding;
      expect(item.embedding).toHaveLength(expected.length);
      expect(Math.max(...item.embedding.map((value, i) => Math.abs(value - expected[i]!)))).toBeLessThan(1e-6);
    });
    const explicit = await client.embeddings.create({ model: 'text-embedding-3-small', input: 'x', encoding_format: 'base64' });
    expect(typeof explicit.data[0]!.embedding).toBe('string');
  });

  it('honours dimensions, single-string input and the large model default', async () => {
    const small = await client.embeddings.create({ model: 'text-embedding-3-small', input: 'hello', dimensions: 256 });
    expect(small.data).toHaveLength(1);
    expect(small.data[0]!.embedding).toHaveLength(256);
    expect(server.requests[0]!.batchSize).toBe(1);
    const large = await client.embeddings.create({ model: 'text-embedding-3-large', input: ['hello'] });
    expect(large.data[0]!.embedding).toHaveLength(3072);
    await expect(client.embeddings.create({ model: 'text-embedding-3-small', input: [''] })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
  });
});

describe('errors', () => {
  it('401s a wrong key with the invalid_api_key body', async () => {
    const wrong = new OpenAI({ baseURL: server.url, apiKey: 'sk-wrong-key-123', maxRetries: 0 });
    const error = await wrong.models.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(error).toMatchObject({ status: 401, code: 'invalid_api_key', type: 'invalid_request_error', param: null });
    expect((error as Error).message).toContain('Incorrect API key provided: sk-*********-123');
  });

  it('returns a scripted 429 with its headers as RateLimitError', async () => {
    server.enqueue({ error: { status: 429, message: 'Rate limit reached for requests' }, headers: { 'retry-after-ms': '1' } });
    const error = await client.chat.completions
      .create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(error).toMatchObject({ status: 429, code: 'rate_limit_exceeded', type: 'requests' });
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).headers.get('retry-after-ms')).toBe('1');
  });

  it('consumes one queued error per attempt, so SDK retries see each one and the log shows every attempt', async () => {
    const retrying = new OpenAI({ baseURL: server.url, apiKey: 'test-key', maxRetries: 2 });
    const failure = { error: { status: 500, message: 'The server had an error' }, headers: { 'retry-after-ms': '1' } };
    server.enqueue(failure, failure, failure, { text: 'recovered' });
    const error = await retrying.chat.completions
      .create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect(error).toMatchObject({ status: 500, type: 'server_error' });
    expect(server.requests).toHaveLength(3);
    expect(server.requests.map((request) => request.headers['x-stainless-retry-count'])).toEqual(['0', '1', '2']);
    const ok = await retrying.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] });
    expect(ok.choices[0]!.message.content).toBe('recovered');
  });

  it('returns context-length errors as BadRequestError with code context_length_exceeded', async () => {
    server.enqueue(contextLengthExceeded({ requestedTokens: 130_000 }));
    const error = await client.chat.completions
      .create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ code: 'context_length_exceeded', param: 'messages' });
    expect((error as Error).message).toContain(
      "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
    );
    server.enqueue(contextLengthExceeded({ api: 'responses' }));
    await expect(client.responses.create({ model: 'gpt-4.1', input: 'x' })).rejects.toMatchObject({
      code: 'context_length_exceeded',
      param: 'input',
    });
  });

  it('answers unknown routes with 404 and invalid JSON with 400, in the OpenAI error format', async () => {
    await expect(client.get('/nope')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    const response = await fetch(`${server.url}/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer test-key', 'content-type': 'application/json' },
      body: '{"model": ',
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({ type: 'invalid_request_error', param: null, code: null });
    expect(body.error.message).toContain('We could not parse the JSON body of your request.');
    expect(server.requests.at(-1)!.body).toBeUndefined();
  });

  it('makes SDK stream iteration throw on truncated and garbage streams', { timeout: 5000 }, async () => {
    const quiet = new OpenAI({ baseURL: server.url, apiKey: 'test-key', maxRetries: 0, logLevel: 'off' });
    const drain = async (mode: 'truncated' | 'garbage'): Promise<unknown> => {
      server.enqueue({ malformedStream: mode });
      const stream = await quiet.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }], stream: true });
      const contents: string[] = [];
      try {
        for await (const chunk of stream) contents.push(chunk.choices[0]?.delta.content ?? '');
      } catch (error) {
        expect(contents.join('')).toBe('This reply is');
        return error;
      }
      return undefined;
    };
    expect(await drain('truncated')).toBeInstanceOf(Error);
    expect(await drain('garbage')).toBeInstanceOf(SyntaxError);

    server.enqueue({ malformedStream: 'truncated' });
    const responses = await quiet.responses.create({ model: 'gpt-4.1', input: 'x', stream: true });
    await expect(
      (async () => {
        for await (const event of responses) void event;
      })(),
    ).rejects.toThrow();
    server.enqueue({ malformedStream: 'garbage' });
    await expect(quiet.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] })).rejects.toThrow();
  });

  it('holds delayed replies and notices when the client aborts or times out', { timeout: 5000 }, async () => {
    server.enqueue({ delayMs: 60_000, reply: { text: 'too late' } });
    const controller = new AbortController();
    const pending = client.chat.completions.create(
      { model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] },
      { signal: controller.signal },
    );
    setTimeout(() => controller.abort(), 50);
    await expect(pending).rejects.toBeInstanceOf(OpenAI.APIUserAbortError);
    await until(() => server.requests[0]?.aborted === true);

    server.enqueue({ delayMs: 60_000, reply: { text: 'too late' } });
    await expect(
      client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] }, { timeout: 100 }),
    ).rejects.toBeInstanceOf(OpenAI.APIConnectionTimeoutError);

    server.enqueue({ delayMs: 30, reply: { text: 'worth the wait' } });
    const done = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] });
    expect(done.choices[0]!.message.content).toBe('worth the wait');
  });

  it('stops a stream when the client aborts mid-way', { timeout: 5000 }, async () => {
    server.enqueue({ text: 'one two three four five six seven eight nine ten', streamDelayMs: 50 });
    const stream = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'count' }],
      stream: true,
    });
    let received = 0;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) received++;
      if (received === 2) break;
    }
    await until(() => server.requests[0]?.aborted === true);
    expect(received).toBe(2);
  });
});

describe('failures after the request was accepted', () => {
  const quota = { code: 'insufficient_quota', message: 'You exceeded your current quota, please check your plan and billing details.' };

  it('streams response.created, in_progress, partial text, a nested error event and response.failed; the SDK throws at the error', async () => {
    server.enqueue({ failure: { ...quota, textBefore: 'Half an answer' } });
    const response = await fetch(`${server.url}/responses`, {
      method: 'POST',
      headers: { authorization: 'Bearer test-key', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4.1', input: 'x', stream: true }),
    });
    expect(response.status).toBe(200);
    const frames = (await response.text()).split('\n\n').filter(Boolean);
    const events = frames.map((frame) => {
      const [eventLine, dataLine] = frame.split('\n');
      const data = JSON.parse(dataLine!.slice('data: '.length)) as Record<string, unknown>;
      expect(eventLine).toBe(`event: ${String(data.type)}`);
      return data;
    });
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    expect(events.map((event) => event.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.delta',
      'error',
      'response.failed',
    ]);
    expect(events[7]).toEqual({
      type: 'error',
      sequence_number: 7,
      error: { type: 'insufficient_quota', code: 'insufficient_quota', message: quota.message, param: null },
    });
    expect(events[8]!.response).toMatchObject({ status: 'failed', error: quota, output: [], usage: null });

    server.enqueue({ failure: quota });
    const stream = await client.responses.create({ model: 'gpt-4.1', input: 'x', stream: true });
    const seen: string[] = [];
    const error = await (async () => {
      for await (const event of stream) seen.push(event.type);
    })().catch((e: unknown) => e);
    expect(seen).toEqual(['response.created', 'response.in_progress']);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error).toMatchObject({ status: undefined, code: 'insufficient_quota', type: 'insufficient_quota' });
  });

  it('sends the flat error event the SDK types declare, or only response.failed, which the SDK passes on as events', async () => {
    server.enqueue(
      { failure: { code: 'server_error', message: 'The server had an error.', errorEvent: 'flat' } },
      { failure: { code: 'server_error', message: 'The server had an error.', errorEvent: 'none' } },
    );
    for (const expected of [['error', 'response.failed'], ['response.failed']]) {
      const stream = await client.responses.create({ model: 'gpt-4.1', input: 'x', stream: true });
      const events = [];
      for await (const event of stream) events.push(event);
      expect(events.slice(2).map((event) => event.type)).toEqual(expected);
      const last = events.at(-1)!;
      expect(last.type === 'response.failed' && last.response.error).toEqual({ code: 'server_error', message: 'The server had an error.' });
      if (expected.length === 2)
        expect(events[2]).toMatchObject({ code: 'server_error', message: 'The server had an error.', param: null });
    }
  });

  it('answers a plain Responses call with a 200 failed response, which is not stored', async () => {
    server.enqueue({ failure: { code: 'vector_store_timeout', message: 'The file search timed out.' } });
    const response = await client.responses.create({ model: 'gpt-4.1', input: 'x' });
    expect(response).toMatchObject({
      status: 'failed',
      error: { code: 'vector_store_timeout', message: 'The file search timed out.' },
      output: [],
    });
    await expect(client.responses.retrieve(response.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('breaks a chat stream off with an error frame after the partial text; plain calls get the HTTP error', async () => {
    server.enqueue({ failure: { code: null, message: 'The server had an error while processing your request.', textBefore: 'Half' } });
    const response = await fetch(`${server.url}/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer test-key', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }], stream: true }),
    });
    const text = await response.text();
    expect(text).not.toContain('[DONE]');
    expect(text).not.toContain('finish_reason":"');
    expect(text.trim().split('\n\n').at(-1)).toBe(
      'data: {"error":{"type":"server_error","code":null,"message":"The server had an error while processing your request.","param":null}}',
    );

    server.enqueue({ failure: { code: 'rate_limit_exceeded', message: 'Rate limit reached.', textBefore: 'Some text here' } });
    const stream = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }], stream: true });
    const contents: string[] = [];
    const error = await (async () => {
      for await (const chunk of stream) contents.push(chunk.choices[0]?.delta.content ?? '');
    })().catch((e: unknown) => e);
    expect(contents.join('')).toBe('Some text here');
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error).toMatchObject({ status: undefined, code: 'rate_limit_exceeded', type: 'requests' });

    const plain = async (code: string | null) => {
      server.enqueue({ failure: { code, message: 'm' } });
      return client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    };
    expect(await plain('insufficient_quota')).toMatchObject({ status: 429, code: 'insufficient_quota', type: 'insufficient_quota' });
    expect(await plain('server_error')).toMatchObject({ status: 500, type: 'server_error' });
    expect(await plain('context_length_exceeded')).toMatchObject({ status: 400, type: 'invalid_request_error' });
  });
});

describe('recorded replays', () => {
  it('replays a recorded Responses stream framed as the service does, which the SDK stream helper completes', async () => {
    const events = recordedEvents('responses-text-stream.chunks.txt');
    server.enqueue({ replay: { events } });
    const final = await client.responses.stream({ model: 'gpt-4.1', input: 'x' }).finalResponse();
    const completed = events.at(-1)!;
    expect(completed.type).toBe('response.completed');
    expect(final.id).toBe((completed.response as { id: string }).id);
    expect(final.output_text.length).toBeGreaterThan(0);
  });

  it('replays the recorded in-stream quota error: the SDK throws at its error event', async () => {
    const events = recordedEvents('responses-error-insufficient-quota-stream.chunks.txt');
    expect(events.map((event) => event.type)).toEqual(['response.created', 'response.in_progress', 'error', 'response.failed']);
    server.enqueue({ replay: { events } });
    const stream = await client.responses.create({ model: 'gpt-4.1', input: 'x', stream: true });
    const error = await (async () => {
      for await (const event of stream) void event;
    })().catch((e: unknown) => e);
    expect(error).toMatchObject({ status: undefined, code: 'insufficient_quota', type: 'insufficient_quota' });
  });

  it('replays recorded error bodies with the status they are sent with', async () => {
    server.enqueue(
      { replay: { status: 429, body: recordedBody('responses-error-insufficient-quota.json') } },
      { replay: { status: 400, body: recordedBody('chat-error-unsupported-parameter.json') } },
    );
    await expect(client.responses.create({ model: 'gpt-4.1', input: 'x' })).rejects.toMatchObject({
      status: 429,
      code: 'insufficient_quota',
    });
    const error = await client.chat.completions.create({ model: 'o4-mini', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ code: 'unsupported_parameter', param: 'max_tokens' });
  });

  it('refuses names outside fixtures/', () => {
    expect(() => recordedBody('../package.json')).toThrow(/Not a recording name/);
  });
});

describe('Azure and other client flavours', () => {
  it('serves AzureOpenAI chat and embeddings on deployment paths with the api-key header', async () => {
    const azure = new AzureOpenAI({
      endpoint: server.origin,
      apiKey: 'test-key',
      deployment: 'gpt-4o',
      apiVersion: '2024-10-21',
      maxRetries: 0,
    });
    server.enqueue({ text: 'Hello from Azure' });
    const completion = await azure.chat.completions.create({ model: '', messages: [{ role: 'user', content: 'hi' }] });
    expect(completion.choices[0]!.message.content).toBe('Hello from Azure');
    const [request] = server.requests;
    expect(request).toMatchObject({
      path: '/openai/deployments/gpt-4o/chat/completions',
      query: { 'api-version': '2024-10-21' },
      route: '/chat/completions',
      deployment: 'gpt-4o',
    });
    expect(request!.headers['api-key']).toBe('test-key');
    expect(request!.headers.authorization).toBeUndefined();

    const embedder = new AzureOpenAI({ endpoint: server.origin, apiKey: 'test-key', deployment: 'embed-small', apiVersion: '2024-10-21' });
    const embedded = await embedder.embeddings.create({ model: 'text-embedding-3-small', input: ['a', 'b'] });
    expect(embedded.data).toHaveLength(2);
    expect(server.requests[1]).toMatchObject({ path: '/openai/deployments/embed-small/embeddings', batchSize: 2 });

    const wrong = new AzureOpenAI({
      endpoint: server.origin,
      apiKey: 'nope',
      deployment: 'gpt-4o',
      apiVersion: '2024-10-21',
      maxRetries: 0,
    });
    await expect(wrong.chat.completions.create({ model: '', messages: [{ role: 'user', content: 'hi' }] })).rejects.toBeInstanceOf(
      OpenAI.AuthenticationError,
    );
  });

  it('serves the Azure v1 path style and lists models', async () => {
    const v1 = new OpenAI({ baseURL: `${server.origin}/openai/v1`, apiKey: 'test-key', maxRetries: 0 });
    const response = await v1.responses.create({ model: 'gpt-4.1', input: 'hello' });
    expect(response.output_text).toBe('You said: hello');
    expect(server.requests[0]).toMatchObject({ path: '/openai/v1/responses', route: '/responses' });
    const models = [];
    for await (const model of client.models.list()) models.push(model.id);
    expect(models).toContain('gpt-4o');
    expect(models).toContain('text-embedding-3-small');
  });
});

describe('deterministicEmbedding', () => {
  it('is deterministic, unit length, and ranks shared vocabulary above unrelated text', () => {
    const query = deterministicEmbedding('How do I reset my password?', 512);
    expect(deterministicEmbedding('How do I reset my password?', 512)).toEqual(query);
    expect(Math.hypot(...query)).toBeCloseTo(1, 5);
    const related = cosine(query, deterministicEmbedding('Password reset instructions', 512));
    const unrelated = cosine(query, deterministicEmbedding('Best pizza toppings in Naples', 512));
    expect(related).toBeGreaterThan(unrelated + 0.3);
  });
});

describe('reuseIds', () => {
  it('answers every completion, streamed or not, and every response with one id, as some compatible servers do', async () => {
    const reusing = await startOpenAITestServer({ reuseIds: true });
    try {
      const sdk = new OpenAI({ baseURL: reusing.url, apiKey: 'test-key', maxRetries: 0 });
      const ask = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'hi' }] };
      const ids = [(await sdk.chat.completions.create(ask)).id, (await sdk.chat.completions.create(ask)).id];
      for await (const chunk of await sdk.chat.completions.create({ ...ask, stream: true })) ids.push(chunk.id);
      expect(new Set(ids)).toEqual(new Set(['chatcmpl-reused']));
      const responses = [
        (await sdk.responses.create({ model: 'gpt-4o-mini', input: 'a', store: false })).id,
        (await sdk.responses.create({ model: 'gpt-4o-mini', input: 'b', store: false })).id,
      ];
      expect(responses).toEqual(['resp_reused', 'resp_reused']);
    } finally {
      await reusing.close();
    }
    // Without the option, every answer has its own id.
    const ask = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'hi' }] };
    expect((await client.chat.completions.create(ask)).id).not.toBe((await client.chat.completions.create(ask)).id);
  });
});
