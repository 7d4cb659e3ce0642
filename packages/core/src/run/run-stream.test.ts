import { describe, expect, it } from 'vitest';
import { Message } from '../messages/message.js';
import type { ChatClient, ChatResponseUpdate } from '../contracts/chat-client.js';
import { defineTool } from '../tools/define-tool.js';
import { createAgent } from './create-agent.js';

/** A client whose streaming calls go to `stream`; plain calls are not used. */
function streamingClient(modelId: string, stream: ChatClient['getStreamingResponse']): ChatClient {
  return {
    specificationVersion: 'v1',
    provider: 'test',
    modelId,
    getResponse: async () => ({ messages: [Message.assistant('unused')] }),
    getStreamingResponse: stream,
  };
}

/**
 * A streaming client of `count` one-word updates that counts how many it has produced, and
 * whether its stream was closed. With `hangAt`, it never answers that read.
 */
function countingClient(count: number, options: { ignoreAbort?: boolean; hangAt?: number } = {}) {
  const state = { produced: 0, closed: false };
  const client = streamingClient('counting', async function* (_messages, chatOptions): AsyncIterable<ChatResponseUpdate> {
    try {
      for (let i = 0; i < count; i++) {
        if (!options.ignoreAbort) chatOptions.signal?.throwIfAborted();
        if (i === options.hangAt) await new Promise(() => {});
        await new Promise((resolve) => setImmediate(resolve));
        state.produced++;
        yield { messageId: 'm1', role: 'assistant', contents: [{ type: 'text', text: `w${i} ` }] };
      }
    } finally {
      state.closed = true;
    }
  });
  return { client, state };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 2));
