/**
 * @ctx/ai-sdk: what ctx adds to a model call beside the bare AI SDK call, in client CPU time
 * (`cpu-compare.ts`: one process, sides alternating call by call, median and p90). The model is the
 * AI SDK's own MockLanguageModelV3 answering with a recorded OpenAI reply (`chat-text-stream.chunks.txt`:
 * its 300 text deltas one stream part each, with the recorded usage; `chat-text.json` for
 * `generateText`), so both sides get the same realistic answer and nothing but client work is
 * timed. The mock parses nothing, where a real provider parses and validates every chunk, so the
 * ratios are an upper bound. A last table is the worst case: a one-line reply, the pure overhead in
 * microseconds. Prints tables; never asserts timings.
 */
import { readFileSync } from 'node:fs';
import { aiSdkChatClient, ctxMiddleware } from '@ctx/ai-sdk';
import { AgentSession, createAgent, type JsonObject } from '@ctx/core';
import { generateText, type LanguageModel, streamText, wrapLanguageModel } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { CPU_HEADERS, type CpuSide, compareCpu, cpuCells } from './cpu-compare.js';
import { printTable } from './timing.js';

const FIXTURES = new URL('../../tooling/openai-test-server/fixtures/', import.meta.url);
const QUESTION = 'Invent a new holiday and describe its traditions.';
const SHORT_REPLY = 'Shipping to Norway takes 5 working days.';

type Chunk = { choices: { delta?: { content?: string } }[]; usage: { prompt_tokens: number; completion_tokens: number } | null };

/** The recorded answer: its text deltas in order, the whole text, and its token counts. */
function recorded() {
  const chunks = readFileSync(new URL('chat-text-stream.chunks.txt', FIXTURES), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Chunk);
  const deltas = chunks.flatMap((c) => c.choices.flatMap((choice) => (choice.delta?.content ? [choice.delta.content] : [])));
  const usage = chunks.find((c) => c.usage)?.usage ?? { prompt_tokens: 0, completion_tokens: 0 };
  const plain = JSON.parse(readFileSync(new URL('chat-text.json', FIXTURES), 'utf8')) as {
    choices: { message: { content: string } }[];
    usage: { prompt_tokens: number; completion_tokens: number };
  };
  return { deltas, usage, text: plain.choices[0]!.message.content, plainUsage: plain.usage };
}

const v3Usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

/** A mock model that answers `text` from `doGenerate` and `deltas` (one part each) from `doStream`, at once. */
function mockModel(answer: { text: string; deltas: string[]; input: number; output: number }) {
  const usage = v3Usage(answer.input, answer.output);
  return new MockLanguageModelV3({
    doGenerate: async () => ({
      content: [{ type: 'text', text: answer.text }],
      finishReason: { unified: 'stop', raw: 'stop' },
      usage,
      warnings: [],
    }),
    doStream: async () => ({
      stream: new ReadableStream({
        start(controller) {
          controller.enqueue({ type: 'stream-start', warnings: [] });
          controller.enqueue({ type: 'text-start', id: 't' });
          for (const delta of answer.deltas) controller.enqueue({ type: 'text-delta', id: 't', delta });
          controller.enqueue({ type: 'text-end', id: 't' });
          controller.enqueue({ type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage });
          controller.close();
        },
      }),
    }),
  });
}

/** A session holding 10 stored messages before every call: `reset` removes the turn the last call stored, untimed. */
function sessionOf10() {
  const session = new AgentSession();
  const messages = Array.from({ length: 10 }, (_, i) => ({
    id: `m${i}`,
    role: i % 2 ? 'assistant' : 'user',
    contents: [{ type: 'text', text: `message ${i}` }],
    metadata: { ctx: i % 2 ? { sourceId: 'response', sourceType: 'response' } : { sourceId: 'input', sourceType: 'input' } },
  }));
  session.state.memory = { messages } as unknown as JsonObject;
  const reset = () => {
    messages.length = 10;
    delete session.state['ai-sdk'];
  };
  return { session, stored: () => messages.length, reset };
}

/** Fewer calls for the streamed rows, whose calls take milliseconds. */
const streamedCalls = (title: string) => (title.startsWith('streamText') ? { warmup: 30, calls: 200 } : {});

async function drain(stream: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of stream);
}

export async function aiSdkBench(): Promise<void> {
  console.log('\n## @ctx/ai-sdk: overhead over the bare AI SDK call (ai 6, MockLanguageModelV3), client CPU time\n');
  const answer = recorded();
  const realistic = mockModel({
    text: answer.text,
    deltas: answer.deltas,
    input: answer.usage.prompt_tokens,
    output: answer.usage.completion_tokens,
  });
  const instant = mockModel({ text: SHORT_REPLY, deltas: [SHORT_REPLY], input: 20, output: 9 });

  const rows: string[][] = [];
  const section = async (title: string, sides: CpuSide[], check: () => Promise<void>) => {
    await check();
    const stats = await compareCpu(sides, streamedCalls(title));
    rows.push([title, '', '', '', '', '']);
    for (const s of stats) rows.push([`  ${s.name}`, ...cpuCells(s, stats[0]!)]);
  };

  for (const [label, model] of [
    [`streamText, recorded reply (${answer.deltas.length} text deltas)`, realistic],
    ['generateText, recorded reply', realistic],
    ['worst case: generateText, instant one-line reply', instant],
  ] as const) {
    const streamed = label.startsWith('streamText');
    const stateless = wrapLanguageModel({ model, middleware: ctxMiddleware() });
    const { session, stored, reset } = sessionOf10();
    const withSession = wrapLanguageModel({ model, middleware: ctxMiddleware({ session }) });
    const agent = createAgent({ client: aiSdkChatClient(model) });
    const call = streamed
      ? (m: LanguageModel) => async () => {
          const result = streamText({ model: m, prompt: QUESTION });
          await drain(result.fullStream);
          return result.text;
        }
      : (m: LanguageModel) => async () => (await generateText({ model: m, prompt: QUESTION })).text;
    const expected = streamed ? answer.deltas.join('') : model === instant ? SHORT_REPLY : answer.text;
    await section(
      label,
      [
        { name: `AI SDK ${streamed ? 'streamText' : 'generateText'}, bare model`, call: call(model) },
        { name: 'through ctxMiddleware(), no session', call: call(stateless) },
        { name: 'through ctxMiddleware({ session }), 10 messages of history', call: call(withSession), setup: reset },
        {
          name: `ctx agent.${streamed ? 'runStream' : 'run'} on aiSdkChatClient(model)`,
          call: streamed ? () => drain(agent.runStream(QUESTION)) : () => agent.run(QUESTION),
        },
      ],
      async () => {
        reset();
        for (const m of [model, stateless, withSession]) {
          if ((await call(m)()) !== expected) throw new Error(`${label}: a side did not answer the recorded reply.`);
        }
        if (stored() !== 12) throw new Error('The session call did not store its turn.');
      },
    );
  }
  printTable(['call', ...CPU_HEADERS], rows);
  console.log(`\nNode ${process.version}. CPU µs per call (user + system); 400 calls per side after 100 warm-up rounds, sides in turn.\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) await aiSdkBench();
