import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import {
  type Agent,
  type AgentResponse,
  type AgentRunStream,
  errorBody,
  httpStatusOf,
  type Message,
  Message as Messages,
  type ToolApproval,
} from '@ctx/core';

/** What `createChatServer` takes. */
export interface ChatServerOptions {
  /** The chat agent, with a `sessionStore` (`createChatAgent`). */
  agent: Agent;
  /**
   * Who is asking: the user id your authentication vouches for, or undefined (401). This example
   * trusts an `x-user-id` header; put your session cookie or token check here.
   */
  authenticate?: (request: IncomingMessage) => string | undefined;
  /** The largest request body read, in bytes; a larger one is refused with 413 unread. Default 1 MiB. */
  maxBodyBytes?: number;
}

/** A message as the page shows it. */
export interface MessageView {
  id: string;
  role: Message['role'];
  text: string;
  toolCalls?: { callId: string; name: string; arguments: string }[];
}

/** Ids this server hands out (`randomUUID`); any other id in a path is a conversation nobody has. */
const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Message ids the page makes (one per message typed; sent again with a retry or a double submit). */
const MESSAGE_ID = /^[A-Za-z0-9_-]{1,100}$/;

/** An HTTP error of the server's own (a route or a body it refuses), with its status. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A chat backend on node:http. Every conversation belongs to the user who made it: another user's
 * conversation is 404, as one that does not exist. Replies stream as server-sent events.
 *
 * - `POST /conversations` `{ title? }`: a new conversation (201 `{ id }`).
 * - `GET /conversations?cursor=`: the user's conversations, newest first.
 * - `GET /conversations/:id`: its messages and the tool calls waiting for approval.
 * - `POST /conversations/:id/messages` `{ id, text }`: a turn, streamed (a hosted run: the agent
 *   loads and saves the conversation). `id` is the message's id, made by the page: the same message
 *   sent again while its turn runs (a double submit, in this process or another) gets that turn's
 *   reply, and the model runs once; sent after it ended (a retry after a dropped connection), it
 *   runs the turn again, stored once with the reply the caller got.
 * - `POST /conversations/:id/approvals` `{ approvals: [{ callId, approved, reason? }] }`: answers
 *   waiting tool calls, streamed.
 * - `DELETE /conversations/:id`, `DELETE /me`: a conversation, or everything of the user's.
 */
export function createChatServer(options: ChatServerOptions): Server {
  const { agent, maxBodyBytes = 1024 * 1024 } = options;
  const authenticate = options.authenticate ?? ((request) => headerUser(request));

  async function route(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const userId = authenticate(request);
    if (userId === undefined) throw new HttpError(401, 'Say who you are (x-user-id).');
    const url = new URL(request.url ?? '/', 'http://localhost');
    const [collection, id, action, ...rest] = url.pathname.split('/').slice(1);
    const method = request.method ?? 'GET';

    if (collection === 'me' && id === undefined && method === 'DELETE') {
      return json(response, 200, await agent.deleteUserData(userId));
    }
    if (collection !== 'conversations' || rest.length > 0) throw new HttpError(404, 'No such route.');
    if (id === undefined || id === '') {
      if (method === 'POST') {
        const body = await readJson(request, maxBodyBytes);
        const title = typeof body.title === 'string' ? body.title : undefined;
        const session = agent.createSession({ sessionId: crypto.randomUUID(), userId, ...(title ? { title } : {}) });
        await agent.saveSession(session);
        return json(response, 201, { id: session.sessionId });
      }
      if (method === 'GET') {
        const cursor = url.searchParams.get('cursor') ?? undefined;
        const page = await agent.listSessions({ userId, limit: 20, ...(cursor ? { cursor } : {}) });
        const conversations = page.sessions.map((s) => ({ id: s.sessionId, title: s.metadata.title, updatedAt: s.metadata.updatedAt }));
        return json(response, 200, { conversations, ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) });
      }
      throw new HttpError(405, `${method} is not allowed here.`);
    }

    // The conversation must be the user's: another user's is answered as one that does not exist.
    const session = ID.test(id) ? await agent.getSession(id, { userId }) : undefined;
    if (!session) throw new HttpError(404, 'No such conversation.');

    if (action === undefined && method === 'GET') {
      const messages = await agent.getHistory(session);
      return json(response, 200, {
        id,
        title: session.metadata.title,
        messages: messages.map(view),
        pendingApprovals: session.pending?.approvals ?? [],
      });
    }
    if (action === undefined && method === 'DELETE') {
      await agent.deleteSession(session);
      response.writeHead(204).end();
      return;
    }
    if (action === 'messages' && method === 'POST') {
      const body = await readJson(request, maxBodyBytes);
      if (typeof body.id !== 'string' || !MESSAGE_ID.test(body.id))
        throw new HttpError(400, 'id must be 1 to 100 letters, digits, _ or -.');
      if (typeof body.text !== 'string' || body.text.trim() === '') throw new HttpError(400, 'text must be a non-empty string.');
      // The run's response resolves once the session is saved.
      const stream = agent.runStream(Messages.user(body.text, { id: body.id }), { sessionId: id, userId });
      return streamRun(response, stream, stream.response);
    }
    if (action === 'approvals' && method === 'POST') {
      const body = await readJson(request, maxBodyBytes);
      const approvals = checkApprovals(body.approvals);
      const stream = agent.runStream([], { session, approvals });
      return streamRun(
        response,
        stream,
        savedAfter(stream, () => agent.saveSession(session)),
      );
    }
    throw new HttpError(404, 'No such route.');
  }

  return createServer((request, response) => {
    route(request, response).catch((error: unknown) => {
      if (response.headersSent) {
        response.end();
        return;
      }
      if (error instanceof HttpError) {
        // A body left unread (413) is not read on: the connection closes after the answer.
        if (error.status === 413) response.setHeader('connection', 'close');
        return json(response, error.status, { error: { type: 'HttpError', message: error.message } });
      }
      const status = httpStatusOf(error);
      if (status >= 500) console.error('[http-chat]', error);
      json(response, status, errorBody(error));
    });
  });
}

