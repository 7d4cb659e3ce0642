/**
 * @ctx/ai-sdk resumable turns: what keeping each turn's UI chunks in a `StreamStore` adds to a
 * streamed reply, beside the plain `toUIMessageStreamResponse` of the same hosted run, in one
 * process. Every side answers the same `useChat` request with the same agent: `@ai-sdk/openai`'s
 * Chat Completions model whose `fetch` replays the recorded 302-chunk stream of the real service
 * (`replay-fetch.ts`), a hosted run on an `InMemorySessionStore`, a new conversation per call. The
 * sides take turns request by request, in a new shuffled order every round (seeded). The route's
 * `Request` is built before the clock starts, as a framework builds it for any route. For each
 * request: the CPU time to the first byte of the response body (time to first chunk), and the CPU
 * time from there to the end over the number of chunks after the first (per-chunk time). Medians,
 * p90s, ratios of medians and the paired ratio (the median over rounds of the side's request over
 * the base's request of the same round), against the plain response and against the same route
 * without a store. Prints tables; never asserts timings.
 *
 * Run: `node --expose-gc --import tsx src/ai-sdk-resumable.ts` in bench/ (after building
 * @ctx/core and @ctx/ai-sdk).
 */
import { createOpenAI } from '@ai-sdk/openai';
import { aiSdkChatClient, handleChatRequest, toUIMessageStreamResponse } from '@ctx/ai-sdk';
import { type Agent, createAgent, InMemorySessionStore, InMemoryStreamStore, Message, type StreamStore } from '@ctx/core';
import { replay, sseBody } from './replay-fetch.js';
import { runInfo } from './run-info.js';
import { fmtRatio, printTable, settle } from './timing.js';

const WARMUP = 100;
const ROUNDS = 600;

/** One way to answer the request: a response whose body streams the reply. */
interface Side {
  name: string;
  /** `request` is the page's POST, built before the timing starts (the framework's work, not the route's). */
  answer: (chatId: string, messageId: string, request: Request) => Promise<Response>;
}

/** One request's figures, in ms. */
interface Sample {
  firstMs: number;
  perChunkMs: number;
  chunks: number;
}

const body = (messageId: string) =>
  JSON.stringify({
    messages: [{ id: messageId, role: 'user', parts: [{ type: 'text', text: 'Invent a new holiday and describe its traditions.' }] }],
  });
