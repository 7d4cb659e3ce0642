/**
 * @ctx/mem0: what the provider adds to a run beside calling the mem0 client directly, sequential
 * vs parallel scope searches, and 'await' vs 'background' writes. Both mem0 clients run offline:
 * the platform MemoryClient against the local mem0 REST server (tooling/mem0-test-server), the
 * open-source Memory against the local OpenAI-protocol server (in-memory vector store, no history).
 * Prints tables; never asserts timings.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAgent, Message, type Agent, type ChatClient, type ChatResponse } from '@ctx/core';
import { startMem0TestServer } from '@ctx/mem0-test-server';
import { startOpenAITestServer, type RecordedRequest } from '@ctx/openai-test-server';
import { fmtMs, fmtRatio, measure, printTable, settle, type Measurement } from './timing.js';

const USER = 'bench-user';
const QUESTION = 'Which city do I live in, and what do I like to drink?';
const REPLY = 'You live in Oslo and you like green tea.';

/** A model that answers at once and keeps nothing, so the figures are the memory work alone. */
class FixedReplyClient implements ChatClient {
  readonly specificationVersion = 'v1' as const;
  readonly provider = 'bench';
  readonly modelId = 'fixed';
  async getResponse(): Promise<ChatResponse> {
    return { messages: [Message.assistant(REPLY)], finishReason: 'stop' };
  }
  getStreamingResponse(): AsyncIterable<never> {
    throw new Error('not used');
  }
}

const FACTS = Array.from(
  { length: 50 },
  (_, i) =>
    [
      `I live in Oslo (note ${i}).`,
      `I like green tea (note ${i}).`,
      `My dog is called Rex (note ${i}).`,
      `I work as a nurse (note ${i}).`,
      `I play chess on Sundays (note ${i}).`,
    ][i % 5]!,
);

/** mem0 OSS's extraction, scripted: every user message of "## New Messages" becomes one memory. */
function extraction(request: RecordedRequest): { text: string } | undefined {
  const prompt = ((request.body?.messages ?? []) as { role: string; content: string }[]).find((m) => m.role === 'user')?.content ?? '';
  const section = /## New Messages\n([\s\S]*?)\n\n## Observation Date/.exec(prompt)?.[1];
  if (section === undefined) return undefined;
  const facts = section
    .split('\n')
    .filter((l) => l.startsWith('user: '))
    .map((l) => l.slice(6));
  return { text: JSON.stringify({ memory: facts.map((text, i) => ({ id: String(i), text, attributed_to: 'user' })) }) };
}

type Side = { name: string; run: () => Promise<unknown>; setup?: () => Promise<unknown> };

/** Interleaves three rounds of each side and keeps each one's best mean, so drift hits all alike. */
async function compare(sides: Side[], budgetMs = 700): Promise<Measurement[]> {
  const best: (Measurement | undefined)[] = sides.map(() => undefined);
  for (let round = 0; round < 3; round++) {
    for (const [i, side] of sides.entries()) {
      settle();
      const m = await measure(side.name, async () => void (await side.setup?.()), side.run, { budgetMs, maxIterations: 300, warmup: 10 });
      if (!best[i] || m.meanMs < best[i]!.meanMs) best[i] = m;
    }
  }
  return best as Measurement[];
}

