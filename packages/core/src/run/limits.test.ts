import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigurationError, InvalidInputError } from '../errors.js';
import { InMemoryHistoryProvider } from '../history/in-memory-history-provider.js';
import { Message } from '../messages/message.js';
import { InMemorySessionStore } from '../session/in-memory-session-store.js';
import type { AgentEvent } from '../contracts/events.js';
import type { FunctionResultContent } from '../contracts/message.js';
import type { ContextProvider } from '../contracts/run-view.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { defineTool } from '../tools/define-tool.js';
import { createAgent } from './create-agent.js';
import { DEFAULT_LIMITS } from './limits.js';

const MiB = 1024 * 1024;

/** A provider that records whether any hook saw the run. */
function probe() {
  const seen: string[] = [];
  const provider: ContextProvider = {
    sourceId: 'probe',
    beforeRun: () => void seen.push('beforeRun'),
    afterRun: () => void seen.push('afterRun'),
  };
  return { seen, provider };
}

async function rejection(run: Promise<unknown>): Promise<InvalidInputError> {
  const error = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(InvalidInputError.isInstance(error)).toBe(true);
  return error as InvalidInputError;
}

describe('limits: a run input over a limit', () => {
  it('refuses a pasted 30 MB message by default, before any provider, store or model sees it', async () => {
    const client = new ScriptedChatClient({ replies: ['never'] });
    const store = new InMemorySessionStore();
    const history = new InMemoryHistoryProvider({ sourceId: 'history' });
    const { seen, provider } = probe();
    const agent = createAgent({ client, contextProviders: [history, provider], sessionStore: store, persistence: 'model-call' });
    const session = agent.createSession({ sessionId: 'big' });
    const pasted = Message.user('x'.repeat(30 * MiB), { id: 'paste-1' });
    const error = await rejection(agent.run([Message.user('hi', { id: 'hi-1' }), pasted], { session }));
    expect(error.limit).toBe('maxMessageBytes');
    expect(error.message).toMatch(
      /^Run input message 1 \(id "paste-1"\) is at least 31457\d+ bytes of JSON, over limits\.maxMessageBytes \(8388608 bytes, 8 MiB\)/,
    );
    expect(client.calls).toHaveLength(0);
    expect(seen).toEqual([]);
    expect(await store.get('big')).toBeUndefined();
    expect(session.state).toEqual({});

    // A plain string is measured the same way; a streaming run fails the same.
    await rejection(agent.run('y'.repeat(9 * MiB), { session: agent.createSession() }));
    const stream = agent.runStream(pasted, { session: agent.createSession() });
    await rejection(stream.response);
    expect(client.calls).toHaveLength(0);
  });

  it('counts data parts (base64 files) and the whole input against maxInputBytes', async () => {
    const client = new ScriptedChatClient({ replies: ['ok'] });
    const agent = createAgent({ client, limits: { maxMessageBytes: 2000, maxInputBytes: 3000 } });
    const image = (id: string, bytes: number) => Message.user([{ type: 'data', mediaType: 'image/png', data: 'A'.repeat(bytes) }], { id });
    const one = await rejection(agent.run(image('img', 2500)));
    expect(one.limit).toBe('maxMessageBytes');
    expect(one.message).toMatch(
      /message 0 \(id "img"\) is at least 25\d\d bytes of JSON, over limits\.maxMessageBytes \(2000 bytes, 2 KiB\)/,
    );

    const total = await rejection(agent.run([image('a', 1200), image('b', 1200), image('c', 1200)]));
    expect(total.limit).toBe('maxInputBytes');
    expect(total.message).toMatch(
      /Run input of 3 messages is at least \d+ bytes of JSON by message 2 \(id "c"\), over limits\.maxInputBytes \(3000 bytes/,
    );
    expect(client.calls).toHaveLength(0);

    // Within both limits: it runs.
    await agent.run([image('a', 1200), image('b', 1200)]);
    expect(client.calls).toHaveLength(1);
  });

  it('gives malformed run input an InvalidInputError naming the path', async () => {
    const client = new ScriptedChatClient({ replies: ['never'] });
    const agent = createAgent({ client });
    const error = await rejection(agent.run({ id: 'm1', role: 'user', contents: [{ type: 'text' }] } as never));
    expect(error.message).toMatch(/^Invalid run input at \$\.input\[0\]\.contents\[0\]/);
    expect(error.limit).toBeUndefined();
  });

  it('checks the limits given to createAgent', async () => {
    const client = new ScriptedChatClient({ replies: [] });
    for (const limits of [{ maxMessageBytes: 0 }, { maxInputBytes: 1.5 }, { maxMessageBytes: 10, maxInputBytes: 5 }, 'big']) {
      expect(() => createAgent({ client, limits: limits as never })).toThrow(ConfigurationError);
    }
    expect(DEFAULT_LIMITS).toEqual({ maxMessageBytes: 8 * MiB, maxInputBytes: 16 * MiB });
    // A larger message limit alone raises the input limit with it: 18 MiB of input passes the 16 MiB default.
    const roomy = createAgent({ client: new ScriptedChatClient({ replies: ['ok'] }), limits: { maxMessageBytes: 20 * MiB } });
    const res = await roomy.run([Message.user('a'.repeat(9 * MiB)), Message.user('b'.repeat(9 * MiB))]);
    expect(res.text).toBe('ok');
  });
});

describe('limits: a string input', () => {
  it('is refused exactly when the message made of it weighs more than the limit, whatever its characters', async () => {
    // Characters JSON writes as 1 to 6 bytes: letters, quotes, control characters, emoji, lone surrogates.
    const unit = fc.constantFrom('a', '"', '\\', '\n', '\u0001', '\u00e9', '\u4e2d', '\ud83d\ude00', '\ud800');
    await fc.assert(
      fc.asyncProperty(fc.string({ unit, maxLength: 200, size: 'max' }), fc.integer({ min: -40, max: 40 }), async (input, delta) => {
        // The message the run makes has an id and a time of the same length as these.
        const bytes = Buffer.byteLength(JSON.stringify(Message.user(input)));
        const limit = bytes + delta;
        const client = new ScriptedChatClient({ replies: ['ok'] });
        const agent = createAgent({ client, limits: { maxMessageBytes: limit, maxInputBytes: limit } });
        const outcome = await agent.run(input).then(
          () => 'ran',
          (e: unknown) => (e instanceof InvalidInputError ? 'refused' : e),
        );
        expect(outcome).toBe(delta < 0 ? 'refused' : 'ran');
      }),
      { numRuns: 300 },
    );
  });
});

describe('limits: a tool result over maxMessageBytes', () => {
  it('becomes an error result the model sees, naming the limit; the run goes on', async () => {
    const dump = defineTool({ name: 'dump', parameters: { type: 'object' }, execute: () => ({ rows: 'r'.repeat(5000) }) });
    const small = defineTool({ name: 'small', parameters: { type: 'object' }, execute: () => 'fine' });
    const client = new ScriptedChatClient({
      replies: [
        {
          toolCalls: [
            { name: 'dump', callId: 'c1' },
            { name: 'small', callId: 'c2' },
          ],
        },
        'Too much data; here is what fit.',
      ],
    });
    const events: AgentEvent[] = [];
    const agent = createAgent({ client, tools: [dump, small], limits: { maxMessageBytes: 4000 }, onEvent: (e) => events.push(e) });
    const res = await agent.run('go', { session: agent.createSession() });
    expect(res.text).toBe('Too much data; here is what fit.');
    const sent = client.calls[1]!.messages.flatMap((m) =>
      m.contents.filter((c): c is FunctionResultContent => c.type === 'function-result'),
    );
    expect(sent.map((r) => [r.callId, r.isError ?? false])).toEqual([
      ['c1', true],
      ['c2', false],
    ]);
    expect((sent[0]!.result as { error: string }).error).toMatch(
      /^Tool "dump" returned at least \d+ bytes of JSON, over the agent's limits\.maxMessageBytes \(4000 bytes, 3\.9 KiB\)/,
    );
    const ended = events.filter((e) => e.type === 'tool-end' && e.callId === 'c1');
    expect(ended).toHaveLength(1);
    expect(ended[0]!.type === 'tool-end' && (ended[0]!.error as Error).name).toBe('ToolExecutionError');
  });
});
