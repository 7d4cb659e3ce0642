/**
 * @ctx/ai-sdk: what ctx adds to a model call beside the bare AI SDK call, in client CPU time
 * (`cpu-compare.ts`: one process, sides alternating call by call, median and p90). The realistic
 * rows use `@ai-sdk/openai`'s Chat Completions model, its `fetch` answering with what the real
 * service sent (`replay-fetch.ts`: the recorded 302-chunk SSE stream, four frames per read, and the
 * recorded JSON reply), so every side parses and validates the same real traffic and nothing but
 * client work is timed. The worst-case rows use the AI SDK's `MockLanguageModelV3` answering a
 * one-line reply at once: ctx's own work over almost nothing. Beside ctx, two references: the
 * logging middleware of the AI SDK's own guide (a simple middleware that reads the whole answer)
 * and, for `generateText`, ctx's message conversion alone, without a run. Prints tables; never
 * asserts timings.
 */
import { createOpenAI } from '@ai-sdk/openai';
import { aiSdkChatClient, ctxMiddleware } from '@ctx/ai-sdk';
import { AgentSession, createAgent, type JsonObject, Message } from '@ctx/core';
import {
  generateText,
  jsonSchema,
  type LanguageModel,
  type LanguageModelMiddleware,
  type ModelMessage,
  stepCountIs,
  streamText,
  tool,
  wrapLanguageModel,
} from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { CPU_HEADERS, type CpuSide, compareCpu, cpuCells } from './cpu-compare.js';
import { jsonBody, replay, sseBody } from './replay-fetch.js';
import { printTable } from './timing.js';

const QUESTION = 'Invent a new holiday and describe its traditions.';
const SHORT_REPLY = 'Shipping to Norway takes 5 working days.';

/** `@ai-sdk/openai`'s Chat Completions model answering every call with the recorded `reads`. */
function recordedModel(reads: Uint8Array[], contentType: string) {
  return createOpenAI({ apiKey: 'bench-key', baseURL: 'http://replay.invalid/v1', fetch: replay(reads, contentType) }).chat('gpt-4o-mini');
}

/** A mock model that answers `text` at once, from `doGenerate` and (one delta) from `doStream`. */
function instantModel(text: string) {
  const usage = {
    inputTokens: { total: 20, noCache: 20, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: 9, text: 9, reasoning: undefined },
  };
  const finishReason = { unified: 'stop', raw: 'stop' } as const;
  return new MockLanguageModelV3({
    doGenerate: async () => ({ content: [{ type: 'text', text }], finishReason, usage, warnings: [] }),
    doStream: async () => ({
      stream: new ReadableStream({
        start(controller) {
          controller.enqueue({ type: 'stream-start', warnings: [] });
          controller.enqueue({ type: 'text-start', id: 't' });
          controller.enqueue({ type: 'text-delta', id: 't', delta: text });
          controller.enqueue({ type: 'text-end', id: 't' });
          controller.enqueue({ type: 'finish', finishReason, usage });
          controller.close();
        },
      }),
    }),
  });
}

/** One part of a model's stream, as a middleware's `wrapStream` passes it on. */
type StreamPart =
  Awaited<ReturnType<NonNullable<LanguageModelMiddleware['wrapStream']>>>['stream'] extends ReadableStream<infer P> ? P : never;

/**
 * The logging middleware of the AI SDK's own middleware guide (`ai` 6, "Logging"), its console
 * output (and the `JSON.stringify` of the call's options that goes into it) left out: it reads every
 * part of a stream through a `TransformStream`, collecting the text of each block, and the text of
 * a generated answer. A simple, documented middleware that reads the whole answer, as ctx must to
 * assemble it.
 */
function loggingMiddleware(): LanguageModelMiddleware {
  const logged: string[] = [];
  return {
    specificationVersion: 'v3',
    wrapGenerate: async ({ doGenerate }) => {
      const result = await doGenerate();
      logged[0] = result.content
        .filter((part) => part.type === 'text')
        .map((part) => part.text)
        .join('');
      return result;
    },
    wrapStream: async ({ doStream }) => {
      const { stream, ...rest } = await doStream();
      let generatedText = '';
      const textBlocks = new Map<string, string>();
      const transformStream = new TransformStream<StreamPart, StreamPart>({
        transform(chunk, controller) {
          if (chunk.type === 'text-start') textBlocks.set(chunk.id, '');
          else if (chunk.type === 'text-delta') {
            textBlocks.set(chunk.id, (textBlocks.get(chunk.id) || '') + chunk.delta);
            generatedText += chunk.delta;
          } else if (chunk.type === 'text-end') logged[1] = textBlocks.get(chunk.id) ?? '';
          controller.enqueue(chunk);
        },
        flush() {
          logged[0] = generatedText;
        },
      });
      return { stream: stream.pipeThrough(transformStream), ...rest };
    },
  };
}

