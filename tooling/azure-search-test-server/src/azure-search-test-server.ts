import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseJsonBody, readBody, recordRequest, sendJson, startLocalHttpServer, type ErrorFormat } from '@ctx/http-test-kit';
import { applyBatch, IndexStore, project } from './documents.js';
import { SearchServiceError } from './errors.js';
import { parseIndexDefinition, type Vectorizer } from './index-definition.js';
import { checkRetrieveRequest, checkSearchRequest } from './api-version.js';
import { checkKnowledgeBase, retrieve } from './knowledge-retrieval.js';
import { search } from './search.js';
import type {
  AzureSearchTestServer,
  AzureSearchTestServerOptions,
  JsonObject,
  KnowledgeBaseDefinition,
  RecordedRequest,
  SearchOperation,
  SemanticErrorReason,
  ServerFault,
} from './types.js';

/** The bundled self-signed certificate (127.0.0.1 and localhost, valid 2000-2125): trust it with `tlsOptions: { ca: testCertificate }`. */
export const testCertificate: string = readFileSync(new URL('./tls/cert.pem', import.meta.url), 'utf8');
const testKey = (): string => readFileSync(new URL('./tls/key.pem', import.meta.url), 'utf8');

const QUERY_OPERATIONS: ReadonlySet<SearchOperation> = new Set(['lookup', 'count', 'search', 'retrieve']);
/** What the service says (402) once the free semantic ranker queries of the month are used up. */
const SEMANTIC_QUOTA_TEXT =
  'The free semantic ranker queries of this month are used up. Enable semantic ranker billing to keep using semantic search: https://aka.ms/SemanticPriceDocPage';
const STATUS_TEXT: Record<number, string> = {
  402: SEMANTIC_QUOTA_TEXT,
  409: 'The request conflicts with another write to the same resource. Retry the operation.',
  413: 'The request is too large. Send fewer or smaller documents per request.',
  429: 'You are sending too many requests. Please try again later.',
  500: 'An internal server error occurred.',
  502: 'Bad gateway.',
  503: 'Service Unavailable',
  504: 'The request timed out.',
};

/** The service's error body: `{"error":{"code":"","message":"..."}}`. */
const searchErrorFormat: ErrorFormat = (_status, message) => ({ error: { code: '', message } });
/** The content type the service gives its JSON replies. */
const ODATA_JSON = 'application/json; odata.metadata=none; odata.streaming=true; charset=utf-8';

interface Route {
  operation: SearchOperation | undefined;
  indexName: string | undefined;
  key?: string;
}

/**
 * Starts a local Azure AI Search REST server on `127.0.0.1` with a free port, for tests that run
 * the real `@azure/search-documents` SDK:
 * `new SearchClient(server.endpoint, 'docs', new AzureKeyCredential(server.apiKey), { allowInsecureConnection: true })`.
 * Indexes and documents live in memory. Call `close()` when done.
 */
