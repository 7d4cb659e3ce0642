import { Agent, createServer, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createGatewayEmulation } from './gateway.js';
import { sendUpstream } from './upstream.js';

/** What a Cosmos DB REST request is, told from its method, path and headers. */
export type CosmosRequestKind =
  | 'query'
  | 'query-plan'
  | 'batch'
  | 'bulk'
  | 'patch'
  | 'create'
  | 'upsert'
  | 'read'
  | 'replace'
  | 'delete'
  | 'metadata';

/** One request that went through the proxy. */
export interface ProxiedRequest {
  method: string;
  path: string;
  kind: CosmosRequestKind;
  /** Bytes of the request body the client sent. */
  requestBytes: number;
  /** Bytes of the response body the client received (0 when the connection was cut). */
  responseBytes: number;
  /** The status the client saw; 0 when its connection was cut. */
  status: number;
  /** The fault applied to this request, if any. */
  fault?: string;
  /** The request body as text (only with `{ recordBodies: true }`). */
  body?: string;
  /**
   * How many documents the answer carried (only with `{ countItems: true }`): a query's or feed's
   * `Documents`, the results of a batch that hold a resource body, one for a point operation's
   * document; 0 for anything else.
   */
  items?: number;
  /** Milliseconds from the end of the request to the end of the answer (0 when none was sent). */
  ms: number;
  /** How the gateway emulation (`partitionKeyRanges`) dealt with it: answered it, or forwarded a rewritten query. */
  gateway?: 'answered' | 'rewritten';
  /** The partition key range a query was sent to (`x-ms-documentdb-partitionkeyrangeid`). */
  partitionKeyRangeId?: string;
}

/** Options of `startFaultProxy`. */
export interface FaultProxyOptions {
  /** Keep each request's body as text in the log (`body`). Default false. */
  recordBodies?: boolean;
  /** Count the documents of each answer in the log (`items`). Default false. */
  countItems?: boolean;
  /**
   * Emulate the gateway's query planning and routing over this many partition key ranges (see
   * `createGatewayEmulation`), so the SDK runs its cross-partition pipeline. Default: off, and every
   * request goes to the stand-in as it is (which answers a query-plan request by running the query).
   */
  partitionKeyRanges?: number;
}

/** What to do to a matching request. */
export type Fault =
  /** Answer with this status without forwarding (429 carries `x-ms-retry-after-ms`). */
  | { status: number; retryAfterMs?: number; substatus?: number; message?: string }
  /** Cut the connection before forwarding: the server never sees the request. */
  | 'reset-before'
  /** Forward, let the server apply it, then cut the connection: the client never sees the response. */
  | 'reset-after'
  /** Never answer (until the proxy stops or the client gives up). */
  | 'hang';

/** A fault for the next `times` requests that `match`. */
export interface FaultRule {
  /** Which requests. Default: every data-plane request (everything but `metadata`). */
  match?: (request: { method: string; path: string; kind: CosmosRequestKind; headers: IncomingHttpHeaders }) => boolean;
  /** How many matching requests get the fault. Default 1; `Infinity` for all until `clearFaults()`. */
  times?: number;
  fault: Fault;
}

/** A running fault proxy. */
export interface FaultProxy {
  /** `http://127.0.0.1:<port>`: point `CosmosClient` here instead of at the stand-in. */
  endpoint: string;
  port: number;
  /** Every request seen since the last `resetLog()`, in arrival order. */
  readonly requests: readonly ProxiedRequest[];
  /** Adds a fault rule (rules are tried in the order they were added). */
  inject(rule: FaultRule): void;
  /** Removes every pending fault rule. */
  clearFaults(): void;
  /** Forgets the request log. */
  resetLog(): void;
  /** The backend "goes away": every open and new connection is reset until `up()`. */
  down(): void;
  /** The backend is reachable again. */
  up(): void;
  /** Closes the proxy and every connection (hanging requests are cut). */
  stop(): Promise<void>;
}