const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i} `);
const textOf = (update: ChatResponseUpdate) => update.contents.map((c) => (c.type === 'text' ? c.text : '')).join('');

describe('runStream', () => {
  it('keeps the run at most one update ahead of a caller that reads slowly', async () => {
    const { client, state } = countingClient(12);
    const agent = createAgent({ client });
    const stream = agent.runStream('go', { session: agent.createSession() });
    let taken = 0;
    const aheadBy: number[] = [];
    for await (const _ of stream) {
      taken++;
      for (let i = 0; i < 3; i++) await tick();
      aheadBy.push(state.produced - taken);
    }
    expect(taken).toBe(12);
    expect(Math.max(...aheadBy)).toBeLessThanOrEqual(1);
    expect((await stream.response).text).toBe(words(12).join(''));
  });

  it('reads the client only when the caller reads, once it iterates', async () => {
    const { client, state } = countingClient(8);
    const agent = createAgent({ client });
    const stream = agent.runStream('go');
    const producedWhenTaken: number[] = [];
    let taken = 0;
    for await (const _ of stream) {
      taken++;
      await tick();
      producedWhenTaken.push(state.produced - taken);
    }
    expect(producedWhenTaken).toEqual(Array(8).fill(0));
    expect(state.closed).toBe(true);
  });

  it('keeps the updates of a run that went on before the caller iterated, in order', async () => {
    const { client } = countingClient(5);
    const agent = createAgent({ client });
    const stream = agent.runStream('go');
    const response = await stream.response;
    const texts: string[] = [];
    for await (const update of stream) texts.push(textOf(update));
    expect(texts).toEqual(words(5));
    expect(response.text).toBe(texts.join(''));
  });

  it('hands over to a caller that starts iterating while the model streams: every update once, in order', async () => {
    const { client, state } = countingClient(10);
    const agent = createAgent({ client });
    const stream = agent.runStream('go');
    while (state.produced < 4) await new Promise((resolve) => setImmediate(resolve));
    const texts: string[] = [];
    for await (const update of stream) texts.push(textOf(update));
    expect(texts).toEqual(words(10));
    expect((await stream.response).text).toBe(words(10).join(''));
  });

  it('streams tool messages between model calls, and the second call through the caller too', async () => {
    let call = 0;
    const client = streamingClient('tools', async function* (): AsyncIterable<ChatResponseUpdate> {
      if (call++ === 0) {
        yield {
          messageId: 'a1',
          role: 'assistant',
          contents: [{ type: 'function-call', callId: 'c1', name: 'add', arguments: '{"a":2,' }],
        };
        yield { messageId: 'a1', contents: [{ type: 'function-call', callId: 'c1', name: '', arguments: '"b":3}' }] };
        yield { contents: [], finishReason: 'tool-calls', usage: { inputTokens: 4, outputTokens: 2 } };
      } else {
        yield { messageId: 'a2', role: 'assistant', contents: [{ type: 'text', text: 'It is ' }] };
        yield { messageId: 'a2', contents: [{ type: 'text', text: '5.' }] };
        yield { contents: [], finishReason: 'stop', usage: { inputTokens: 9, outputTokens: 3 } };
      }
    });
    const add = defineTool({ name: 'add', parameters: { type: 'object' }, execute: ({ a, b }: { a: number; b: number }) => a + b });
    const agent = createAgent({ client, tools: [add] });
    const stream = agent.runStream('2 + 3?');
    const seen: string[] = [];
    for await (const update of stream) seen.push(`${update.role ?? '-'}:${update.contents.map((c) => c.type).join(',')}`);
    expect(seen).toEqual(['assistant:function-call', '-:function-call', '-:', 'tool:function-result', 'assistant:text', '-:text', '-:']);
    const response = await stream.response;
    expect(response.messages.map((m) => [m.role, m.id])).toEqual([
      ['assistant', 'a1'],
      ['tool', response.messages[1]!.id],
      ['assistant', 'a2'],
    ]);
    expect(response.messages[0]!.contents).toEqual([{ type: 'function-call', callId: 'c1', name: 'add', arguments: '{"a":2,"b":3}' }]);
    expect(response.messages[1]!.contents).toMatchObject([{ type: 'function-result', callId: 'c1', result: 5 }]);
    expect(response).toMatchObject({ text: 'It is 5.', finishReason: 'stop', usage: { inputTokens: 13, outputTokens: 5 } });
  });

  it('ends a run whose client ignores the abort once the caller stops reading, storing nothing', async () => {
    const { client, state } = countingClient(1_000, { ignoreAbort: true });
    const agent = createAgent({ client });
    const session = agent.createSession();
    const stream = agent.runStream('go', { session });
    for await (const _ of stream) break;
    await expect(stream.response).rejects.toThrow(/stopped reading/);
    expect(state.produced).toBeLessThan(5);
    expect(state.closed).toBe(true);
    expect(session.state.memory?.messages ?? []).toEqual([]);
  });

  it('ends the run when its signal aborts while the client, ignoring it, never answers', async () => {
    const { client } = countingClient(10, { ignoreAbort: true, hangAt: 3 });
    const agent = createAgent({ client });
    const session = agent.createSession();
    const controller = new AbortController();
    const stream = agent.runStream('go', { session, signal: controller.signal });
    const iterator = stream[Symbol.asyncIterator]();
    for (let i = 0; i < 3; i++) expect((await iterator.next()).done).toBe(false);
    void iterator.next(); // waits on the client, which never answers
    setTimeout(() => controller.abort(new Error('user left')), 5);
    await expect(stream.response).rejects.toThrow('user left');
    expect(session.state.memory?.messages ?? []).toEqual([]);
  });

  it('fails the run with the error of a client that fails mid-stream, through iteration and response', async () => {
    const client = streamingClient('failing', async function* (): AsyncIterable<ChatResponseUpdate> {
      yield { messageId: 'm1', role: 'assistant', contents: [{ type: 'text', text: 'Hal' }] };
      throw new Error('connection reset');
    });
    const stream = createAgent({ client }).runStream('go');
    const texts: string[] = [];
    const iterated = (async () => {
      for await (const update of stream) texts.push(textOf(update));
    })();
    await expect(iterated).rejects.toThrow('connection reset');
    await expect(stream.response).rejects.toThrow('connection reset');
    expect(texts).toEqual(['Hal']);
  });
});
