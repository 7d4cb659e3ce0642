/**
 * Client CPU time of @ctx/openai's clients, and of a whole `agent.run` / `agent.runStream` on
 * them, beside calling the `openai` SDK directly. Every side's SDK gets the same recorded OpenAI
 * response (SSE bodies and JSON recorded from the real service, `tooling/openai-test-server/fixtures`)
 * from an in-process `fetch`, so nothing but client work is measured: a local server on the same
 * two cores made wall-clock ratios swing from 0.7x to 1.9x. Sides alternate call by call.
 * Prints figures and ratios; asserts nothing.
 */
import { pathToFileURL } from 'node:url';
import { type Agent, type ChatClient, createAgent, Message } from '@ctx/core';
import { OpenAIChatClient, OpenAIResponsesClient } from '@ctx/openai';
import OpenAI from 'openai';
import { jsonBody, replay, sseBody } from './replay-fetch.js';
import { type CpuSide, compareCpu, pairedRatio } from './cpu-compare.js';
import { fmtRatio, printTable } from './timing.js';

const QUESTION = 'Explain context engineering.';
const INSTRUCTIONS = 'Be thorough.';
const WARMUP = 50;
const CALLS = 300;

function sdkFor(reads: Uint8Array[], contentType: string): OpenAI {
  return new OpenAI({ apiKey: 'bench-key', baseURL: 'http://replay.invalid/v1', maxRetries: 0, fetch: replay(reads, contentType) });
}

async function drain(iterable: AsyncIterable<unknown>): Promise<number> {
  let n = 0;
  for await (const _ of iterable) n++;
  return n;
}

async function drainRun(agent: Agent): Promise<number> {
  const stream = agent.runStream(QUESTION);
  const n = await drain(stream);
  await stream.response;
  return n;
}

function cases(): { name: string; sides: CpuSide[] }[] {
  const messages = [Message.user(QUESTION)];
  const options = { instructions: INSTRUCTIONS };
  const chatStream = sdkFor(sseBody('chat-text-stream.chunks.txt', false), 'text/event-stream');
  const chatPlain = sdkFor(jsonBody('chat-text.json'), 'application/json');
  const respStream = sdkFor(sseBody('responses-web-search-stream.chunks.txt', true), 'text/event-stream');
  const respPlain = sdkFor(jsonBody('responses-text.json'), 'application/json');
  const chatInput = [
    { role: 'system' as const, content: INSTRUCTIONS },
    { role: 'user' as const, content: QUESTION },
  ];
  const respInput = [{ type: 'message' as const, role: 'user' as const, content: [{ type: 'input_text' as const, text: QUESTION }] }];
  // Clients and agents are made once, as an app makes them.
  const memo = <K extends object, V>(make: (key: K) => V) => {
    const made = new Map<K, V>();
    return (key: K) => made.get(key) ?? (made.set(key, make(key)).get(key) as V);
  };
  const agent = memo((client: ChatClient) => createAgent({ client, instructions: INSTRUCTIONS }));
  const chatClient = memo((sdk: OpenAI) => new OpenAIChatClient({ client: sdk, model: 'gpt-4.1-nano' }));
  const respClient = memo((sdk: OpenAI) => new OpenAIResponsesClient({ client: sdk, model: 'gpt-5-mini' }));
  return [
    {
      name: 'Chat Completions, streamed (302 recorded chunks)',
      sides: [
        {
          name: 'sdk',
          call: async () => drain(await chatStream.chat.completions.create({ model: 'gpt-4.1-nano', stream: true, messages: chatInput })),
        },
        { name: 'client', call: () => drain(chatClient(chatStream).getStreamingResponse(messages, options)) },
        { name: 'agent', call: () => drainRun(agent(chatClient(chatStream))) },
      ],
    },
    {
      name: 'Chat Completions, plain',
      sides: [
        { name: 'sdk', call: () => chatPlain.chat.completions.create({ model: 'gpt-4.1-nano', messages: chatInput }) },
        { name: 'client', call: () => chatClient(chatPlain).getResponse(messages, options) },
        { name: 'agent', call: () => agent(chatClient(chatPlain)).run(QUESTION) },
      ],
    },
    {
      name: 'Responses, streamed (184 recorded events: reasoning, web search, text)',
      sides: [
        {
          name: 'sdk',
          call: async () =>
            drain(await respStream.responses.create({ model: 'gpt-5-mini', stream: true, instructions: INSTRUCTIONS, input: respInput })),
        },
        { name: 'client', call: () => drain(respClient(respStream).getStreamingResponse(messages, options)) },
        { name: 'agent', call: () => drainRun(agent(respClient(respStream))) },
      ],
    },
    {
      name: 'Responses, plain',
      sides: [
        { name: 'sdk', call: () => respPlain.responses.create({ model: 'gpt-5-mini', instructions: INSTRUCTIONS, input: respInput }) },
        { name: 'client', call: () => respClient(respPlain).getResponse(messages, options) },
        { name: 'agent', call: () => agent(respClient(respPlain)).run(QUESTION) },
      ],
    },
  ];
}

/** Mean of the middle 80% (drops the GC pauses and the outliers at both ends alike). */
function trimmedMean(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const cut = Math.floor(sorted.length * 0.1);
  const kept = sorted.slice(cut, sorted.length - cut);
  return kept.reduce((a, b) => a + b, 0) / kept.length;
}

/** Runs the benchmark and prints its table. Returns the ratios by case. */
export async function openaiOverhead(): Promise<Map<string, { client: number; agent: number; agentVsClient: number }>> {
  console.log('\n## OpenAI client overhead: client CPU time on recorded responses replayed in-process\n');
  const out = new Map<string, { client: number; agent: number; agentVsClient: number }>();
  const rows: string[][] = [];
  for (const c of cases()) {
    const stats = await compareCpu(c.sides, { warmup: WARMUP, calls: CALLS });
    const samples = stats.map((st) => st.samples.map((us) => us / 1000));
    const [sdk, client, agent] = samples.map(trimmedMean) as [number, number, number];
    out.set(c.name, { client: client / sdk, agent: agent / sdk, agentVsClient: agent / client });
    rows.push([
      c.name,
      sdk.toFixed(3),
      client.toFixed(3),
      agent.toFixed(3),
      fmtRatio(client / sdk),
      fmtRatio(agent / sdk),
      fmtRatio(agent / client),
      fmtRatio(pairedRatio(stats[2]!, stats[1]!)),
    ]);
  }
  printTable(
    [
      'call',
      'openai SDK ms',
      '@ctx/openai client ms',
      'agent.run(Stream) ms',
      'client / SDK',
      'agent / SDK',
      'agent / client',
      'agent / client (paired)',
    ],
    rows,
  );
  console.log(
    `\nCPU ms per call (user + system), trimmed mean (middle 80%) of ${CALLS} calls per side, the sides in a shuffled order each round; paired = the median of each round's ratio. "agent" is agent.runStream for streamed rows, agent.run for plain ones:`,
  );
  console.log('the whole pipeline (no session) around the same client. Target: agent.runStream at most 1.03x of the client stream.\n');
  return out;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await openaiOverhead();
}