/**
 * Streams a run as server-sent events: `text` deltas, `tool-call`s, `tool-result`s, then, once the
 * session is `saved`, `done` with the stored messages and any calls waiting for approval, or `error`. A run that fails before
 * its first update is answered with its status instead. A page that goes away does not stop the
 * run: it ends and is stored, so a reload shows the reply.
 */
/**
 * The run's response once the session is saved too (`agent.saveSession` merges what other requests
 * saved meanwhile). A failure of either rejects it; nobody needs to listen.
 */
function savedAfter(stream: AgentRunStream, save: () => Promise<void>): Promise<AgentResponse> {
  const saved = stream.response.then(async (result) => {
    await save();
    return result;
  });
  saved.catch(() => {});
  return saved;
}

async function streamRun(response: ServerResponse, stream: AgentRunStream, saved: Promise<AgentResponse>): Promise<void> {
  const updates = stream[Symbol.asyncIterator]();
  let next = await updates.next(); // throws before any byte is sent: a plain error response
  response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  let open = true;
  response.on('close', () => {
    open = false;
  });
  const send = (event: string, data: unknown) => {
    if (open) response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  };
  try {
    for (; !next.done; next = await updates.next()) {
      const { messageId } = next.value;
      for (const c of next.value.contents) {
        if (c.type === 'text') send('text', { messageId, text: c.text });
        else if (c.type === 'function-call') send('tool-call', { callId: c.callId, name: c.name });
        else if (c.type === 'function-result') send('tool-result', { callId: c.callId, isError: c.isError === true });
      }
    }
    const result = await saved;
    send('done', { messages: result.messages.map(view), pendingApprovals: result.pendingApprovals ?? [] });
  } catch (error) {
    if (httpStatusOf(error) >= 500) console.error('[http-chat]', error);
    send('error', { status: httpStatusOf(error), ...errorBody(error) });
  }
  response.end();
}

function view(m: Message): MessageView {
  const calls = Messages.functionCalls(m);
  const out: MessageView = { id: m.id, role: m.role, text: Messages.text(m) };
  if (calls.length) out.toolCalls = calls.map((c) => ({ callId: c.callId, name: c.name, arguments: c.arguments }));
  return out;
}

function checkApprovals(value: unknown): ToolApproval[] {
  if (!Array.isArray(value) || value.length === 0) throw new HttpError(400, 'approvals must be a non-empty array.');
  return value.map((a: unknown) => {
    const { callId, approved, reason } = (a ?? {}) as Record<string, unknown>;
    if (typeof callId !== 'string' || typeof approved !== 'boolean') {
      throw new HttpError(400, 'Each approval is { callId: string, approved: boolean, reason?: string }.');
    }
    return typeof reason === 'string' ? { callId, approved, reason } : { callId, approved };
  });
}

function headerUser(request: IncomingMessage): string | undefined {
  const user = request.headers['x-user-id'];
  return typeof user === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(user) ? user : undefined;
}

/**
 * The request body as a JSON object, read up to `max` bytes. A larger body is refused (413) without
 * reading the rest: the answer closes the connection.
 */
async function readJson(request: IncomingMessage, max: number): Promise<Record<string, unknown>> {
  const tooLarge = () => new HttpError(413, `The body is larger than ${max} bytes.`);
  if (Number(request.headers['content-length']) > max) throw tooLarge();
  const text = await new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= max) return void chunks.push(chunk);
      request.off('data', onData);
      request.pause();
      reject(tooLarge());
    };
    request.on('data', onData);
    request.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.once('error', reject);
  });
  let body: unknown;
  try {
    body = JSON.parse(text || '{}');
  } catch {
    throw new HttpError(400, 'The body is not JSON.');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400, 'The body must be a JSON object.');
  return body as Record<string, unknown>;
}

/** A JSON answer; an error body's `retryAfter` (a turn running in another request) is also the `Retry-After` header. */
function json(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  const retryAfter = (body as { error?: { retryAfter?: unknown } }).error?.retryAfter;
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...(typeof retryAfter === 'number' ? { 'retry-after': String(retryAfter) } : {}),
  });
  response.end(text);
}
