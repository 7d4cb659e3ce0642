import type { IncomingMessage, ServerResponse } from 'node:http';
import { readJsonBody, recordRequest, startLocalHttpServer } from '@ctx/http-test-kit';
import { handleChatCompletions } from './chat-completions.js';
import { handleEmbeddings } from './embeddings.js';
import { openAIErrorFormat, sendError, sendJson, type Exchange } from './exchange.js';
import { newId } from './ids.js';
import type { ReplySource } from './replies.js';
import {
  handleCreateConversation,
  handleCompact,
  handleCreateConversationItems,
  handleCreateResponse,
  handleDeleteConversation,
  handleDeleteResponse,
  handleGetConversation,
  handleGetResponse,
  handleListConversationItems,
  handleListInputItems,
  ResponsesStore,
} from './responses.js';
import { isObject } from './tokens.js';
import type { JsonObject, OpenAITestServer, OpenAITestServerOptions, RecordedRequest, Responder, ScriptedReply } from './types.js';

const INVALID_JSON =
  "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)";

const MODELS = ['gpt-4o', 'gpt-4o-mini', 'gpt-4.1', 'gpt-4.1-mini', 'o4-mini', 'text-embedding-3-small', 'text-embedding-3-large'];

/**
 * Starts a local OpenAI-protocol server on `127.0.0.1` with a free port, for tests that run the
 * real `openai` SDK (`new OpenAI({ baseURL: server.url, apiKey: 'test-key' })`) or `AzureOpenAI`
 * (`endpoint: server.origin`). Serves chat completions, responses, conversations, embeddings and
 * models under `/v1`, `/openai/v1`, `/openai` and `/openai/deployments/{deployment}`.
 * Call `close()` when done.
 */
export async function startOpenAITestServer(options: OpenAITestServerOptions = {}): Promise<OpenAITestServer> {
  const apiKey = options.apiKey ?? 'test-key';
  const requests: RecordedRequest[] = [];
  const queue: ScriptedReply[] = [];
  let responder: Responder | undefined;
  const store = new ResponsesStore();
  const source: ReplySource = {
    take: (request) => (queue.length > 0 ? queue.shift() : responder?.(request)),
  };

  const state: ServerState = { apiKey, generation: 0, requests, source, store, reuseIds: options.reuseIds === true };
  const http = await startLocalHttpServer((req, res) => handleRequest(req, res, state), {
    name: 'OpenAI test server',
    errorFormat: openAIErrorFormat,
  });
  const origin = http.origin;
  let closing: Promise<void> | undefined;

  return {
    url: `${origin}/v1`,
    origin,
    apiKey,
    requests,
    enqueue: (...replies) => {
      queue.push(...replies);
    },
    respondWith: (fn) => {
      responder = fn;
    },
    conversation: (responseId) => store.chain(responseId),
    conversationItems: (conversationId) => store.conversationItems(conversationId),
    reset: () => {
      queue.length = 0;
      responder = undefined;
      requests.length = 0;
      store.clear();
      state.generation++;
    },
    close: () => {
      closing ??= http.stop();
      return closing;
    },
  };
}

interface ServerState {
  apiKey: string;
  /** Bumped by `reset()`: a request that arrived before it is neither recorded nor answered. */
  generation: number;
  requests: RecordedRequest[];
  source: ReplySource;
  store: ResponsesStore;
  /** The `reuseIds` option: one completion id and one response id for every answer. */
  reuseIds: boolean;
}

