import { type OpenAITestServer, type RecordedRequest, startOpenAITestServer } from '@ctx/openai-test-server';
import { MemoryClient } from 'mem0ai';
import { Memory } from 'mem0ai/oss';

/** The mem0 client the example uses, and how to let go of what was started for it. */
export interface MemoryBackend {
  client: Memory | MemoryClient;
  /** Says which backend it is. */
  label: string;
  close(): Promise<void>;
}

/**
 * The mem0 platform (`MemoryClient`) when `MEM0_API_KEY` is set; otherwise mem0's open-source
 * `Memory`, fully offline: an in-memory vector store, and for its LLM and embedder a local
 * OpenAI-protocol server on 127.0.0.1 that extracts every user sentence as a fact.
 */
export async function startMemoryBackend(env: NodeJS.ProcessEnv = process.env): Promise<MemoryBackend> {
  if (env.MEM0_API_KEY) {
    return { client: new MemoryClient({ apiKey: env.MEM0_API_KEY }), label: 'mem0 platform (MEM0_API_KEY)', close: async () => {} };
  }
  const server = await startOpenAITestServer();
  server.respondWith(extractFacts);
  const client = new Memory({
    embedder: { provider: 'openai', config: { apiKey: server.apiKey, baseURL: server.url, model: 'text-embedding-3-small' } },
    vectorStore: { provider: 'memory', config: { collectionName: 'mem0-memory-example', dimension: 1536, dbPath: ':memory:' } },
    llm: { provider: 'openai', config: { apiKey: server.apiKey, baseURL: server.url, model: 'gpt-4o-mini' } },
    disableHistory: true,
  } as ConstructorParameters<typeof Memory>[0]);
  return { client, label: `mem0 open-source Memory, offline (its LLM and embedder: ${server.url})`, close: () => closeServer(server) };
}

const closeServer = (server: OpenAITestServer) => server.close();

/**
 * mem0's fact extraction, done deterministically: each user line of the prompt's "New Messages"
 * section becomes one memory, in the `{"memory":[{"id","text"}]}` shape mem0 asks for.
 */
function extractFacts(request: RecordedRequest): { text: string } | undefined {
  const messages = (request.body?.messages ?? []) as { role: string; content: string }[];
  const prompt = messages.find((m) => m.role === 'user')?.content ?? '';
  if ((request.body?.response_format as { type?: string } | undefined)?.type !== 'json_object') return undefined;
  const section = /## New Messages\n([\s\S]*?)\n\n## /.exec(prompt)?.[1] ?? '';
  const facts = section
    .split('\n')
    .map((line) => /^user: (.+)$/.exec(line)?.[1]?.trim())
    .filter((fact): fact is string => Boolean(fact));
  return { text: JSON.stringify({ memory: facts.map((text, i) => ({ id: String(i), text, attributed_to: 'user' })) }) };
}
