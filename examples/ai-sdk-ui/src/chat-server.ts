import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { runInputFromUIMessages, toUIMessageStreamResponse, uiMessagesFromHistory } from '@ctx/ai-sdk';
import { type Agent, ConcurrencyError, InvalidInputError, type Tool } from '@ctx/core';

/** What `createChatServer` takes. */
export interface ChatServerOptions {
  /** The chat agent, with a `sessionStore` (`createChatAgent`). */
  agent: Agent;
  /** The agent's tools, so a reload shows approved calls as approved. */
  tools: readonly Tool[];
  /** The page's script (`buildPageScript()`). */
  pageScript: string;
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
 *   with the UI message stream (`toUIMessageStreamResponse`). The run is hosted: the agent loads
 *   the session, runs, and saves it before the stream's `finish`, so a reload right after shows it.
 */
export function createChatServer(options: ChatServerOptions): Server {
  const { agent, tools, pageScript, maxBodyBytes = 1024 * 1024 } = options;
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
    const [, scope, collection, id, ...rest] = pathname.split('/');
    if (rest.length > 0) throw new HttpError(404, 'No such route.');
    if (scope === 'chats' && collection !== undefined && id === undefined && method === 'GET') {
      if (!ID.test(collection)) throw new HttpError(404, 'No such conversation.');
      return send(response, 200, 'text/html; charset=utf-8', PAGE);
    }
    if (scope !== 'api' || collection !== 'chats' || id === undefined) throw new HttpError(404, 'No such route.');
    // The conversation must be the user's: another user's is answered as one that does not exist.
    const session = ID.test(id) ? await agent.getSession(id, { userId }) : undefined;
    if (!session) throw new HttpError(404, 'No such conversation.');

    if (method === 'GET') {
      const messages = uiMessagesFromHistory(await agent.getHistory(session), {
        pendingApprovals: session.pending?.approvals ?? [],
        tools,
      });
      return send(response, 200, 'application/json; charset=utf-8', JSON.stringify({ id, messages }));
    }
    if (method === 'POST') {
      const body = await readJson(request, maxBodyBytes);
      const { input, approvals } = runInputFromUIMessages(body.messages, { pendingApprovals: session.pending?.approvals ?? [] });
      const stream = agent.runStream(input, { sessionId: id, userId, approvals });
      return pipe(toUIMessageStreamResponse(stream, { onError: errorText }), response);
    }
    throw new HttpError(405, `${method} is not allowed here.`);
  }

  return createServer((request, response) => {
    route(request, response).catch((error: unknown) => {
      if (response.headersSent) return void response.end();
      const status = error instanceof HttpError ? error.status : InvalidInputError.isInstance(error) ? 400 : 500;
      if (status >= 500) console.error('[ai-sdk-ui]', error);
      const message = status < 500 && error instanceof Error ? error.message : 'The server could not answer; try again later.';
      send(response, status, 'application/json; charset=utf-8', JSON.stringify({ error: message }));
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

/** Writes a web `Response` to a node:http response. A page that goes away cancels the stream, which aborts the run. */
async function pipe(web: Response, response: ServerResponse): Promise<void> {
  const headers: Record<string, string> = {};
  web.headers.forEach((value, name) => {
    headers[name] = value;
  });
  response.writeHead(web.status, headers);
  const reader = web.body!.getReader();
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

async function readJson(request: IncomingMessage, max: number): Promise<Record<string, unknown>> {
  if (Number(request.headers['content-length']) > max) throw new HttpError(413, `The body is larger than ${max} bytes.`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > max) throw new HttpError(413, `The body is larger than ${max} bytes.`);
    chunks.push(chunk);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
  } catch {
    throw new HttpError(400, 'The body is not JSON.');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400, 'The body must be a JSON object.');
  return body as Record<string, unknown>;
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
