import { startMem0TestServer, type Mem0TestServer } from '@ctx/mem0-test-server';
import { startOpenAITestServer, type OpenAITestServer, type RecordedRequest } from '@ctx/openai-test-server';
import { MemoryClient } from 'mem0ai';
import { Memory } from 'mem0ai/oss';
import { afterAll } from 'vitest';
import { startOutageProxy } from './proxy.js';

/** One mem0 backend under test, with its client and the local server behind it. */
export interface Backend {
  name: 'oss' | 'platform';
  /** The real mem0ai client: an OSS `Memory` or a platform `MemoryClient`. */
  client: Memory | MemoryClient;
  /** Makes the backend unreachable (the OpenAI server for OSS, the mem0 server for the platform). */
  down(): Promise<void>;
  /** Brings it back, with what it stored. */
  up(): Promise<void>;
  /** What the backend's LLM was asked to extract from (OSS) or what mem0 was sent to add (platform): one entry per add. */
  addedTurns(): string[][];
}

const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/**
 * The messages of mem0 OSS's extraction prompt ("## New Messages" section, `role: content` lines;
 * a line without a role prefix continues the message before it).
 */
export function newMessagesOf(prompt: string): { role: string; content: string }[] {
  const section = /## New Messages\n([\s\S]*?)\n\n## Observation Date/.exec(prompt)?.[1] ?? '';
  const out: { role: string; content: string }[] = [];
  for (const line of section.split('\n')) {
    const match = /^(user|assistant|system): (.*)$/.exec(line);
    if (match) out.push({ role: match[1]!, content: match[2]! });
    else if (out.length > 0) out.at(-1)!.content += `\n${line}`;
  }
  return out;
}

/**
 * Scripts mem0 OSS's fact extraction deterministically: every user message of the "New Messages"
 * section becomes one memory (the same rule as the mem0 test server), in the
 * `{"memory":[{"id","text","attributed_to"}]}` format of mem0's additive extraction prompt.
 */
export function extractionReply(request: RecordedRequest): { text: string } | undefined {
  const messages = (request.body?.messages ?? []) as { role: string; content: string }[];
  const format = request.body?.response_format as { type?: string } | undefined;
  const prompt = messages.find((m) => m.role === 'user')?.content ?? '';
  if (format?.type !== 'json_object' || !prompt.includes('## New Messages')) return undefined;
  const facts = newMessagesOf(prompt)
    .filter((m) => m.role === 'user')
    .map((m) => m.content.trim())
    .filter(Boolean);
  return { text: JSON.stringify({ memory: facts.map((text, i) => ({ id: String(i), text, attributed_to: 'user' })) }) };
}

/** The `Memory` config for the local OpenAI-protocol server: in-memory vector store, no history. */
export function ossConfig(openai: OpenAITestServer, baseURL = openai.url): Record<string, unknown> {
  return {
    embedder: { provider: 'openai', config: { apiKey: openai.apiKey, baseURL, model: 'text-embedding-3-small' } },
    vectorStore: { provider: 'memory', config: { collectionName: 'ctx-test', dimension: 1536, dbPath: ':memory:' } },
    llm: { provider: 'openai', config: { apiKey: openai.apiKey, baseURL, model: 'gpt-4o-mini' } },
    disableHistory: true,
  };
}

/**
 * mem0 OSS `Memory`, fully offline: the local OpenAI-protocol server for its LLM and embedder,
 * reached through a loopback proxy that `down()` takes away.
 */
export async function ossBackend(): Promise<Backend & { openai: OpenAITestServer }> {
  const openai = await startOpenAITestServer();
  openai.respondWith(extractionReply);
  const proxy = await startOutageProxy(Number(new URL(openai.url).port));
  closers.push(async () => {
    await proxy.close();
    await openai.close();
  });
  const client = new Memory(ossConfig(openai, `http://127.0.0.1:${proxy.port}/v1`) as ConstructorParameters<typeof Memory>[0]);
  return {
    name: 'oss',
    client,
    openai,
    down: () => proxy.down(),
    up: () => proxy.up(),
    addedTurns: () =>
      openai.requests
        .filter((r) => r.route === '/chat/completions' && extractionReply(r) !== undefined)
        .map((r) =>
          newMessagesOf(((r.body?.messages ?? []) as { role: string; content: string }[]).find((m) => m.role === 'user')!.content).map(
            (m) => `${m.role}: ${m.content}`,
          ),
        ),
  };
}

/** The platform `MemoryClient` against the local mem0 REST server. */
export async function platformBackend(): Promise<Backend & { server: Mem0TestServer }> {
  const server = await startMem0TestServer();
  closers.push(() => server.close());
  const client = new MemoryClient({ apiKey: server.apiKey, host: server.url });
  return {
    name: 'platform',
    client,
    server,
    down: () => server.pause(),
    up: () => server.resume(),
    addedTurns: () =>
      server.requests
        .filter((r) => r.path === '/v3/memories/add/' && r.method === 'POST')
        .map((r) => ((r.body?.messages ?? []) as { role: string; content: string }[]).map((m) => `${m.role}: ${m.content}`)),
  };
}

/** A unique id per call, so tests sharing a backend never meet. */
export function uniqueId(name: string): string {
  return `${name}-${Math.random().toString(36).slice(2, 10)}`;
}