export async function startAzureSearchTestServer(options: AzureSearchTestServerOptions = {}): Promise<AzureSearchTestServer> {
  const apiKey = options.apiKey ?? 'test-key';
  const queryKeys = new Set(options.queryKeys ?? []);
  const bearerTokens = new Set(options.bearerTokens ?? []);
  const serviceName = options.serviceName ?? 'local-search';
  const requests: RecordedRequest[] = [];
  const indexes = new Map<string, IndexStore>();
  let faults: (ServerFault & { remaining: number })[] = [];
  let latencyMs = 0;
  let semanticQueries = 0;
  let coverage = 100;
  let semanticFailure: { reason: SemanticErrorReason; remaining: number } | undefined;
  let replays: { status: number; body: JsonObject; remaining: number; operation: 'search' | 'retrieve' }[] = [];
  const knowledgeBases = new Map<string, KnowledgeBaseDefinition>();
  let failingSources = new Map<string, { code: string; message: string }>();

  const vectorize = async (vectorizer: Vectorizer, text: string, dimensions: number): Promise<number[]> => {
    if (vectorizer.kind !== 'azureOpenAI' || !vectorizer.resourceUri || !vectorizer.deploymentId) {
      throw new SearchServiceError(
        400,
        `The vectorizer '${vectorizer.name}' of kind '${vectorizer.kind}' is not supported by the test server (azureOpenAI with resourceUri and deploymentId).`,
      );
    }
    const url = `${vectorizer.resourceUri.replace(/\/+$/, '')}/openai/deployments/${encodeURIComponent(vectorizer.deploymentId)}/embeddings?api-version=2024-10-21`;
    const withDimensions = !/ada-002/.test(vectorizer.modelName ?? '');
    let reply: Response;
    try {
      reply = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(vectorizer.apiKey ? { 'api-key': vectorizer.apiKey } : {}) },
        body: JSON.stringify({ input: [text], ...(withDimensions ? { dimensions } : {}) }),
      });
    } catch (error) {
      throw new SearchServiceError(400, `Could not vectorize the query with vectorizer '${vectorizer.name}': ${(error as Error).message}`);
    }
    const json = (await reply.json().catch(() => undefined)) as
      | { data?: { embedding?: unknown }[]; error?: { message?: string } }
      | undefined;
    const embedding = json?.data?.[0]?.embedding;
    if (!reply.ok || !Array.isArray(embedding)) {
      throw new SearchServiceError(
        400,
        `Could not vectorize the query with vectorizer '${vectorizer.name}': ${reply.status} ${json?.error?.message ?? 'no embedding in the reply'}`,
      );
    }
    return embedding as number[];
  };

  const notFound = (indexName: string) =>
    new SearchServiceError(404, `The index '${indexName}' for service '${serviceName}' was not found.`);
  const storeOf = (indexName: string): IndexStore => {
    const store = indexes.get(indexName);
    if (!store) throw notFound(indexName);
    return store;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const rawBody = await readBody(req);
    const base = recordRequest(req, parseJsonBody(rawBody).value);
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const method = base.method;
    const path = safeDecode(base.path);
    const route = parseRoute(method, path);
    const recorded: RecordedRequest = {
      ...base,
      path,
      query: Object.fromEntries(Object.entries(base.query).map(([k, v]) => [k.replace(/^%24/i, '$'), v])),
      body: base.body as JsonObject | undefined,
      rawBody,
      operation: route.operation,
      indexName: route.indexName,
    };
    requests.push(recorded);
    const send = (status: number, body?: JsonObject | string, headers: Record<string, string> = {}) => {
      recorded.status = status;
      const serviceHeaders = { 'request-id': randomUUID(), 'elapsed-time': '1', 'odata-version': '4.0' };
      if (typeof body === 'object') {
        sendJson(res, status, body, { ...serviceHeaders, 'content-type': ODATA_JSON, ...headers });
        return;
      }
      if (res.destroyed) return;
      const text = body ?? '';
      res.writeHead(status, {
        ...serviceHeaders,
        ...(body === undefined ? {} : { 'content-type': 'text/plain; charset=utf-8' }),
        'content-length': String(Buffer.byteLength(text)),
        ...headers,
      });
      res.end(text);
    };
    const fail = (error: SearchServiceError, headers?: Record<string, string>) =>
      send(error.status, { error: { code: error.code, message: error.message } }, headers);

    const fault = faults.find(
      (f) => f.remaining > 0 && (!f.operations || (route.operation !== undefined && f.operations.includes(route.operation))),
    );
    if (fault) {
      fault.remaining--;
      if ('reset' in fault) {
        recorded.status = 0;
        req.socket.destroy();
        return;
      }
      const headers: Record<string, string> = {
        ...(fault.retryAfterSeconds === undefined ? {} : { 'retry-after': String(fault.retryAfterSeconds) }),
        ...(fault.retryAfterMs === undefined ? {} : { 'retry-after-ms': String(fault.retryAfterMs) }),
      };
      fail(
        new SearchServiceError(fault.status, fault.message ?? STATUS_TEXT[fault.status] ?? `Status ${fault.status}.`, fault.code),
        headers,
      );
      return;
    }
    if (latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, latencyMs));
    if (res.destroyed) return;

    const key = recorded.headers['api-key'];
    const bearer = /^Bearer\s+(.+)$/i.exec(recorded.headers.authorization ?? '')?.[1]?.trim();
    const admin = key === apiKey || (bearer !== undefined && bearerTokens.has(bearer));
    const query = key !== undefined && queryKeys.has(key);
    if (!admin && !query) {
      fail(
        new SearchServiceError(
          401,
          key === undefined && bearer === undefined
            ? 'Authentication failed: the request has no api-key header and no bearer token.'
            : 'Authentication failed: the api-key or bearer token is not valid for this service.',
        ),
      );
      return;
    }
    if (!admin && !(route.operation !== undefined && QUERY_OPERATIONS.has(route.operation))) {
      fail(
        new SearchServiceError(
          403,
          'Authorization failed: a query key can only read documents; this operation needs an admin key or role.',
        ),
      );
      return;
    }
    if (!url.searchParams.get('api-version')) {
      fail(new SearchServiceError(400, 'The api-version query parameter (?api-version=) is required for all requests.'));
      return;
    }
    if (route.operation === undefined) {
      fail(new SearchServiceError(404, `No HTTP resource was found that matches the request URI '${path}'.`));
      return;
    }
    if ((method === 'POST' || method === 'PUT') && recorded.body === undefined) {
      fail(new SearchServiceError(400, 'The request is invalid. Details: The request body is not valid JSON or is not a JSON object.'));
      return;
    }
    const body = recorded.body ?? {};
    const indexName = route.indexName;
    try {
      switch (route.operation) {
        case 'listIndexes':
          send(200, { value: [...indexes.values()].map((s) => s.definition.raw) });
          return;
        case 'createIndex': {
          const name = String(body.name);
          if (indexes.has(name))
            throw new SearchServiceError(409, `Cannot create index '${name}' because it already exists.`, 'ResourceNameAlreadyInUse');
          const definition = parseIndexDefinition(body, etag());
          indexes.set(definition.name, new IndexStore(definition));
          send(201, withContext(definition.raw, recorded));
          return;
        }
        case 'createOrUpdateIndex': {
          if (body.name !== indexName)
            throw new SearchServiceError(
              400,
              `The index name '${String(body.name)}' in the request body does not match the index name '${indexName}' in the URL.`,
            );
          const definition = parseIndexDefinition(body, etag());
          const existing = indexes.get(definition.name);
          if (existing) {
            for (const old of existing.definition.fields) {
              const now = definition.fields.find((f) => f.name === old.name);
              if (!now || now.type !== old.type || now.key !== old.key || now.dimensions !== old.dimensions) {
                throw new SearchServiceError(
                  400,
                  `Existing field(s) '${old.name}' in index '${definition.name}' cannot be changed or removed.`,
                  'OperationNotAllowed',
                );
              }
            }
            existing.redefine(definition);
          } else {
            indexes.set(definition.name, new IndexStore(definition));
          }
          const prefer = recorded.headers.prefer ?? '';
          if (prefer.includes('return=representation')) send(existing ? 200 : 201, withContext(definition.raw, recorded));
          else send(204);
          return;
        }
        case 'getIndex':
          send(200, withContext(storeOf(indexName!).definition.raw, recorded));
          return;
        case 'deleteIndex':
          storeOf(indexName!);
          indexes.delete(indexName!);
          send(204);
          return;
        case 'index': {
          const result = applyBatch(storeOf(indexName!), recorded.body);
          send(result.status, result.body);
          return;
        }
        case 'lookup': {
          const store = storeOf(indexName!);
          const stored = store.documents.get(route.key!);
          if (!stored) throw new SearchServiceError(404, `No document with key '${route.key!}' was found in index '${indexName!}'.`);
          const select = recorded.query.$select;
          send(200, project(store.definition, stored.document, select ? select.split(',').map((s) => s.trim()) : undefined));
          return;
        }
        case 'count':
          // The service answers with a UTF-8 BOM and the number as text/plain.
          send(200, `\uFEFF${storeOf(indexName!).documents.size}`);
          return;
        case 'search': {
          const apiVersion = url.searchParams.get('api-version')!;
          const replay = replays.find((r) => r.remaining > 0 && r.operation === 'search');
          if (replay) {
            checkSearchRequest(body, apiVersion);
            replay.remaining--;
            send(replay.status, structuredClone(replay.body));
            return;
          }
          const store = storeOf(indexName!);
          const semantic = body.queryType === 'semantic';
          if (semantic && semanticQueries++ >= (options.semanticFreeQueries ?? Number.POSITIVE_INFINITY))
            throw new SearchServiceError(402, SEMANTIC_QUOTA_TEXT);
          let failure: SemanticErrorReason | undefined;
          if (semantic && semanticFailure && semanticFailure.remaining > 0) {
            semanticFailure.remaining--;
            failure = semanticFailure.reason;
          }
          const host = recorded.headers.host ?? '127.0.0.1';
          const nextLink = `${options.tls ? 'https' : 'http'}://${host}${base.path}?api-version=${encodeURIComponent(apiVersion)}`;
          const result = await search(store, body, vectorize, { apiVersion, nextLink, coverage, semanticFailure: failure });
          send(result.status, result.body);
          return;
        }
        case 'retrieve': {
          const apiVersion = url.searchParams.get('api-version')!;
          const replay = replays.find((r) => r.remaining > 0 && r.operation === 'retrieve');
          if (replay) {
            checkRetrieveRequest(body, apiVersion);
            replay.remaining--;
            send(replay.status, structuredClone(replay.body));
            return;
          }
          const knowledgeBase = knowledgeBases.get(indexName!);
          if (!knowledgeBase)
            throw new SearchServiceError(404, `The knowledge base '${indexName!}' for service '${serviceName}' was not found.`);
          const result = await retrieve(knowledgeBase, body, {
            apiVersion,
            storeOf: (name) => indexes.get(name),
            vectorize,
            failing: failingSources,
          });
          send(result.status, result.body);
          return;
        }
      }
    } catch (error) {
      if (error instanceof SearchServiceError) fail(error);
      else
        fail(
          new SearchServiceError(
            500,
            `The Azure AI Search test server failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
          ),
        );
    }
  };

  const http = await startLocalHttpServer(handle, {
    name: 'Azure AI Search test server',
    errorFormat: searchErrorFormat,
    ...(options.tls ? { tls: { cert: testCertificate, key: testKey() } } : {}),
  });
  let closing: Promise<void> | undefined;

  return {
    endpoint: http.origin,
    apiKey,
    requests,
    injectFault(fault) {
      faults = [{ ...fault, remaining: fault.times ?? Number.POSITIVE_INFINITY }, ...faults];
    },
    clearFaults() {
      faults = [];
      failingSources = new Map();
      semanticFailure = undefined;
    },
    setLatency(ms) {
      latencyMs = ms;
    },
    failSemanticRanker({ reason = 'capacityOverloaded', times } = {}) {
      semanticFailure = { reason, remaining: times ?? Number.POSITIVE_INFINITY };
    },
    setCoverage(percent) {
      if (!(percent >= 0 && percent <= 100)) throw new RangeError(`Coverage is a percentage from 0 to 100, got ${percent}.`);
      coverage = percent;
    },
    replay({ status, body, times = 1, operation = 'search' }) {
      replays.push({ status, body: structuredClone(body), remaining: times, operation });
    },
    createKnowledgeBase(definition) {
      const checked = checkKnowledgeBase(definition);
      knowledgeBases.set(checked.name, checked);
    },
    failKnowledgeSource(name, error = { code: '503', message: `The knowledge source '${name}' is unavailable.` }) {
      failingSources.set(name, error);
    },
    documents(indexName) {
      const store = indexes.get(indexName);
      return store ? [...store.documents.values()].map((d) => structuredClone(d.document)) : undefined;
    },
    reset() {
      indexes.clear();
      requests.length = 0;
      faults = [];
      latencyMs = 0;
      semanticQueries = 0;
      coverage = 100;
      semanticFailure = undefined;
      replays = [];
      knowledgeBases.clear();
      failingSources = new Map();
    },
    close() {
      closing ??= http.stop();
      return closing;
    },
  };
}

/**
 * Maps a path to an operation. Index names are given as `indexes('name')` (what the SDK sends) or
 * `indexes/name`; document keys as `docs('key')` or `docs/key`.
 */
function parseRoute(method: string, path: string): Route {
  const clean = path.length > 1 ? path.replace(/\/+$/, '') : path;
  if (clean === '/indexes') {
    if (method === 'GET') return { operation: 'listIndexes', indexName: undefined };
    if (method === 'POST') return { operation: 'createIndex', indexName: undefined };
    return { operation: undefined, indexName: undefined };
  }
  const knowledge = /^\/knowledgebases(?:\('((?:[^']|'')*)'\)|\/([^/]+))\/retrieve$/.exec(clean);
  if (knowledge) {
    const name = (knowledge[1] ?? knowledge[2] ?? '').replace(/''/g, "'");
    return { operation: method === 'POST' ? 'retrieve' : undefined, indexName: name };
  }
  const match = /^\/indexes(?:\('((?:[^']|'')*)'\)|\/([^/]+))(\/.*)?$/.exec(clean);
  if (!match) return { operation: undefined, indexName: undefined };
  const indexName = (match[1] ?? match[2] ?? '').replace(/''/g, "'");
  const rest = match[3] ?? '';
  const none = { operation: undefined, indexName };
  if (rest === '') {
    if (method === 'PUT') return { operation: 'createOrUpdateIndex', indexName };
    if (method === 'GET') return { operation: 'getIndex', indexName };
    if (method === 'DELETE') return { operation: 'deleteIndex', indexName };
    return none;
  }
  if (rest === '/docs/search.index') return method === 'POST' ? { operation: 'index', indexName } : none;
  if (rest === '/docs/search.post.search') return method === 'POST' ? { operation: 'search', indexName } : none;
  if (rest === '/docs/$count') return method === 'GET' ? { operation: 'count', indexName } : none;
  const lookup = /^\/docs(?:\('((?:[^']|'')*)'\)|\/([^/]+))$/.exec(rest);
  if (lookup && method === 'GET' && lookup[2] !== 'search.post.search') {
    return { operation: 'lookup', indexName, key: (lookup[1] ?? lookup[2] ?? '').replace(/''/g, "'") };
  }
  return none;
}

function withContext(body: JsonObject, recorded: RecordedRequest): JsonObject {
  const accept = recorded.headers.accept ?? '';
  if (!accept.includes('odata.metadata=minimal')) return body;
  return { '@odata.context': `https://local-search/$metadata#indexes/$entity`, ...body };
}

function etag(): string {
  return `"0x${randomUUID().replace(/-/g, '').slice(0, 15).toUpperCase()}"`;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
