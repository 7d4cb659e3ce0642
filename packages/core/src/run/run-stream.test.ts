import { describe, expect, it } from 'vitest';
import { Message } from '../messages/message.js';
import type { ChatClient, ChatResponseUpdate } from '../spec/chat-client.js';
import { createAgent } from './create-agent.js';

/** A streaming client of `count` one-word updates that counts how many it has produced. */
function countingClient(count: number, options: { ignoreAbort?: boolean } = {}) {
  const state = { produced: 0 };
  const client: ChatClient = {
    specificationVersion: 'v1',
    provider: 'test',
    modelId: 'counting',
    getResponse: async () => ({ messages: [Message.assistant('unused')] }),
    async *getStreamingResponse(_messages, chatOptions): AsyncIterable<ChatResponseUpdate> {
      for (let i = 0; i < count; i++) {
        if (!options.ignoreAbort) chatOptions.signal?.throwIfAborted();
        await new Promise((resolve) => setImmediate(resolve));
        state.produced++;
        yield { messageId: 'm1', role: 'assistant', contents: [{ type: 'text', text: `w${i} ` }] };
      }
    },
  };
  return { client, state };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 2));

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
    expect(Math.max(...aheadBy)).toBe(1);
    expect((await stream.response).text).toBe(Array.from({ length: 12 }, (_, i) => `w${i} `).join(''));
  });

  it('keeps the updates of a run that went on before the caller iterated, in order', async () => {
    const { client } = countingClient(5);
    const agent = createAgent({ client });
    const stream = agent.runStream('go');
    const response = await stream.response;
    const texts: string[] = [];
    for await (const update of stream) for (const c of update.contents) if (c.type === 'text') texts.push(c.text);
    expect(texts).toEqual(['w0 ', 'w1 ', 'w2 ', 'w3 ', 'w4 ']);
    expect(response.text).toBe(texts.join(''));
  });

  it('ends a run whose client ignores the abort once the caller stops reading, storing nothing', async () => {
    const { client, state } = countingClient(1_000, { ignoreAbort: true });
    const agent = createAgent({ client });
    const session = agent.createSession();
    const stream = agent.runStream('go', { session });
    for await (const _ of stream) break;
    await expect(stream.response).rejects.toThrow(/stopped reading/);
    expect(state.produced).toBeLessThan(5);
    expect(session.state.memory?.messages ?? []).toEqual([]);
  });
});