const DOC_PATH = /\/docs\/[^/]+$/;

/** How many documents a Cosmos DB answer body carries (see `ProxiedRequest.items`). */
function documentsIn(body: Buffer): number {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return 0;
  }
  if (Array.isArray(value)) return value.filter((r) => typeof r === 'object' && r !== null && 'resourceBody' in r).length;
  if (typeof value !== 'object' || value === null) return 0;
  const { Documents } = value as { Documents?: unknown };
  if (Array.isArray(Documents)) return Documents.length;
  return typeof (value as { id?: unknown }).id === 'string' && '_rid' in value ? 1 : 0;
}

/** Tells the kind of a Cosmos DB REST request from its method, path and headers. */
export function classifyRequest(method: string, path: string, headers: IncomingHttpHeaders): CosmosRequestKind {
  const flag = (name: string) => String(headers[name] ?? '').toLowerCase() === 'true';
  if (flag('x-ms-cosmos-is-query-plan-request')) return 'query-plan';
  if (flag('x-ms-documentdb-isquery') || headers['content-type'] === 'application/query+json') return 'query';
  if (flag('x-ms-cosmos-is-batch-request')) return flag('x-ms-cosmos-batch-atomic') ? 'batch' : 'bulk';
  if (flag('x-ms-documentdb-is-upsert')) return 'upsert';
  const pathname = path.split('?', 1)[0]!.replace(/\/+$/, '');
  if (method === 'PATCH') return 'patch';
  if (DOC_PATH.test(pathname)) {
    if (method === 'GET') return 'read';
    if (method === 'PUT') return 'replace';
    if (method === 'DELETE') return 'delete';
  }
  if (method === 'POST' && pathname.endsWith('/docs')) return 'create';
  return 'metadata';
}

/**
 * Starts an HTTP proxy on 127.0.0.1 (free port) in front of a Cosmos DB endpoint (the stand-in),
 * which logs every request (kind, body bytes each way, status) and injects faults: throttling
 * (429 with `x-ms-retry-after-ms`), transient 5xx, connections cut before or after the server
 * applied a request, requests that never get an answer, and whole outages (`down()` / `up()`).
 */
