import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { handleChatRequest, handleResumeRequest, handleStopRequest, runningTurnInput, uiMessagesFromHistory } from '@ctx/ai-sdk';
import { type Agent, ConcurrencyError, errorBody, httpStatusOf, InvalidInputError, type StreamStore, type Tool } from '@ctx/core';

/** What `createChatServer` takes. */
export interface ChatServerOptions {
  /** The chat agent, with a `sessionStore` (`createChatAgent`). */
  agent: Agent;
  /** The agent's tools, so a reload shows approved calls as approved. */
  tools: readonly Tool[];
  /** The page's script (`buildPageScript()`). */
  pageScript: string;
  /** Where each streamed reply's chunks are kept, so a reload or a second tab resumes it (`RedisStreamStore`). */
  streams: StreamStore;
  /**
   * Who is asking: the user id your authentication vouches for (a session cookie, a token), or
   * undefined (401). Default: everyone is `demo`.
   */
  authenticate?: (request: IncomingMessage) => string | undefined;
  /** The largest request body read, in bytes. Default 1 MiB. */
  maxBodyBytes?: number;
}

/** Ids this server hands out (`randomUUID`). */
const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The chat page's server on node:http:
 * - `GET /`: a new conversation, redirected to `/chats/:id`;
 * - `GET /chats/:id`: the page; `GET /page.js`: its script;
 * - `GET /api/chats/:id`: the stored conversation as the AI SDK's UI messages (`uiMessagesFromHistory`);
 * - `POST /api/chats/:id`: what `useChat` sends (a new message, or answers to approvals), answered
 *   by `handleChatRequest`: a refusal (another user's conversation, a message over the agent's
 *   limits, a reused message id, a malformed body) is a plain 4xx with a JSON body, anything else the
 *   UI message stream. The run is hosted: the agent loads the session, runs, and saves it before the
 *   stream's `finish`, so a reload right after shows it. Its chunks go to `streams` as well;
 * - `GET /api/chats/:id/stream`: `useChat({ resume: true })` after a reload (or in a second tab):
 *   the running reply from its first chunk, followed live (`handleResumeRequest`), 204 when none runs;
 * - `POST /api/chats/:id/stop`: the page's Stop button: the reply stops, and what was said is
 *   stored (`handleStopRequest`).
 */
export function createChatServer(options: ChatServerOptions): Server {
  const { agent, tools, pageScript, streams, maxBodyBytes = 1024 * 1024 } = options;
  const authenticate = options.authenticate ?? (() => 'demo');

  async function route(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const userId = authenticate(request);
    if (userId === undefined) throw new HttpError(401, 'Sign in first.');
    const { pathname } = new URL(request.url ?? '/', 'http://localhost');
    const method = request.method ?? 'GET';
    if (method === 'GET' && pathname === '/') {
      const session = agent.createSession({ sessionId: crypto.randomUUID(), userId });
      await agent.saveSession(session);
      response.writeHead(302, { location: `/chats/${session.sessionId}` }).end();
      return;
    }
    if (method === 'GET' && pathname === '/page.js') {
      return send(response, 200, 'text/javascript; charset=utf-8', pageScript);
    }
    const [, scope, collection, id, action, ...rest] = pathname.split('/');
    if (rest.length > 0 || (action !== undefined && (scope !== 'api' || (action !== 'stream' && action !== 'stop')))) {
      throw new HttpError(404, 'No such route.');
    }
    if (scope === 'chats' && collection !== undefined && id === undefined && method === 'GET') {
      if (!ID.test(collection)) throw new HttpError(404, 'No such conversation.');
      return send(response, 200, 'text/html; charset=utf-8', PAGE);
    }
    if (scope !== 'api' || collection !== 'chats' || id === undefined) throw new HttpError(404, 'No such route.');
    if (!ID.test(id)) throw new HttpError(404, 'No such conversation.');
    const onErrorResponse = (error: unknown, status: number) => {
      if (status >= 500) console.error('[ai-sdk-ui]', error);
    };
    if (action === 'stream' && method === 'GET') {
      return pipe(
        await handleResumeRequest(webRequest(request), { agent, sessionId: id, userId, streams, onError: errorText, onErrorResponse }),
        response,
      );
    }
    if (action === 'stop' && method === 'POST') {
      return pipe(await handleStopRequest(webRequest(request), { agent, sessionId: id, userId, streams, onErrorResponse }), response);
    }
    if (action !== undefined) throw new HttpError(405, `${method} is not allowed here.`);
    if (method === 'POST') {
      const answer = await handleChatRequest(webRequest(request), {
        agent,
        sessionId: id,
        userId,
        streams,
        maxBodyBytes,
        onError: errorText,
        onErrorResponse,
        onStreamStoreError: (error) => console.error('[ai-sdk-ui]', error),
      });
      return pipe(answer, response);
    }
    // The conversation must be the user's: another user's is answered as one that does not exist.
    const session = await agent.getSession(id, { userId });
    if (!session) throw new HttpError(404, 'No such conversation.');

    if (method === 'GET') {
      const messages = uiMessagesFromHistory(await agent.getHistory(session), {
        pendingApprovals: session.pending?.approvals ?? [],
        tools,
      });
      // A turn still running is stored when it ends: its question goes above the reply the page resumes.
      const asked = await runningTurnInput(streams, id);
      if (asked && !messages.some((m) => m.id === asked.id)) messages.push(asked);
      return send(response, 200, 'application/json; charset=utf-8', JSON.stringify({ id, messages }));
    }
    throw new HttpError(405, `${method} is not allowed here.`);
  }

  return createServer((request, response) => {
    route(request, response).catch((error: unknown) => {
      if (response.headersSent) return void response.end();
      const status = error instanceof HttpError ? error.status : httpStatusOf(error);
      if (status >= 500) console.error('[ai-sdk-ui]', error);
      const body = error instanceof HttpError ? { error: { type: 'HttpError', message: error.message } } : errorBody(error);
      send(response, status, 'application/json; charset=utf-8', JSON.stringify(body));
    });
  });
}

