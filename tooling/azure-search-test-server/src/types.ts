import type { RecordedHttpRequest } from '@ctx/http-test-kit';

/** A JSON value as it travels over the wire. */
export type JsonValue = string | number | boolean | null | JsonValue[] | JsonObject;

/** A JSON object. */
export interface JsonObject {
  [key: string]: JsonValue;
}

/** Why the semantic ranker gave up on a query (`@search.semanticPartialResponseReason`). */
export type SemanticErrorReason = 'maxWaitExceeded' | 'capacityOverloaded' | 'transient';

/** Which REST operation a request was routed to. */
export type SearchOperation =
  | 'createIndex'
  | 'createOrUpdateIndex'
  | 'getIndex'
  | 'deleteIndex'
  | 'listIndexes'
  | 'index'
  | 'lookup'
  | 'count'
  | 'search'
  | 'retrieve';

/** A knowledge source over an index of the server, as a knowledge base reads it. */
export interface KnowledgeSourceDefinition {
  /** The knowledge source's name (`knowledgeSourceParams[].knowledgeSourceName`). */
  name: string;
  /** The index it searches; a missing index makes the source fail (a 206). */
  indexName: string;
  /** Fields of each reference's `sourceData` (and the activity's `sourceDataFields`). Default: every retrievable field. */
  sourceDataFields?: string[];
  /** The semantic configuration it ranks with. Default: the index's default, or its first. */
  semanticConfigurationName?: string;
  /** The field the extract's title comes from. Default `title`. */
  titleField?: string;
  /** The field the extract's content comes from. Default `content`. */
  contentField?: string;
}

/** A knowledge base of the server: its name and the knowledge sources `retrieve` searches. */
export interface KnowledgeBaseDefinition {
  name: string;
  knowledgeSources: KnowledgeSourceDefinition[];
}

/**
 * One request the server received, for assertions: `method`, `headers` and the rest as
 * `@ctx/http-test-kit` records them, with the path decoded, plus what this server adds.
 */
export interface RecordedRequest extends RecordedHttpRequest {
  /** The decoded path without the query, e.g. `/indexes('docs')/docs/search.post.search`. */
  path: string;
  /** Query parameters, names decoded (`api-version`, `$select`). */
  query: Record<string, string>;
  /** The parsed JSON body when it is a JSON object, else `undefined`. */
  body: JsonObject | undefined;
  /** The body as the client sent it, for byte-for-byte comparisons (`''` without one). */
  rawBody: string;
  operation: SearchOperation | undefined;
  /** The index of the path, or for `retrieve` the knowledge base's name. */
  indexName: string | undefined;
  /** The status the server answered with (set once the answer is sent). */
  status?: number;
}

/** A failure the server plays instead of answering. */
export type ServerFault =
  | {
      /** HTTP status of the error reply, e.g. 503, 500, 429. */
      status: number;
      /** Error message in the body. Default: the status's usual text. */
      message?: string;
      /** The body's `error.code` (the SDK's `RestError.code`). Default `''`. */
      code?: string;
      /** `Retry-After` header, in seconds. */
      retryAfterSeconds?: number;
      /** `retry-after-ms` header, in milliseconds (the service sends it with 429 and 503). */
      retryAfterMs?: number;
      /** How many requests fail; default: every request until `clearFaults()`. */
      times?: number;
      /** Only these operations fail; default all of them. */
      operations?: SearchOperation[];
    }
  | {
      /** Drop the connection without an answer (the client sees a socket error). */
      reset: true;
      times?: number;
      operations?: SearchOperation[];
    };

/** Options of `startAzureSearchTestServer`. */
export interface AzureSearchTestServerOptions {
  /** The admin key accepted in the `api-key` header. Default `test-key`. */
  apiKey?: string;
  /** Query keys: accepted for lookups, counts and searches only (403 for anything else; a missing or unknown key is a 401). */
  queryKeys?: string[];
  /** Accepted `Authorization: Bearer <token>` values (Entra ID tokens), with admin rights. */
  bearerTokens?: string[];
  /** The service name used in messages (`The index 'x' for service 'NAME' was not found.`). Default `local-search`. */
  serviceName?: string;
  /** Serve HTTPS with the bundled self-signed certificate for 127.0.0.1 / localhost (see `testCertificate`). Default false. */
  tls?: boolean;
  /**
   * How many semantic queries (`queryType: 'semantic'`) are answered before every further one gets
   * the 402 a service on the free semantic ranker plan sends once the month's free queries are used
   * up. Counted from the start (or the last `reset()`). Default: no limit.
   */
  semanticFreeQueries?: number;
}

/** A running test server. */
export interface AzureSearchTestServer {
  /** The service endpoint, `http://127.0.0.1:PORT` (or `https://` with `tls`): pass it to `SearchClient`. */
  readonly endpoint: string;
  readonly apiKey: string;
  /** Every request in arrival order, including rejected ones and SDK retries. */
  readonly requests: RecordedRequest[];
  /** Plays `fault` for matching requests (see `ServerFault`); faults stack, the newest first. */
  injectFault(fault: ServerFault): void;
  /** Removes every fault: the service is healthy again, with what it stored. */
  clearFaults(): void;
  /** Waits this long before answering each request. Default 0. */
  setLatency(ms: number): void;
  /**
   * Makes the semantic ranker fail for the next `times` semantic queries (default: until
   * `clearFaults()`): a request with `semanticErrorHandling: 'partial'` gets a 206 with the base
   * results (no reranker scores, captions or answers) and `@search.semanticPartialResponseType:
   * 'baseResults'`, `@search.semanticPartialResponseReason: reason`; any other gets a 503.
   */
  failSemanticRanker(options?: { reason?: SemanticErrorReason; times?: number }): void;
  /** The share of the index searches reach (`@search.coverage`, 0-100; default 100). Requests with a higher `minimumCoverage` get a 503. */
  setCoverage(percent: number): void;
  /**
   * Answers the next `times` searches (default 1; with `operation: 'retrieve'`, knowledge base
   * retrievals) with this recorded reply instead of searching, after checking the request as usual
   * (credentials, api-version, the schema). `recordedExample(...)` and `recordedRetrieveExample(...)`
   * give Microsoft's examples.
   */
  replay(reply: { status: number; body: JsonObject; times?: number; operation?: 'search' | 'retrieve' }): void;
  /**
   * Creates or replaces a knowledge base, answered at `POST /knowledgebases('NAME')/retrieve`
   * (api-version 2026-04-01 or 2026-05-01-preview): every request is checked against that
   * version's `KnowledgeRetrieval_Retrieve` schema, then answered from the indexes of its knowledge
   * sources (see `retrieve` in `knowledge-retrieval.ts`), or by a `replay({ operation: 'retrieve' })`.
   */
  createKnowledgeBase(definition: KnowledgeBaseDefinition): void;
  /** Makes a knowledge source fail until `clearFaults()`: its activity record carries this error and the answer is a 206. */
  failKnowledgeSource(name: string, error?: { code: string; message: string }): void;
  /** The stored documents of an index (copies), in insertion order, or undefined when there is no such index. */
  documents(indexName: string): JsonObject[] | undefined;
  /** Deletes every index, clears the request log, faults and latency. */
  reset(): void;
  /** Stops listening and drops open connections. Idempotent. */
  close(): Promise<void>;
}
