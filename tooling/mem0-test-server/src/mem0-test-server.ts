import { createHash, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isJsonObject, readJsonBody, recordRequest, sendJson, startLocalHttpServer } from '@ctx/http-test-kit';
import { deterministicEmbedding } from '@ctx/openai-test-server';
import { compileFilter, FilterError, hasEntityCondition } from './filters.js';
import type {
  AddMessage,
  AddScope,
  Extractor,
  JsonObject,
  Mem0TestServer,
  Mem0TestServerOptions,
  RecordedRequest,
  ScriptedFailure,
  StoredMemory,
} from './types.js';

const ENTITY_KEYS = ['user_id', 'agent_id', 'app_id', 'run_id'] as const;
const QUEUED = 'Memory processing has been queued for background execution';

/** The default extractor: one memory per non-empty `user` message. */
export const extractUserMessages: Extractor = (messages) =>
  messages
    .filter((m) => m.role === 'user')
    .map((m) => m.content.trim())
    .filter((t) => t.length > 0);

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`HTTP ${status}`);
  }
}

function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  for (let i = 0; i < a.length; i++) dot += a[i]! * b[i]!;
  return dot; // both are unit vectors
}

/**
 * Starts a local mem0 platform REST server on `127.0.0.1` with a free port, for tests that run the
 * real `mem0ai` `MemoryClient` (`new MemoryClient({ apiKey: 'test-key', host: server.url })`).
 * Serves `GET /v1/ping/`, `POST /v3/memories/add/`, `POST /v3/memories/search/`, `POST /v3/memories/`
 * (list), `GET` / `DELETE /v1/memories/{id}/` and `DELETE /v1/memories/?user_id=...` with the
 * platform's filter grammar, `Authorization: Token KEY`, and cosine ranking over deterministic
 * embeddings. Call `close()` when done.
 */