export async function startFaultProxy(target: string, options: FaultProxyOptions = {}): Promise<FaultProxy> {
  const upstream = new URL(target);
  const gateway = options.partitionKeyRanges === undefined ? undefined : createGatewayEmulation(target, options.partitionKeyRanges);
  const agent = new Agent({ keepAlive: true });
  const rules: { rule: FaultRule; left: number }[] = [];
  const log: ProxiedRequest[] = [];
  const sockets = new Set<Socket>();
  let isDown = false;

  const take = (info: { method: string; path: string; kind: CosmosRequestKind; headers: IncomingHttpHeaders }): Fault | undefined => {
    for (const entry of rules) {
      if (entry.left <= 0) continue;
      const matches = entry.rule.match ? entry.rule.match(info) : info.kind !== 'metadata';
      if (!matches) continue;
      entry.left--;
      return entry.rule.fault;
    }
    return undefined;
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const method = req.method ?? 'GET';
      const path = req.url ?? '/';
      const kind = classifyRequest(method, path, req.headers);
      const t0 = performance.now();
      const entry: ProxiedRequest = { method, path, kind, requestBytes: body.length, responseBytes: 0, status: 0, ms: 0 };
      if (options.recordBodies) entry.body = body.toString('utf8');
      log.push(entry);
      const fault = take({ method, path, kind, headers: req.headers });
      if (fault === 'hang') {
        entry.fault = 'hang';
        return;
      }
      if (fault === 'reset-before') {
        entry.fault = 'reset-before';
        req.socket.destroy();
        return;
      }
      if (fault !== undefined && fault !== 'reset-after') {
        const payload = Buffer.from(
          JSON.stringify({ code: codeName(fault.status), message: fault.message ?? `Injected by the fault proxy: ${fault.status}` }),
        );
        const headers: Record<string, string> = {
          'content-type': 'application/json',
          'x-ms-activity-id': '00000000-0000-0000-0000-000000000000',
          'x-ms-request-charge': '0',
        };
        if (fault.retryAfterMs !== undefined) headers['x-ms-retry-after-ms'] = String(fault.retryAfterMs);
        if (fault.substatus !== undefined) headers['x-ms-substatus'] = String(fault.substatus);
        entry.fault = String(fault.status);
        entry.status = fault.status;
        entry.responseBytes = payload.length;
        res.writeHead(fault.status, headers);
        res.end(payload);
        return;
      }
      const send = (payload: Buffer) =>
        forward(
          req,
          payload,
          (status, headers, reply) => {
            if (fault === 'reset-after') {
              entry.fault = 'reset-after';
              req.socket.destroy();
              return;
            }
            entry.status = status;
            entry.responseBytes = reply.length;
            if (options.countItems) entry.items = documentsIn(reply);
            entry.ms = performance.now() - t0;
            res.writeHead(status, headers);
            res.end(reply);
          },
          () => {
            entry.fault = 'upstream-error';
            req.socket.destroy();
          },
        );
      const rangeId = req.headers['x-ms-documentdb-partitionkeyrangeid'];
      if (typeof rangeId === 'string') entry.partitionKeyRangeId = rangeId;
      if (!gateway) return send(body);
      gateway.handle({ method, path, headers: req.headers, body }).then(
        (decision) => {
          if (decision === undefined) return send(body);
          if ('forward' in decision) {
            entry.gateway = 'rewritten';
            return send(decision.forward);
          }
          entry.gateway = 'answered';
          entry.status = decision.answer.status;
          entry.responseBytes = decision.answer.body.length;
          if (options.countItems) entry.items = documentsIn(decision.answer.body);
          res.writeHead(decision.answer.status, { ...decision.answer.headers, 'content-length': String(decision.answer.body.length) });
          res.end(decision.answer.body);
        },
        () => {
          entry.fault = 'gateway-error';
          req.socket.destroy();
        },
      );
    });
  });

  const forward = (
    req: IncomingMessage,
    body: Buffer,
    done: (status: number, headers: IncomingHttpHeaders, reply: Buffer) => void,
    failed: () => void,
  ) => {
    const headers = { ...req.headers, host: upstream.host, 'content-length': String(body.length) };
    sendUpstream(agent, upstream, { method: req.method ?? 'GET', path: req.url ?? '/', headers, body }).then((reply) => {
      const replyHeaders = { ...reply.headers, 'content-length': String(reply.body.length) };
      delete replyHeaders['transfer-encoding'];
      done(reply.status, replyHeaders, reply.body);
    }, failed);
  };

  server.on('connection', (socket: Socket) => {
    if (isDown) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  // Cut connections surface here; they are the point of the exercise.
  server.on('clientError', (_error, socket) => socket.destroy());

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let stopped: Promise<void> | undefined;

  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    get requests() {
      return log;
    },
    inject(rule) {
      const times = rule.times ?? 1;
      if (!(times > 0)) throw new RangeError(`times must be positive, got ${times}`);
      rules.push({ rule, left: times });
    },
    clearFaults() {
      rules.splice(0);
    },
    resetLog() {
      log.splice(0);
    },
    down() {
      isDown = true;
      for (const socket of sockets) socket.destroy();
    },
    up() {
      isDown = false;
    },
    stop: () =>
      (stopped ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
        agent.destroy();
      })),
  };
}

function codeName(status: number): string {
  switch (status) {
    case 408:
      return 'RequestTimeout';
    case 429:
      return 'TooManyRequests';
    case 449:
      return 'RetryWith';
    case 500:
      return 'InternalServerError';
    case 502:
      return 'BadGateway';
    case 503:
      return 'ServiceUnavailable';
    case 504:
      return 'GatewayTimeout';
    default:
      return `Status${status}`;
  }
}
