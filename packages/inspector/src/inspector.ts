import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type AgentEvent,
  ConfigurationError,
  type EventHandler,
  generateId,
  type JsonValue,
  Message,
  type Redactor,
  type SessionStore,
} from '@ctx/core';
import { checkAllowedHosts, createHostCheck, type HostCheck, isLoopback } from './host-check.js';
import { createInspectorModel, DEFAULT_MAX_RUNS, type InspectorSnapshot } from './model.js';

export { isLoopback } from './host-check.js';

/** Options of `createInspector`. */
export interface InspectorOptions {
  /** The port to listen on. Default 4777; `0` picks a free one (read it from `url`). */
  port?: number;
  /**
   * The address to listen on. Default `127.0.0.1`. Anything but a loopback address (`127.x.x.x`,
   * `::1`, `localhost`) is refused unless `allowRemote` is true: the page shows what your agent sends.
   */
  host?: string;
  /** Listen on a non-loopback `host`. Default false. */
  allowRemote?: boolean;
  /**
   * More host names the page may be reached under, e.g. behind a proxy: `['inspector.example.com']`.
   * Default none. Every request (the page, its files, the API, the event stream) whose `Host` header,
   * or `Origin` when sent, names neither the address the inspector listens on (on loopback:
   * `127.0.0.1`, `localhost`, `[::1]`, with its port) nor one of these (any port) is refused with a
   * 403, so a page at another name that resolves to this machine (DNS rebinding) reads nothing.
   * @throws ConfigurationError (from `createInspector`) for an entry with a scheme, port or path.
   */
  allowedHosts?: readonly string[];
  /** Lists sessions (with their user and title) from this store, beside those seen running. */
  sessionStore?: SessionStore;
  /** Show message text, instructions, tool arguments and results. Default false: ids, roles, sources and tokens only. */
  showText?: boolean;
  /** The agent's `redact`: applied to every text before the inspector keeps it (only matters with `showText`). */
  redact?: Redactor;
  /** The most runs kept in memory; the oldest are dropped past it. Default 200. */
  maxRuns?: number;
  /** Where the one line with the page's address goes. Default `console.log`; `false` prints nothing. */
  log?: ((line: string) => void) | false;
}

/** A running inspector: open `url`, pass `onEvent` to `createAgent`. */
export interface Inspector {
  /** The page's address, e.g. `http://127.0.0.1:4777/`. */
  readonly url: string;
  /** The agent's event handler (`createAgent({ onEvent: inspector.onEvent })`); asks for content. Never throws. */
  readonly onEvent: EventHandler;
  /** Resolves once every event received so far is on the page (redaction is asynchronous). */
  idle(): Promise<void>;
  /** Stops the server and ends the page's live connections (without waiting for a `redact` still running: see `idle`). */
  close(): Promise<void>;
}

const PAGE_FILES: Record<string, string> = {
  '/': 'index.html',
  '/index.html': 'index.html',
  '/app.js': 'app.js',
  '/style.css': 'style.css',
};

const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
};

/**
 * Starts the inspector: a page on loopback that shows sessions, their runs and each model call
 * (every message, instruction and tool with its source and tokens, what was removed, the prompt-
 * cache prefix and what broke it, tool calls, diagnostics), live as runs happen.
 *
 * Requests under another name than the address it listens on (or `allowedHosts`) get a 403.
 *
 * @throws ConfigurationError for a non-loopback `host` without `allowRemote`, a bad `port`,
 * `maxRuns` or `allowedHosts` entry, or a port already in use.
 */