const request = (chatId: string, messageId: string) =>
  new Request(`http://127.0.0.1/api/chat/${chatId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: body(messageId),
  });

/** The process's CPU time so far, in ms (user + system). */
function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/**
 * Reads a response to its end: the CPU time to its first body chunk, and per chunk after it. CPU
 * time, not wall time: the machine is shared, and waiting for a core is nobody's cost. Everything
 * the process does meanwhile counts, the store's appends in the background included.
 */
async function read(answer: () => Promise<Response>): Promise<Sample> {
  const t0 = cpuMs();
  const response = await answer();
  const reader = response.body!.getReader();
  let first: number | undefined;
  let chunks = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    first ??= cpuMs();
    // Count server-sent events, not reads: each ends with a blank line.
    for (let i = value.indexOf(10); i !== -1; i = value.indexOf(10, i + 1)) if (value[i + 1] === 10) chunks++;
  }
  const end = cpuMs();
  return { firstMs: (first ?? end) - t0, perChunkMs: (end - (first ?? end)) / Math.max(1, chunks - 1), chunks };
}

function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? Number.NaN;
}

function agentOf(): Agent {
  const model = createOpenAI({
    apiKey: 'bench-key',
    baseURL: 'http://replay.invalid/v1',
    fetch: replay(sseBody('chat-text-stream.chunks.txt', false), 'text/event-stream'),
  }).chat('gpt-4o-mini');
  return createAgent({ client: aiSdkChatClient(model), sessionStore: new InMemorySessionStore() });
}

/**
 * A stream store that keeps nothing (every append resolves at once): what the route's own work
 * costs, without the store's (the in-memory store checks, serializes and measures every chunk).
 */
function nullStore(): StreamStore {
  return {
    specificationVersion: 'v1',
    open: async (ref) => ({
      created: true,
      info: { ...ref, status: 'running', chunkCount: 0, openedAt: '', stopRequested: false },
      writer: { ...ref, stopSignal: new AbortController().signal, append: async () => {}, close: async () => {}, release: () => {} },
    }),
    find: async () => undefined,
    read: async function* () {},
    requestStop: async () => false,
  };
}

async function main(): Promise<void> {
  const agent = agentOf();
  const streams = new InMemoryStreamStore();
  const nothing = nullStore();
  const sides: Side[] = [
    {
      name: 'toUIMessageStreamResponse(agent.runStream(...)), hosted',
      answer: async (chatId, messageId) =>
        toUIMessageStreamResponse(
          agent.runStream(Message.user('Invent a new holiday and describe its traditions.', { id: messageId }), {
            sessionId: chatId,
            userId: 'ann',
          }),
        ),
    },
    {
      name: 'handleChatRequest',
      answer: (chatId, _messageId, request) => handleChatRequest(request, { agent, sessionId: chatId, userId: 'ann' }),
    },
    {
      name: 'handleChatRequest with streams (InMemoryStreamStore)',
      answer: (chatId, _messageId, request) => handleChatRequest(request, { agent, sessionId: chatId, userId: 'ann', streams }),
    },
    {
      name: 'handleChatRequest with a store that keeps nothing',
      answer: (chatId, _messageId, request) => handleChatRequest(request, { agent, sessionId: chatId, userId: 'ann', streams: nothing }),
    },
  ];
  const samples = sides.map(() => [] as Sample[]);
  const order = sides.map((_, i) => i);
  let seed = 0x2545f491;
  const random = () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return seed / 2 ** 32;
  };
  let n = 0;
  settle();
  for (let round = 0; round < WARMUP + ROUNDS; round++) {
    for (let k = order.length - 1; k > 0; k--) {
      const j = Math.floor(random() * (k + 1));
      [order[k], order[j]] = [order[j]!, order[k]!];
    }
    for (const s of order) {
      n++;
      const post = request(`chat-${n}`, `u-${n}`);
      const sample = await read(() => sides[s]!.answer(`chat-${n}`, `u-${n}`, post));
      if (round >= WARMUP) samples[s]!.push(sample);
    }
  }
  console.log(`@ctx/ai-sdk resumable turns: ${ROUNDS} requests per side (after ${WARMUP} untimed rounds), ${runInfo()}`);
  console.log(`UI chunks per reply: ${samples[0]![0]!.chunks} SSE events (the recorded 302-chunk model stream)\n`);
  for (const [label, pick] of [
    ['time to first chunk', (x: Sample) => x.firstMs],
    ['per-chunk time after the first', (x: Sample) => x.perChunkMs],
  ] as const) {
    const values = samples.map((list) => list.map(pick));
    const median = (i: number) =>
      quantile(
        [...values[i]!].sort((a, b) => a - b),
        0.5,
      );
    const paired = (i: number, base: number) =>
      quantile(
        values[i]!.map((v, r) => v / values[base]![r]!).sort((a, b) => a - b),
        0.5,
      );
    const rows = sides.map((side, i) => [
      side.name,
      (median(i) * 1000).toFixed(1),
      (
        quantile(
          [...values[i]!].sort((a, b) => a - b),
          0.9,
        ) * 1000
      ).toFixed(1),
      fmtRatio(median(i) / median(0)),
      fmtRatio(paired(i, 0)),
      i >= 2 ? fmtRatio(median(i) / median(1)) : '',
      i >= 2 ? fmtRatio(paired(i, 1)) : '',
    ]);
    console.log(`${label}, CPU µs`);
    printTable(['side', 'median µs', 'p90 µs', 'vs plain (median)', 'vs plain (paired)', 'vs route (median)', 'vs route (paired)'], rows);
    console.log('');
  }
}

await main();