export async function startMem0TestServer(options: Mem0TestServerOptions = {}): Promise<Mem0TestServer> {
  const apiKey = options.apiKey ?? 'test-key';
  const extract = options.extract ?? extractUserMessages;
  const defaultThreshold = options.defaultThreshold ?? 0.3;
  const processingDelayMs = options.processingDelayMs ?? 0;
  let latencyMs = options.latencyMs ?? 0;
  const requests: RecordedRequest[] = [];
  const memories = new Map<string, StoredMemory>();
  const embeddings = new Map<string, number[]>();
  const failures: (ScriptedFailure & { left: number })[] = [];
  const processing = new Set<Promise<void>>();

  const embed = (id: string, text: string) => {
    let vector = embeddings.get(id);
    if (!vector) embeddings.set(id, (vector = deterministicEmbedding(text)));
    return vector;
  };

  const apply = (texts: string[], scope: AddScope, metadata: JsonObject | null) => {
    const results: JsonObject[] = [];
    for (const text of texts) {
      const hash = createHash('md5').update(text).digest('hex');
      const same = [...memories.values()].find((m) => m.hash === hash && ENTITY_KEYS.every((k) => m[k] === scope[k]));
      if (same) continue; // the platform answers NOOP for a fact it already holds
      const now = new Date().toISOString();
      const memory: StoredMemory = {
        id: randomUUID(),
        memory: text,
        hash,
        ...scope,
        metadata,
        categories: [],
        created_at: now,
        updated_at: now,
        expiration_date: null,
        immutable: false,
      };
      memories.set(memory.id, memory);
      embed(memory.id, text);
      results.push({ id: memory.id, event: 'ADD', memory: text });
    }
    return results;
  };

  const handlers: Record<string, (req: RecordedRequest, id?: string) => unknown> = {
    'GET /v1/ping/': () => ({ status: 'ok', org_id: 'org-test', project_id: 'proj-test', user_email: null }),
    'POST /v3/memories/add/': (req) => {
      const body = req.body ?? {};
      const messages = parseMessages(body.messages);
      const scope = parseScope(body);
      if (ENTITY_KEYS.every((k) => scope[k] === null))
        throw new HttpError(400, { error: 'At least one of user_id, agent_id, app_id or run_id is required.' });
      if (body.metadata !== undefined && body.metadata !== null && !isJsonObject(body.metadata))
        throw new HttpError(400, { error: 'metadata must be an object.' });
      const metadata = isJsonObject(body.metadata) ? body.metadata : null;
      const texts = body.infer === false ? messages.filter((m) => m.role !== 'system').map((m) => m.content) : extract(messages, scope);
      if (body.async_mode === false) return { results: apply(texts, scope, metadata) };
      if (processingDelayMs > 0) {
        const done = new Promise<void>((resolve) => setTimeout(resolve, processingDelayMs)).then(() => void apply(texts, scope, metadata));
        processing.add(done);
        void done.finally(() => processing.delete(done));
      } else {
        apply(texts, scope, metadata);
      }
      return { results: [{ message: QUEUED, status: 'PENDING', event_id: randomUUID() }] };
    },
    'POST /v3/memories/search/': (req) => {
      const body = req.body ?? {};
      if (typeof body.query !== 'string' || body.query.trim() === '') throw new HttpError(400, { error: 'query is required.' });
      const predicate = entityFilter(body.filters);
      const topK = integer(body.top_k, 'top_k', 10);
      const threshold = body.threshold === undefined || body.threshold === null ? defaultThreshold : body.threshold;
      if (typeof threshold !== 'number' || threshold < 0 || threshold > 1)
        throw new HttpError(400, { error: 'threshold must be a number between 0 and 1.' });
      const q = deterministicEmbedding(body.query);
      const results = [...memories.values()]
        .filter(predicate)
        .map((m) => ({ ...m, score: cosine(q, embed(m.id, m.memory)) }))
        .filter((m) => m.score >= threshold)
        .sort((a, b) => b.score - a.score)
        .slice(0, topK);
      return body.output_format === 'v1.0' ? results : { results };
    },
    'POST /v3/memories/': (req) => {
      const body = req.body ?? {};
      const predicate = entityFilter(body.filters);
      const page = integer(req.query.page, 'page', 1, 1);
      const pageSize = integer(req.query.page_size, 'page_size', 100, 1);
      const all = [...memories.values()].filter(predicate);
      const results = all.slice((page - 1) * pageSize, page * pageSize);
      const link = (p: number) => `/v3/memories/?page=${p}&page_size=${pageSize}`;
      return {
        count: all.length,
        next: page * pageSize < all.length ? link(page + 1) : null,
        previous: page > 1 ? link(page - 1) : null,
        results,
      };
    },
    'GET /v1/memories/:id/': (_req, id) => {
      const memory = memories.get(id!);
      if (!memory) throw new HttpError(404, { error: 'Memory not found!' });
      return memory;
    },
    'DELETE /v1/memories/:id/': (_req, id) => {
      if (!memories.delete(id!)) throw new HttpError(404, { error: 'Memory not found!' });
      embeddings.delete(id!);
      return { message: 'Memory deleted successfully!' };
    },
    'DELETE /v1/memories/': (req) => {
      const scope = ENTITY_KEYS.filter((k) => req.query[k] !== undefined);
      if (scope.length === 0) throw new HttpError(400, { error: 'At least one of user_id, agent_id, app_id or run_id is required.' });
      for (const m of [...memories.values()]) {
        if (scope.every((k) => m[k] === req.query[k])) {
          memories.delete(m.id);
          embeddings.delete(m.id);
        }
      }
      return { message: 'Memories deleted successfully!' };
    },
  };

  const route = (req: RecordedRequest): [(req: RecordedRequest, id?: string) => unknown, string | undefined] | undefined => {
    const exact = handlers[`${req.method} ${req.path}`];
    if (exact) return [exact, undefined];
    const match = /^\/v1\/memories\/([^/]+)\/$/.exec(req.path);
    const byId = match && handlers[`${req.method} /v1/memories/:id/`];
    return byId ? [byId, decodeURIComponent(match[1]!)] : undefined;
  };

  let inFlight = 0;
  let maxInFlight = 0;
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    maxInFlight = Math.max(maxInFlight, ++inFlight);
    try {
      await answer(req, res);
    } finally {
      inFlight--;
    }
  };

  const answer = async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readJsonBody(req);
    const recorded: RecordedRequest = recordRequest(req, body.value);
    requests.push(recorded);
    if (latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, latencyMs));
    const send = (status: number, payload: unknown) => void sendJson(res, status, payload);
    if (recorded.headers.authorization !== `Token ${apiKey}`) return send(401, { detail: 'Invalid API key.' });
    if (body.invalid) return send(400, { error: 'Invalid JSON body.' });
    const failure = failures.find((f) => (f.path === undefined ? recorded.path !== '/v1/ping/' : recorded.path.startsWith(f.path)));
    if (failure) {
      if (--failure.left <= 0) failures.splice(failures.indexOf(failure), 1);
      return send(failure.status, failure.body ?? { detail: `Scripted failure (HTTP ${failure.status}).` });
    }
    const found = route(recorded);
    if (!found) return send(404, { detail: `Not found: ${recorded.method} ${recorded.path}` });
    try {
      send(200, found[0](recorded, found[1]));
    } catch (error) {
      if (error instanceof HttpError) return send(error.status, error.body);
      if (error instanceof FilterError) return send(400, { error: error.message });
      throw error;
    }
  };

  const http = await startLocalHttpServer(handle, { name: 'mem0 test server', errorFormat: (_status, message) => ({ detail: message }) });
  let closed = false;

  return {
    url: http.origin,
    port: http.port,
    apiKey,
    requests,
    memories: () => [...memories.values()].map((m) => structuredClone(m)),
    failNext: (failure) => void failures.push({ ...failure, left: failure.times ?? 1 }),
    setLatency: (ms) => void (latencyMs = ms),
    maxInFlight: () => maxInFlight,
    pause: () => http.stop(),
    async resume() {
      if (closed) throw new Error('The mem0 test server was closed.');
      await http.restart();
    },
    async settle() {
      while (processing.size > 0) await Promise.all([...processing]);
    },
    reset() {
      memories.clear();
      embeddings.clear();
      failures.splice(0);
      requests.splice(0);
      maxInFlight = inFlight;
    },
    async close() {
      closed = true;
      await http.stop();
    },
  };
}