/**
 * ctx's message conversion on its own: the question becomes a ctx message, and `aiSdkChatClient`
 * makes the prompt from it and a ctx message of the answer, with no run, no pipeline and nothing
 * stored. The generated result goes back to the AI SDK as it came.
 */
function ctxMessagesOnly(): LanguageModelMiddleware {
  const clients = new WeakMap<object, ReturnType<typeof aiSdkChatClient>>();
  return {
    specificationVersion: 'v3',
    wrapGenerate: async ({ model, params }) => {
      const { prompt, ...rest } = params;
      const question = prompt.flatMap((m) => (m.role === 'user' ? m.content : [])).find((part) => part.type === 'text');
      let client = clients.get(model);
      if (!client) clients.set(model, (client = aiSdkChatClient(model, { maxRetries: 0 })));
      const response = await client.getResponse([Message.user(question?.text ?? '')], { additional: rest as JsonObject });
      return response.raw as Awaited<ReturnType<typeof model.doGenerate>>;
    },
  };
}

type Side = CpuSide & { base?: number; storedTurn?: () => boolean };

/** `length` messages of history, as both sides of a session comparison hold them. */
function historyOf(length: number) {
  return Array.from({ length }, (_, i) => ({ role: i % 2 ? ('assistant' as const) : ('user' as const), text: `message ${i}` }));
}

/** A session holding `history` before every call: `reset` removes the turn the last call stored, untimed. */
function sessionHolding(history: ReturnType<typeof historyOf>) {
  const session = new AgentSession();
  const messages = history.map(({ role, text }, i) => ({
    id: `m${i}`,
    role,
    contents: [{ type: 'text', text }],
    metadata: { ctx: role === 'assistant' ? { sourceId: 'response', sourceType: 'response' } : { sourceId: 'input', sourceType: 'input' } },
  }));
  session.state.memory = { messages } as unknown as JsonObject;
  const reset = () => {
    messages.length = history.length;
    delete session.state['ai-sdk'];
  };
  return { session, stored: () => messages.length, reset };
}

async function drain(stream: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of stream);
}

export async function aiSdkBench(): Promise<void> {
  console.log('\n## @ctx/ai-sdk: overhead over the bare AI SDK call (ai 6), client CPU time\n');
  const recordedStream = recordedModel(sseBody('chat-text-stream.chunks.txt', false), 'text/event-stream');
  const recordedReply = recordedModel(jsonBody('chat-text.json'), 'application/json');
  const instant = instantModel(SHORT_REPLY);

  const rows: string[][] = [];
  for (const [label, model, streamed] of [
    ['streamText, @ai-sdk/openai on the recorded stream (302 chunks)', recordedStream, true],
    ['generateText, @ai-sdk/openai on the recorded reply', recordedReply, false],
    ['worst case: streamText, mock model, instant one-line reply', instant, true],
    ['worst case: generateText, mock model, instant one-line reply', instant, false],
  ] as const) {
    const stateless = wrapLanguageModel({ model, middleware: ctxMiddleware() });
    const empty = wrapLanguageModel({ model, middleware: { specificationVersion: 'v3' } });
    const logging = wrapLanguageModel({ model, middleware: loggingMiddleware() });
    const agent = createAgent({ client: aiSdkChatClient(model) });
    const call = (m: LanguageModel, input: { prompt: string } | { messages: ModelMessage[] }) =>
      streamed
        ? async () => {
            const result = streamText({ model: m, ...input });
            await drain(result.fullStream);
            return result.text;
          }
        : async () => (await generateText({ model: m, ...input })).text;
    const ask = { prompt: QUESTION };
    const sides: Side[] = [
      { name: `AI SDK ${streamed ? 'streamText' : 'generateText'}, bare model`, call: call(model, ask) },
      { name: 'through wrapLanguageModel with an empty middleware (the AI SDK alone)', call: call(empty, ask) },
      { name: "through the AI SDK guide's logging middleware (reads the whole answer)", call: call(logging, ask) },
      { name: 'through ctxMiddleware(), no session', call: call(stateless, ask) },
    ];
    if (!streamed) {
      const messagesOnly = wrapLanguageModel({ model, middleware: ctxMessagesOnly() });
      sides.push({ name: "ctx's messages alone: the question and answer as ctx messages, no run", call: call(messagesOnly, ask) });
    }
    /** The app passing `length` messages of history itself, and ctxMiddleware({ session }) holding them (its ratio against the app's). */
    const withHistory = (length: number) => {
      const history = historyOf(length);
      const { session, stored, reset } = sessionHolding(history);
      const messages: ModelMessage[] = [...history.map(({ role, text }) => ({ role, content: text })), { role: 'user', content: QUESTION }];
      const withSession = wrapLanguageModel({ model, middleware: ctxMiddleware({ session }) });
      const base = sides.length;
      sides.push(
        { name: `bare model, the app passing ${length} messages of history itself`, call: call(model, { messages }), base },
        {
          name: `through ctxMiddleware({ session }) holding those ${length} messages`,
          call: call(withSession, ask),
          setup: reset,
          base,
          storedTurn: () => stored() === length + 2,
        },
      );
    };
    withHistory(10);
    withHistory(100);
    sides.push({
      name: `ctx agent.${streamed ? 'runStream' : 'run'} on aiSdkChatClient(model)`,
      call: streamed ? () => drain(agent.runStream(QUESTION)) : () => agent.run(QUESTION),
    });
    const expected = await call(model, ask)();
    if (!expected) throw new Error(`${label}: the bare model gave no text.`);
    for (const side of sides.slice(1, -1)) {
      await side.setup?.();
      if ((await side.call()) !== expected) throw new Error(`${label}: "${side.name}" did not answer the recorded reply.`);
      if (side.storedTurn?.() === false) throw new Error(`${label}: "${side.name}" did not store its turn.`);
    }
    const stats = await compareCpu(sides, streamed && model !== instant ? { warmup: 30, calls: 300 } : {});
    rows.push([label, ...CPU_HEADERS.map(() => '')]);
    for (const [i, s] of stats.entries()) rows.push([`  ${s.name}`, ...cpuCells(s, stats[sides[i]!.base ?? 0]!)]);
    rows.push(['  ctxMiddleware(), no session, against the logging middleware', ...cpuCells(stats[3]!, stats[2]!)]);
  }
  printTable(['call', ...CPU_HEADERS], rows);
  console.log(
    `\nNode ${process.version}. CPU µs per call (user + system); the recorded stream 300 calls per side after 30 warm-up rounds, the others 400 after 100, sides in turn. Each session row's ratio is against the bare call holding the same history.\n`,
  );
}