/**
 * What the page shows for a failed run: the caller's own mistakes (`InvalidInputError`) and
 * conflicts say what happened; anything else may name internals (hosts, keys), so it is logged
 * here and the page gets a plain sentence.
 */
function errorText(error: unknown): string {
  if (InvalidInputError.isInstance(error)) return error.message;
  if (ConcurrencyError.isInstance(error)) return 'This conversation changed in another tab; reload the page.';
  console.error('[ai-sdk-ui]', error);
  return 'The assistant could not answer; try again later.';
}

/** Writes a web `Response` to a node:http response. A page that goes away cancels the stream: the reply goes on for a resume. */
async function pipe(web: Response, response: ServerResponse): Promise<void> {
  const headers: Record<string, string> = {};
  web.headers.forEach((value, name) => {
    headers[name] = value;
  });
  response.writeHead(web.status, headers);
  if (!web.body) return void response.end();
  const reader = web.body.getReader();
  response.once('close', () => {
    if (!response.writableFinished) reader.cancel().catch(() => {});
  });
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    response.write(value);
  }
  response.end();
}

function send(response: ServerResponse, status: number, type: string, text: string): void {
  response.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

/** A node:http request as a web `Request` (its body streamed, not read ahead), for `handleChatRequest`. */
function webRequest(request: IncomingMessage): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    for (const item of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, item);
  }
  const method = request.method ?? 'POST';
  return new Request(`http://localhost${request.url ?? '/'}`, {
    method,
    headers,
    ...(method === 'GET' || method === 'HEAD' ? {} : { body: Readable.toWeb(request) as ReadableStream<Uint8Array>, duplex: 'half' }),
  } as RequestInit);
}

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ctx chat</title>
<style>
body { font: 16px/1.5 system-ui, sans-serif; max-width: 40rem; margin: 2rem auto; padding: 0 1rem; }
li { list-style: none; margin: .5rem 0; padding: .5rem .75rem; border-radius: .5rem; }
li[data-role="user"] { background: #e8f0fe; }
li[data-role="assistant"] { background: #f3f3f3; }
.tool { font-size: .875rem; color: #555; }
form { display: flex; gap: .5rem; }
input { flex: 1; padding: .5rem; }
</style>
</head>
<body>
<div id="root"></div>
<script type="module" src="/page.js"></script>
</body>
</html>
`;