function parseMessages(value: unknown): AddMessage[] {
  if (!Array.isArray(value) || value.length === 0) throw new HttpError(400, { error: 'messages must be a non-empty list.' });
  return value.map((m, i) => {
    if (!isJsonObject(m) || typeof m.role !== 'string' || typeof m.content !== 'string')
      throw new HttpError(400, { error: `messages[${i}] must be { role, content } with string values.` });
    return { role: m.role, content: m.content };
  });
}

function parseScope(body: JsonObject): AddScope {
  const scope = { user_id: null, agent_id: null, app_id: null, run_id: null } as AddScope;
  for (const key of ENTITY_KEYS) {
    const value = body[key];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'string' || value === '' || value === '*')
      throw new HttpError(400, { error: `${key} must be a non-empty string other than '*'.` });
    scope[key] = value;
  }
  return scope;
}

function entityFilter(filters: unknown): (m: StoredMemory) => boolean {
  if (filters === undefined || filters === null)
    throw new HttpError(400, { error: 'filters are required: give at least one of user_id, agent_id, app_id or run_id.' });
  const predicate = compileFilter(filters);
  if (!hasEntityCondition(filters))
    throw new HttpError(400, { error: 'filters must name at least one of user_id, agent_id, app_id or run_id.' });
  return predicate;
}

function integer(value: unknown, name: string, fallback: number, min = 0): number {
  if (value === undefined || value === null) return fallback;
  const n = typeof value === 'string' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min)
    throw new HttpError(400, { error: `${name} must be an integer >= ${min}.` });
  return n;
}
