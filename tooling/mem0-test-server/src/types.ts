import type { RecordedHttpRequest } from '@ctx/http-test-kit';

/** A JSON object as parsed from a request body. */
export type JsonObject = Record<string, unknown>;

/**
 * One HTTP request the server received, recorded before it was answered: `method`, `path` (e.g.
 * `'/v3/memories/search/'`), `query`, `headers` (lower-case names) and the JSON object `body`, as
 * `@ctx/http-test-kit` records them.
 */
export type RecordedRequest = RecordedHttpRequest;

/** A memory as the server keeps it and returns it (the platform's snake_case wire shape). */
export interface StoredMemory {
  id: string;
  memory: string;
  /** MD5 of `memory`. */
  hash: string;
  user_id: string | null;
  agent_id: string | null;
  app_id: string | null;
  run_id: string | null;
  metadata: JsonObject | null;
  categories: string[];
  created_at: string;
  updated_at: string;
  expiration_date: string | null;
  immutable: boolean;
}

/** The entity ids of an add request. */
export interface AddScope {
  user_id: string | null;
  agent_id: string | null;
  app_id: string | null;
  run_id: string | null;
}

/** One message of an add request. */
export interface AddMessage {
  role: string;
  content: string;
}

/**
 * Turns the messages of an add request with `infer: true` into memory texts (the platform runs an
 * LLM here). Default: the trimmed text of every `user` message, one memory each.
 */
export type Extractor = (messages: readonly AddMessage[], scope: AddScope) => string[];

/** A scripted failure: the next matching requests get this status and body instead of an answer. */
export interface ScriptedFailure {
  status: number;
  /** Default `{ detail: '...' }` naming the status. */
  body?: unknown;
  /** Only requests whose path starts with this (e.g. `'/v3/memories/search/'`). Default: any but ping. */
  path?: string;
  /** How many requests fail. Default 1. */
  times?: number;
}

/** Options of `startMem0TestServer`. */
export interface Mem0TestServerOptions {
  /** The key the server accepts in `Authorization: Token KEY`. Default `'test-key'`. */
  apiKey?: string;
  /** The fact extractor for `infer: true` adds. */
  extract?: Extractor;
  /** The search `threshold` when the request gives none. Default 0.3 (the platform's default). */
  defaultThreshold?: number;
  /** Milliseconds every reply waits before it is sent (simulated network and service time). Default 0. */
  latencyMs?: number;
  /**
   * Milliseconds between an asynchronous add's reply and its memories becoming searchable, as on
   * the platform (`async_mode` defaults to true there). Default 0: applied before the reply.
   */
  processingDelayMs?: number;
}

/** A running local mem0 platform server. */
export interface Mem0TestServer {
  /** `http://127.0.0.1:PORT`: pass as `host` to `new MemoryClient({ apiKey, host })`. */
  readonly url: string;
  readonly port: number;
  readonly apiKey: string;
  /** Every request in arrival order, including rejected ones. */
  readonly requests: RecordedRequest[];
  /** A copy of every stored memory, oldest first. */
  memories(): StoredMemory[];
  /** Scripts failures for the next matching requests. */
  failNext(failure: ScriptedFailure): void;
  /** Changes the simulated latency of every reply. */
  setLatency(ms: number): void;
  /**
   * The most requests the server held at once (received, not yet answered) since it started or was
   * last reset: with a latency set, searches a client sends together overlap here.
   */
  maxInFlight(): number;
  /** Stops listening and drops open connections (the service is down); memories are kept. */
  pause(): Promise<void>;
  /** Listens again on the same port. */
  resume(): Promise<void>;
  /** Waits until every asynchronous add has been applied. */
  settle(): Promise<void>;
  /** Forgets memories, requests, scripted failures and the in-flight peak (same `requests` array). */
  reset(): void;
  /** Stops the server; idempotent. */
  close(): Promise<void>;
}