/** Median of a list of numbers. */
function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/**
 * ctxMiddleware with a session on Redis (`RedisHistoryProvider` loading the newest 40 messages,
 * `RedisSessionStore`), on one local redis-server this starts and stops by pid, against the app
 * passing its own 40-message window to the bare model; beside it the stateless middleware given the
 * same window. Client CPU time as above, then wall time per call (the sides alternating call by
 * call, the median), and the Redis commands of one call (each a round trip: the package never
 * pipelines).
 */
export async function aiSdkRedisBench(): Promise<void> {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { RedisHistoryProvider, RedisSessionStore } = await import('@ctx/redis');
  const { startRedisServer } = await import('@ctx/redis-test-server');
  const { Redis } = await import('ioredis');
  console.log('\n## @ctx/ai-sdk with a Redis session: overhead over the app passing its own 40-message window (ai 6)\n');
  const dir = mkdtempSync(join(tmpdir(), 'ctx-bench-ai-sdk-redis-'));
  const server = await startRedisServer({ dir });
  const redis = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 1 });
  try {
    const commands: string[] = [];
    const send = redis.sendCommand.bind(redis) as (...args: unknown[]) => unknown;
    (redis as unknown as { sendCommand: (...args: unknown[]) => unknown }).sendCommand = (...args: unknown[]) => {
      commands.push(String((args[0] as { name: string }).name).toLowerCase());
      return send(...args);
    };
    const WINDOW = 40;
    const text = (i: number) => `message ${i}: ${'The quick brown fox jumps over the lazy dog. '.repeat(4)}`;
    const window: ModelMessage[] = Array.from({ length: WINDOW }, (_, i) => ({
      role: i % 2 ? ('assistant' as const) : ('user' as const),
      content: text(i),
    }));
    const history = new RedisHistoryProvider({ client: redis, maxMessages: WINDOW });
    const sessionStore = new RedisSessionStore({ client: redis });
    const sessionId = 'bench-window';
    await history.saveMessages(
      sessionId,
      window.map((m, i) => ({
        id: `m${i}`,
        role: m.role as 'user' | 'assistant',
        contents: [{ type: 'text', text: m.content as string }],
      })),
      { state: {} },
    );
    /** Removes the turn the last call stored (untimed), so every call sees the same 40 messages. */
    const reset = async () => {
      const stored = await history.countMessages(sessionId);
      if (stored > WINDOW) await history.popMessages(sessionId, { count: stored - WINDOW, state: {} });
    };
    const rows: string[][] = [];
    for (const [label, model] of [
      ['generateText, @ai-sdk/openai on the recorded reply', recordedModel(jsonBody('chat-text.json'), 'application/json')],
      ['worst case: generateText, mock model, instant one-line reply', instantModel(SHORT_REPLY)],
    ] as const) {
      const withRedis = wrapLanguageModel({ model, middleware: ctxMiddleware({ contextProviders: [history], sessionStore }) });
      const stateless = wrapLanguageModel({ model, middleware: ctxMiddleware() });
      const messages: ModelMessage[] = [...window, { role: 'user', content: QUESTION }];
      const sides: CpuSide[] = [
        {
          name: `bare model, the app passing its own ${WINDOW}-message window`,
          call: async () => (await generateText({ model, messages })).text,
        },
        {
          name: 'through ctxMiddleware(), no session, the app passing the same window',
          call: async () => (await generateText({ model: stateless, messages })).text,
        },
        {
          name: `through ctxMiddleware with a Redis session holding ${WINDOW} messages (Redis history and session store)`,
          setup: reset,
          call: async () => (await generateText({ model: withRedis, prompt: QUESTION, providerOptions: { ctx: { sessionId } } })).text,
        },
      ];
      const expected = await sides[0]!.call();
      for (const side of sides.slice(1)) {
        if ((await side.call()) !== expected) throw new Error(`${label}: "${side.name}" did not answer the recorded reply.`);
      }
      commands.length = 0;
      await sides[2]!.call();
      const perCall = [...commands];
      const stats = await compareCpu(sides, { warmup: 50, calls: 300 });
      const wall = sides.map(() => [] as number[]);
      for (let round = 0; round < 300; round++) {
        for (const [i, side] of sides.entries()) {
          await side.setup?.();
          const start = performance.now();
          await side.call();
          wall[i]!.push(performance.now() - start);
        }
      }
      const wallMs = wall.map(median);
      rows.push([label, ...CPU_HEADERS.map(() => ''), '', '', '']);
      for (const [i, s] of stats.entries()) {
        rows.push([
          `  ${s.name}`,
          ...cpuCells(s, stats[0]!),
          wallMs[i]!.toFixed(2),
          i === 0 ? '' : `${wallMs[i]! - wallMs[0]! >= 0 ? '+' : ''}${(wallMs[i]! - wallMs[0]!).toFixed(2)}`,
          i === 2 ? `${perCall.length}: ${perCall.join(', ')}` : '',
        ]);
      }
    }
    // A tool loop of three model calls (two steps calling a tool, then the answer): the Redis commands of the whole generateText.
    const usage = {
      inputTokens: { total: 20, noCache: 20, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: 9, text: 9, reasoning: undefined },
    };
    const looping = new MockLanguageModelV3({
      doGenerate: async ({ prompt }) => {
        let results = 0; // tool results since the newest user message
        for (let i = prompt.length - 1; i >= 0 && prompt[i]!.role !== 'user'; i--) if (prompt[i]!.role === 'tool') results++;
        return results >= 2
          ? { content: [{ type: 'text', text: SHORT_REPLY }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] }
          : {
              content: [{ type: 'tool-call', toolCallId: `call_${Math.random().toString(36).slice(2)}`, toolName: 'lookup', input: '{}' }],
              finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
              usage,
              warnings: [],
            };
      },
    });
    const loopModel = wrapLanguageModel({ model: looping, middleware: ctxMiddleware({ contextProviders: [history], sessionStore }) });
    const lookup = tool({
      description: 'Look up',
      inputSchema: jsonSchema<Record<string, never>>({ type: 'object', properties: {} }),
      execute: async () => 'found',
    });
    const loop = () =>
      generateText({
        model: loopModel,
        prompt: QUESTION,
        tools: { lookup },
        stopWhen: stepCountIs(3),
        providerOptions: { ctx: { sessionId } },
      });
    await loop();
    commands.length = 0;
    await loop();
    await new Promise((resolve) => setTimeout(resolve, 50)); // the lease's release goes out after the answer
    rows.push([
      'a tool loop of 3 model calls, ctxMiddleware with the Redis session',
      ...CPU_HEADERS.map(() => ''),
      '',
      '',
      `${commands.length}: ${commands.join(', ')}`,
    ]);
    printTable(['call', ...CPU_HEADERS, 'wall ms (median)', 'added wall ms', 'Redis commands per call'], rows);
    console.log(
      `\nNode ${process.version}, redis-server on 127.0.0.1. CPU: 300 calls per side after 50 warm-up rounds, sides in turn; wall: 300 more calls per side, in turn. The turn each ctx call stores is removed after it, untimed, so every call loads the same ${WINDOW} messages.\n`,
    );
  } finally {
    redis.disconnect();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await aiSdkBench();
  await aiSdkRedisBench();
}