async function handleRequest(req: IncomingMessage, res: ServerResponse, state: ServerState): Promise<void> {
  const controller = new AbortController();
  const generation = state.generation;
  const parsed = (await readJsonBody(req)).value;
  if (generation !== state.generation) {
    // Left over from before reset() (e.g. a request its client aborted): drop it, record nothing.
    res.destroy();
    return;
  }
  const base = recordRequest(req, parsed);
  const { route, deployment } = parseRoute(base.path);
  const recorded: RecordedRequest = { ...base, route, ...(deployment === undefined ? {} : { deployment }) };
  state.requests.push(recorded);
  res.on('close', () => {
    if (!res.writableFinished) {
      recorded.aborted = true;
      controller.abort();
    }
  });
  if (req.socket.destroyed) {
    recorded.aborted = true;
    controller.abort();
  }
  const ex: Exchange = {
    req,
    res,
    recorded,
    signal: controller.signal,
    requestId: newId('req'),
    serviceId: (prefix, separator = prefix === 'chatcmpl' ? '-' : '_') =>
      state.reuseIds ? `${prefix}${separator}reused` : newId(prefix, separator),
  };

  const authError = checkAuth(recorded.headers, state.apiKey);
  if (authError !== undefined) {
    sendError(ex, 401, { message: authError, type: 'invalid_request_error', code: 'invalid_api_key' });
    return;
  }
  if (route === undefined) {
    sendNotFound(ex);
    return;
  }
  const method = recorded.method;
  if (method === 'POST' && !isObject(parsed)) {
    sendError(ex, 400, { message: INVALID_JSON });
    return;
  }
  const body: JsonObject = isObject(parsed) ? parsed : {};
  const segments = route.split('/').filter(Boolean).map(decodeURIComponent);
  const [resource, id, sub, ...rest] = segments;

  if (method === 'POST' && route === '/chat/completions') {
    await handleChatCompletions(ex, body, state.source, deployment);
  } else if (method === 'POST' && route === '/embeddings') {
    handleEmbeddings(ex, body, deployment);
  } else if (resource === 'responses' && rest.length === 0) {
    if (method === 'POST' && id === undefined) await handleCreateResponse(ex, body, state.source, state.store, deployment);
    else if (method === 'POST' && id === 'compact' && sub === undefined) handleCompact(ex, body, state.store, deployment);
    else if (method === 'GET' && id !== undefined && sub === undefined) handleGetResponse(ex, id, state.store);
    else if (method === 'DELETE' && id !== undefined && sub === undefined) handleDeleteResponse(ex, id, state.store);
    else if (method === 'GET' && id !== undefined && sub === 'input_items') handleListInputItems(ex, id, state.store);
    else sendNotFound(ex);
  } else if (resource === 'conversations' && rest.length === 0) {
    if (method === 'POST' && id === undefined) handleCreateConversation(ex, body, state.store);
    else if (method === 'GET' && id !== undefined && sub === undefined) handleGetConversation(ex, id, state.store);
    else if (method === 'DELETE' && id !== undefined && sub === undefined) handleDeleteConversation(ex, id, state.store);
    else if (method === 'GET' && id !== undefined && sub === 'items') handleListConversationItems(ex, id, state.store);
    else if (method === 'POST' && id !== undefined && sub === 'items') handleCreateConversationItems(ex, id, body, state.store);
    else sendNotFound(ex);
  } else if (method === 'GET' && resource === 'models' && sub === undefined) {
    handleModels(ex, id);
  } else {
    sendNotFound(ex);
  }
}

/**
 * Strips the client-flavour prefix: `/v1`, `/openai/v1` (Azure v1), `/openai/deployments/{d}`
 * (Azure deployments) or `/openai` (Azure, e.g. `/openai/responses?api-version=...`).
 */
function parseRoute(pathname: string): { route: string | undefined; deployment: string | undefined } {
  const path = pathname.length > 1 ? pathname.replace(/\/+$/, '') : pathname;
  const azureDeployment = /^\/openai\/deployments\/([^/]+)(\/.*)$/.exec(path);
  if (azureDeployment) return { route: azureDeployment[2], deployment: decodeURIComponent(azureDeployment[1] ?? '') };
  for (const prefix of ['/openai/v1', '/openai', '/v1']) {
    if (path.startsWith(`${prefix}/`)) return { route: path.slice(prefix.length), deployment: undefined };
  }
  return { route: undefined, deployment: undefined };
}

/** `undefined` when `Authorization: Bearer KEY` or `api-key: KEY` matches, else the service's message. */
function checkAuth(headers: Record<string, string>, apiKey: string): string | undefined {
  const bearer = /^Bearer\s+(.*)$/i.exec(headers.authorization ?? '')?.[1]?.trim();
  const azureKey = headers['api-key'];
  if (bearer === apiKey || azureKey === apiKey) return undefined;
  const sent = bearer ?? azureKey;
  if (sent === undefined || sent === '') {
    return "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username. You can obtain an API key from https://platform.openai.com/account/api-keys.";
  }
  const masked = sent.length > 8 ? `${sent.slice(0, 3)}${'*'.repeat(sent.length - 7)}${sent.slice(-4)}` : '*'.repeat(sent.length);
  return `Incorrect API key provided: ${masked}. You can find your API key at https://platform.openai.com/account/api-keys.`;
}

function sendNotFound(ex: Exchange): void {
  sendError(ex, 404, { message: `Invalid URL (${ex.recorded.method} ${ex.recorded.path})` });
}

function handleModels(ex: Exchange, id: string | undefined): void {
  const model = (name: string): JsonObject => ({ id: name, object: 'model', created: 1_715_367_049, owned_by: 'system' });
  if (id === undefined) {
    sendJson(ex, 200, { object: 'list', data: MODELS.map(model) });
  } else if (MODELS.includes(id)) {
    sendJson(ex, 200, model(id));
  } else {
    sendError(ex, 404, {
      message: `The model '${id}' does not exist or you do not have access to it.`,
      param: null,
      code: 'model_not_found',
    });
  }
}
