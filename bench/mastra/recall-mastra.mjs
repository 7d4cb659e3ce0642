// Mastra's @mastra/memory semantic recall on the recall benchmark's data, set up as its docs recommend:
// `Memory` with `LibSQLStore` and `LibSQLVector` on a temporary file, `semanticRecall: { topK, messageRange,
// scope: 'resource' }` and `lastMessages`. The embedder is ctx's `createHashEmbedding` wrapped as an AI SDK
// embedding model (specification v3), or OpenAI's text-embedding-3-small through the same wrapper when
// OPENAI_API_KEY is set. Run by ../src/recall.ts under Node >= 22.13 (Mastra's requirement):
//   node recall-mastra.mjs <dataset.json> <options.json>   prints one JSON object on stdout.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { LibSQLStore, LibSQLVector } from '@mastra/libsql';
import { Memory } from '@mastra/memory';
import { createHashEmbedding } from '../../packages/core/dist/index.js';
import { OpenAIEmbeddings } from '../../packages/openai/dist/index.js';

const [datasetPath, optionsPath] = process.argv.slice(2);
const data = JSON.parse(readFileSync(datasetPath, 'utf8'));
const { topK, messageRange, lastMessages, dimensions, runs } = JSON.parse(readFileSync(optionsPath, 'utf8'));

const generator = process.env.OPENAI_API_KEY ? new OpenAIEmbeddings({ dimensions }) : createHashEmbedding({ dimensions });
/** ctx's EmbeddingGenerator as an AI SDK embedding model (specification v3). */
const embedder = {
  specificationVersion: 'v3',
  provider: 'ctx',
  modelId: process.env.OPENAI_API_KEY ? 'text-embedding-3-small' : 'hash-embedding',
  maxEmbeddingsPerCall: 2048,
  supportsParallelCalls: true,
  async doEmbed({ values, abortSignal }) {
    return { embeddings: await generator.embed(values, abortSignal ? { signal: abortSignal } : {}), warnings: [] };
  },
};

const dir = mkdtempSync(join(tmpdir(), 'ctx-bench-mastra-'));
const url = `file:${join(dir, 'memory.db')}`;
const storage = new LibSQLStore({ id: 'bench-storage', url });
const vector = new LibSQLVector({ id: 'bench-vector', url });
const memory = new Memory({
  storage,
  vector,
  embedder,
  options: { lastMessages, semanticRecall: { topK, messageRange, scope: 'resource' } },
});

const resourceId = data.userId;
const threadIds = data.sessions.map((_, s) => `thread-${s}`);
const base = Date.parse('2026-01-01T00:00:00Z');
const loadStart = performance.now();
let clock = 0;
for (const [s, turns] of data.sessions.entries()) {
  const at = new Date(base + clock);
  await memory.saveThread({ thread: { id: threadIds[s], resourceId, title: `session ${s}`, createdAt: at, updatedAt: at, metadata: {} } });
  const messages = turns.flatMap((turn, t) =>
    ['user', 'assistant'].map((role) => ({
      id: `s${s}-t${t}-${role}`,
      role,
      threadId: threadIds[s],
      resourceId,
      createdAt: new Date(base + ++clock * 1000),
      content: { format: 2, parts: [{ type: 'text', text: role === 'user' ? turn.user : turn.assistant }] },
    })),
  );
  await memory.saveMessages({ messages });
}
await memory.settled?.();
const loadMs = performance.now() - loadStart;

const last = threadIds.at(-1);
const textOf = (m) =>
  (m.content?.parts ?? [])
    .filter((p) => p.type === 'text')
    .map((p) => p.text)
    .join('\n');
const results = [];
for (const question of data.questions) {
  const times = [];
  let texts = [];
  for (let r = 0; r < runs; r++) {
    const start = performance.now();
    const { messages } = await memory.recall({ threadId: last, resourceId, vectorSearchString: question.text });
    times.push(performance.now() - start);
    texts = messages.map((m) => ({ role: m.role, text: textOf(m) }));
  }
  results.push({ question: question.text, texts, times });
}
await memory.settled?.();
rmSync(dir, { recursive: true, force: true });
process.stdout.write(JSON.stringify({ node: process.version, loadMs, results }));