export async function createInspector(options: InspectorOptions = {}): Promise<Inspector> {
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? 4777;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new ConfigurationError(`createInspector: port must be an integer from 0 to 65535, got ${String(port)}.`);
  if (!isLoopback(host) && options.allowRemote !== true)
    throw new ConfigurationError(
      `createInspector: host "${host}" is not a loopback address; the page shows what your agent sends to the model. Use 127.0.0.1, or pass allowRemote: true to listen on "${host}".`,
    );
  const allowedHosts = checkAllowedHosts(options.allowedHosts);
  const maxRuns = options.maxRuns ?? DEFAULT_MAX_RUNS;
  if (!Number.isInteger(maxRuns) || maxRuns < 1)
    throw new ConfigurationError(`createInspector: maxRuns must be a positive integer, got ${String(maxRuns)}.`);
  if (options.redact !== undefined && typeof options.redact !== 'function')
    throw new ConfigurationError('createInspector: redact must be a function (messages, info) => messages, the one the agent has.');
  const showText = options.showText === true;
  const model = createInspectorModel({ showText, maxRuns });
  const pages = await loadPage();
  const clients = new Set<ServerResponse>();
  const sessionOf = new Map<string, string>();
  let storeError: string | undefined;

  const broadcast = (runId: string | undefined) => {
    if (!runId || clients.size === 0) return;
    const run = model.run(runId);
    if (!run) return;
    const data = `event: run\ndata: ${JSON.stringify(run)}\n\n`;
    for (const c of clients) c.write(data);
  };
  const apply = (event: AgentEvent) => {
    if (event.type === 'run-start') {
      sessionOf.set(event.runId, event.sessionId);
      if (sessionOf.size > maxRuns * 2) sessionOf.delete(sessionOf.keys().next().value as string);
    }
    broadcast(model.apply(event));
  };

  const redact = showText ? options.redact : undefined;
  let queue: Promise<void> = Promise.resolve();
  const handler = ((event: AgentEvent) => {
    if (!redact) {
      try {
        apply(event);
      } catch {
        // a broken event must not fail the run; the page misses it
      }
      return;
    }
    const sessionId = ('runId' in event && event.runId && sessionOf.get(event.runId)) || '';
    if (event.type === 'run-start') sessionOf.set(event.runId, event.sessionId);
    const redacted = redactEvent(event, redact, sessionId);
    queue = queue.then(
      () => redacted.then(apply, () => apply(withoutContent(event))),
      () => {},
    );
  }) as EventHandler;
  Object.defineProperty(handler, 'includeContent', { value: true });

  const readSessions = async () => {
    if (!options.sessionStore?.list) return;
    try {
      const page = await options.sessionStore.list({ limit: 50 });
      for (const s of page.sessions) {
        const info: { userId?: string; title?: string } = {};
        if (s.metadata?.userId !== undefined) info.userId = s.metadata.userId;
        if (s.metadata?.title !== undefined) info.title = s.metadata.title;
        model.describeSession(s.sessionId, info);
      }
      storeError = undefined;
    } catch (error) {
      storeError = error instanceof Error ? error.message : String(error);
    }
  };

  let hostCheck: HostCheck | undefined; // set once the server listens and its port is known
  const server = createServer((req, res) => {
    void serve(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  const serve = async (req: IncomingMessage, res: ServerResponse) => {
    // First of all, before any data is read: a page under a name that is not ours (DNS rebinding)
    // gets nothing, whatever it asks for.
    const refusal = hostCheck ? hostCheck.refusal(req.headers) : 'the inspector is not listening yet';
    if (refusal !== undefined) {
      res
        .writeHead(403, {
          'content-type': 'application/json; charset=utf-8',
          'cache-control': 'no-store',
          'x-content-type-options': 'nosniff',
        })
        .end(JSON.stringify({ error: 'forbidden', message: refusal }));
      return;
    }
    const path = new URL(req.url ?? '/', 'http://inspector').pathname;
    if (req.method !== 'GET') {
      res.writeHead(405, { allow: 'GET' }).end();
      return;
    }
    const file = PAGE_FILES[path];
    if (file) {
      res.writeHead(200, { 'content-type': TYPES[file.split('.').pop()!]!, 'cache-control': 'no-store' }).end(pages[file]);
      return;
    }
    if (path === '/api/state') {
      await readSessions();
      const body: InspectorSnapshot & { storeError?: string } = model.snapshot();
      if (storeError) body.storeError = storeError;
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body));
      return;
    }
    if (path === '/api/events') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
      res.write('retry: 1000\n\n');
      clients.add(res);
      req.on('close', () => clients.delete(res));
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found');
  };

  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE'
          ? new ConfigurationError(`createInspector: port ${port} on ${host} is in use; pass another port, or port: 0 for a free one.`, {
              cause: error,
            })
          : error,
      );
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}/`;
  hostCheck = createHostCheck({ host, port: address.port, allowedHosts, url });
  if (options.log !== false) (options.log ?? console.log)(`ctx inspector: ${url}`);

  return {
    url,
    onEvent: handler,
    idle: () => queue,
    async close() {
      for (const c of clients) c.end();
      clients.clear();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

async function loadPage(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of ['index.html', 'app.js', 'style.css']) {
    out[name] = await readFile(new URL(`../page/${name}`, import.meta.url), 'utf8');
  }
  return out;
}

const NEVER = new AbortController().signal;

/** The event with every text in its content passed through `redact` (as messages, the way the agent's stores see them). */
async function redactEvent(event: AgentEvent, redact: Redactor, sessionId: string): Promise<AgentEvent> {
  const info = { sessionId, sourceId: 'inspector', signal: NEVER };
  const run = async (messages: readonly Message[]) => {
    const out = await redact(messages, info);
    if (!Array.isArray(out) || out.length !== messages.length) throw new Error('redact returned a different number of messages');
    return out as Message[];
  };
  switch (event.type) {
    case 'model-call': {
      if (!event.content) return event;
      const parts = event.content.instructionSources ?? [];
      const [messages, instructions] = await Promise.all([run(event.content.messages), run(parts.map((p) => Message.system(p.text)))]);
      const instructionSources = parts.map((p, i) => ({ sourceId: p.sourceId, text: Message.text(instructions[i]!) }));
      return {
        ...event,
        content: {
          ...event.content,
          messages,
          ...(event.content.instructions !== undefined ? { instructions: instructionSources.map((p) => p.text).join('\n\n') } : {}),
          ...(event.content.instructionSources ? { instructionSources } : {}),
        },
      };
    }
    case 'model-response':
      return event.content ? { ...event, content: { messages: await run(event.content.messages) } } : event;
    case 'tool-start': {
      if (!event.content) return event;
      const [m] = await run([
        {
          id: generateId(),
          role: 'assistant',
          contents: [{ type: 'function-call', callId: event.callId, name: event.toolName, arguments: event.content.arguments }],
        },
      ]);
      const call = m?.contents.find((c) => c.type === 'function-call');
      return { ...event, content: { arguments: call?.type === 'function-call' ? call.arguments : '' } };
    }
    case 'tool-end': {
      if (!event.content) return event;
      const [m] = await run([
        {
          id: generateId(),
          role: 'tool',
          contents: [{ type: 'function-result', callId: event.callId, name: event.toolName, result: event.content.result }],
        },
      ]);
      const result = m?.contents.find((c) => c.type === 'function-result');
      return { ...event, content: { result: (result?.type === 'function-result' ? result.result : null) as JsonValue } };
    }
    default:
      return event;
  }
}

/** The event without its content: what the page gets when `redact` failed on it. */
function withoutContent(event: AgentEvent): AgentEvent {
  if (!('content' in event) || !event.content) return event;
  if (event.type === 'model-call') {
    // Keep the structure (sources, tokens) without any text: the model is told not to keep text.
    return { ...event, content: { messages: event.content.messages.map((m) => ({ ...m, contents: [] })) } };
  }
  const { content: _content, ...rest } = event;
  return rest as AgentEvent;
}
