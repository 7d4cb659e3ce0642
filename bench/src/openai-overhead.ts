/**
 * Client CPU time of @ctx/openai's clients, and of a whole `agent.run` / `agent.runStream` on
 * them, beside calling the `openai` SDK directly. Every side's SDK gets the same recorded OpenAI
 * response (SSE bodies and JSON recorded from the real service, `tooling/openai-test-server/fixtures`)
 * from an in-process `fetch`, so nothing but client work is measured: a local server on the same
 * two cores made wall-clock ratios swing from 0.7x to 1.9x. Sides alternate call by call.
 * Prints figures and ratios; asserts nothing.
 */
import { pathToFileURL } from 'node:url';
import { type Agent, type ChatClient, createAgent, generateId, Message } from '@ctx/core';
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

/** How many times a component side repeats its work per timed call (one is below the clock's resolution). */
const REPEAT = 100;

/**
 * Where a plain `agent.run`'s time goes beyond its client's call, on Chat Completions: the same
 * agent on a client that answers at once with the recorded reply already converted (the pipeline
 * alone, no SDK), with an `onEvent` listener (what emitting the run's events costs), and the pieces
 * a run does once that a client call does not (the run id, the input message with its id and time,
 * the attribution of the input and of the reply). Prints the table; returns nothing.
 */
export async function openaiOverheadFloor(): Promise<void> {
  console.log('\n## Where agent.run spends its time beyond the client call (Chat Completions, plain, recorded reply)\n');
  const sdk = sdkFor(jsonBody('chat-text.json'), 'application/json');
  const client = new OpenAIChatClient({ client: sdk, model: 'gpt-4.1-nano' });
  const messages = [Message.user(QUESTION)];
  const options = { instructions: INSTRUCTIONS };
  const recorded = await client.getResponse(messages, options);
  // A client answering at once with the recorded reply as @ctx/openai converted it (a fresh copy per call, as a client makes).
  const instant: ChatClient = {
    specificationVersion: 'v1',
    provider: client.provider,
    modelId: client.modelId,
    async getResponse() {
      return { ...recorded, messages: recorded.messages.map((m) => ({ ...m, contents: [...m.contents] })) };
    },
    getStreamingResponse: (m, o) => client.getStreamingResponse(m, o),
  };
  let events = 0;
  const agent = createAgent({ client, instructions: INSTRUCTIONS });
  const bare = createAgent({ client: instant, instructions: INSTRUCTIONS });
  const listened = createAgent({ client: instant, instructions: INSTRUCTIONS, onEvent: () => void events++ });
  const reply = recorded.messages[0]!;
  const repeat = (fn: () => unknown) => async () => {
    for (let i = 0; i < REPEAT; i++) fn();
  };
  const sides: CpuSide[] = [
    { name: '@ctx/openai client.getResponse', call: () => client.getResponse(messages, options) },
    { name: 'agent.run on that client', call: () => agent.run(QUESTION) },
    { name: 'agent.run on a client answering at once (the pipeline alone)', call: () => bare.run(QUESTION) },
    { name: 'the same with an onEvent listener (run-start, model-call, run-end events)', call: () => listened.run(QUESTION) },
    {
      name: `the pipeline alone, ${REPEAT} runs back to back (per run: warm caches, no SDK work in between)`,
      call: async () => {
        for (let i = 0; i < REPEAT; i++) await bare.run(QUESTION);
      },
    },
    { name: 'that client answering at once, alone', call: () => instant.getResponse(messages, options) },
    { name: `generateId() (the run id), x${REPEAT}`, call: repeat(generateId) },
    { name: `Message.user(input) (id and time of the input message), x${REPEAT}`, call: repeat(() => Message.user(QUESTION)) },
    {
      name: `Message.withSource of the input and the reply (attribution), x${REPEAT}`,
      call: repeat(() => [Message.withSource(messages[0]!, 'input', 'input'), Message.withSource(reply, 'response', 'response')]),
    },
  ];
  const stats = await compareCpu(sides, { warmup: WARMUP, calls: CALLS });
  // Sides that repeat their work say so in their name; their figure is per repetition.
  const us = stats.map((st) => trimmedMean([...st.samples]) / (st.name.includes(`${REPEAT}`) ? REPEAT : 1));
  const [clientUs, agentUs, pipelineUs] = us as [number, number, number];
  printTable(
    ['what', 'CPU µs per call', 'of the pipeline alone'],
    sides.map((side, i) => [
      side.name,
      us[i]!.toFixed(i >= 6 ? 2 : 1),
      i < 3 ? '' : `${((100 * (i === 3 ? us[3]! - pipelineUs : us[i]!)) / pipelineUs).toFixed(0)}%${i === 3 ? ' more' : ''}`,
    ]),
  );
  console.log(
    `\nagent.run beyond the client: ${(agentUs - clientUs).toFixed(1)} µs per call (${fmtRatio(agentUs / clientUs)} of the client) here, where most sides do no SDK work, so the client call runs as cold as the run around it; CPU µs, trimmed mean (middle 80%) of ${CALLS} calls per side, the sides in a shuffled order each round.\n`,
  );
  if (events === 0) throw new Error('no events were emitted');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await openaiOverhead();
  await openaiOverheadFloor();
}