export async function mem0Bench(): Promise<void> {
  // mem0ai reads these when it loads: no telemetry calls, config file out of $HOME.
  process.env.MEM0_TELEMETRY = 'false';
  process.env.MEM0_DIR ??= mkdtempSync(join(tmpdir(), 'ctx-mem0-bench-'));
  const [{ MemoryClient }, { Memory }, { Mem0ContextProvider }] = await Promise.all([
    import('mem0ai'),
    import('mem0ai/oss'),
    import('@ctx/mem0'),
  ]);

  const mem0Server = await startMem0TestServer({ apiKey: 'bench-key', defaultThreshold: 0 });
  const openai = await startOpenAITestServer({ apiKey: 'bench-key' });
  openai.respondWith(extraction);
  const platform = new MemoryClient({ apiKey: 'bench-key', host: mem0Server.url });
  const oss = new Memory({
    embedder: { provider: 'openai', config: { apiKey: 'bench-key', baseURL: openai.url, model: 'text-embedding-3-small' } },
    vectorStore: { provider: 'memory', config: { collectionName: 'bench', dimension: 1536, dbPath: ':memory:' } },
    llm: { provider: 'openai', config: { apiKey: 'bench-key', baseURL: openai.url, model: 'gpt-4o-mini' } },
    disableHistory: true,
  });
  for (const fact of FACTS) {
    await platform.add([{ role: 'user', content: fact }], { userId: USER, agentId: 'concierge', infer: false, async_mode: false });
    await oss.add([{ role: 'user', content: fact }], { userId: USER, agentId: 'concierge', infer: false });
  }
  const clients = [
    {
      name: 'platform MemoryClient',
      client: platform,
      direct: {
        search: () => platform.search(QUESTION, { filters: { user_id: USER }, topK: 5 }),
        add: (msgs: { role: 'user' | 'assistant'; content: string }[]) => platform.add(msgs, { userId: USER }),
      },
    },
    {
      name: 'OSS Memory',
      client: oss,
      direct: {
        search: () => oss.search(QUESTION, { filters: { user_id: USER }, topK: 5 }),
        add: (msgs: { role: 'user' | 'assistant'; content: string }[]) => oss.add(msgs, { userId: USER }),
      },
    },
  ] as const;
  const sessionOf = (agent: Agent) => agent.createSession({ sessionId: 'bench-session', state: { mem0: { userId: USER } } });
  const plain = createAgent({ client: new FixedReplyClient() });

  // 1. Latency added per run, beside calling the client directly.
  console.log('\n## @ctx/mem0: latency added per run beside calling the mem0 client directly (loopback, 50 stored memories)\n');
  console.log(
    'direct = search with the client, put the results in a message, run a plain agent on a new session (as the provider side), add the turn with the client (awaited).',
  );
  console.log(
    'provider = the same run through Mem0ContextProvider (writeMode await, one scope). The turn repeats, so mem0 de-duplicates it.\n',
  );
  const rows1: string[][] = [];
  for (const c of clients) {
    const agent = createAgent({ client: new FixedReplyClient(), contextProviders: [new Mem0ContextProvider({ client: c.client })] });
    const direct = async () => {
      const found = (await c.direct.search()) as { results: { memory?: string }[] };
      const memories = Message.user(['Memories:', ...found.results.map((m) => `- ${m.memory}`)].join('\n'));
      const res = await plain.run([memories, Message.user(QUESTION)], { session: plain.createSession({ sessionId: 'bench-session' }) });
      await c.direct.add([
        { role: 'user', content: QUESTION },
        { role: 'assistant', content: res.text },
      ]);
    };
    const check = await agent.run(QUESTION, { session: sessionOf(agent) });
    if (check.text !== REPLY) throw new Error('The provider run did not answer.');
    const [d, p] = await compare([
      { name: 'direct', run: direct },
      { name: 'provider', run: () => agent.run(QUESTION, { session: sessionOf(agent) }) },
    ]);
    rows1.push([
      c.name,
      fmtMs(d!.p50Ms),
      fmtMs(p!.p50Ms),
      fmtMs(p!.p50Ms - d!.p50Ms),
      fmtRatio(p!.p50Ms / d!.p50Ms),
      fmtMs(p!.meanMs - d!.meanMs),
      fmtRatio(p!.meanMs / d!.meanMs),
    ]);
  }
  printTable(['client', 'direct p50 ms', 'provider p50 ms', 'added p50 ms', 'ratio p50', 'added mean ms', 'ratio mean'], rows1);

  // 2. Sequential vs parallel scope searches (writes off: the store scope needs an appId no session has).
  console.log('\n## @ctx/mem0: three scope searches per run, sequential vs parallel\n');
  console.log("scopes: ['userId'], ['userId', 'agentId'], ['agentId']; platform at 0 and 5 ms of simulated service latency per request.\n");
  const rows2: string[][] = [];
  for (const [c, latency] of [
    [clients[0], 0],
    [clients[0], 5],
    [clients[1], 0],
  ] as const) {
    mem0Server.setLatency(latency);
    const make = (searchConcurrency: 'parallel' | 'sequential') =>
      createAgent({
        client: new FixedReplyClient(),
        contextProviders: [
          new Mem0ContextProvider({
            client: c.client,
            agentId: 'concierge',
            searchScopes: [['userId'], ['userId', 'agentId'], ['agentId']],
            storeScope: ['appId'],
            searchConcurrency,
          }),
        ],
      });
    const seq = make('sequential');
    const par = make('parallel');
    const [s, p] = await compare([
      { name: 'sequential', run: () => seq.run(QUESTION, { session: sessionOf(seq) }) },
      { name: 'parallel', run: () => par.run(QUESTION, { session: sessionOf(par) }) },
    ]);
    rows2.push([`${c.name}${c === clients[0] ? `, +${latency} ms` : ''}`, fmtMs(s!.p50Ms), fmtMs(p!.p50Ms), fmtRatio(s!.p50Ms / p!.p50Ms)]);
  }
  mem0Server.setLatency(0);
  printTable(['client', 'sequential p50 ms', 'parallel p50 ms', 'sequential / parallel (p50)'], rows2);

  // 3. 'await' vs 'background' writes.
  console.log("\n## @ctx/mem0: writeMode 'await' vs 'background' (run latency; background writes flushed between runs, untimed)\n");
  const rows3: string[][] = [];
  for (const [c, latency] of [
    [clients[0], 5],
    [clients[1], 0],
  ] as const) {
    mem0Server.setLatency(latency);
    const providers = {
      await: new Mem0ContextProvider({ client: c.client }),
      background: new Mem0ContextProvider({ client: c.client, writeMode: 'background' }),
    };
    const awaitAgent = createAgent({ client: new FixedReplyClient(), contextProviders: [providers.await] });
    const bgAgent = createAgent({ client: new FixedReplyClient(), contextProviders: [providers.background] });
    let flushMs = 0;
    let flushes = 0;
    const [a, b] = await compare([
      { name: 'await', run: () => awaitAgent.run(QUESTION, { session: sessionOf(awaitAgent) }) },
      {
        name: 'background',
        setup: async () => {
          const t = performance.now();
          const { failed } = await providers.background.flush();
          if (failed.length > 0) throw failed[0]!.error;
          flushMs += performance.now() - t;
          flushes++;
        },
        run: () => bgAgent.run(QUESTION, { session: sessionOf(bgAgent) }),
      },
    ]);
    rows3.push([
      `${c.name}${c === clients[0] ? `, +${latency} ms` : ''}`,
      fmtMs(a!.p50Ms),
      fmtMs(b!.p50Ms),
      fmtMs(flushMs / flushes),
      fmtRatio(a!.p50Ms / b!.p50Ms),
    ]);
  }
  mem0Server.setLatency(0);
  printTable(['client', "'await' p50 ms", "'background' p50 ms", 'flush wait ms (mean)', 'await / background (p50)'], rows3);

  await mem0Server.close();
  await openai.close();
}

if (import.meta.url === `file://${process.argv[1]}`) await mem0Bench();
