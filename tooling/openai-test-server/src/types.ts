import type { RecordedHttpRequest } from '@ctx/http-test-kit';

/** A JSON object as parsed from a request body. */
export type JsonObject = Record<string, unknown>;

/**
 * One HTTP request the test server received, recorded before it was answered: `method`, `path`
 * (e.g. `'/v1/chat/completions'`), `query` (e.g. `{ 'api-version': '2024-10-21' }`), `headers` and
 * the JSON object `body` as `@ctx/http-test-kit` records them, plus what this server adds.
 */
export interface RecordedRequest extends RecordedHttpRequest {
  /**
   * The endpoint with the OpenAI or Azure prefix removed (`'/chat/completions'`, `'/responses'`,
   * `'/embeddings'`, ...), so tests can filter requests regardless of the client flavour.
   * `undefined` when the path matched no known prefix.
   */
  route: string | undefined;
  /** The Azure deployment named in `/openai/deployments/{deployment}/...` paths. */
  deployment?: string;
  /** For embeddings requests: how many inputs the request carried. */
  batchSize?: number;
  /** `true` when the client disconnected before the server finished its reply. */
  aborted?: boolean;
}

/** A tool call the scripted model makes. */
export interface ScriptedToolCall {
  /** The function name. */
  name: string;
  /** The arguments as JSON text, or an object that the server serializes with `JSON.stringify`. */
  arguments: string | object;
  /** The call id (`call_...`); generated when omitted. */
  id?: string;
}

/**
 * One Responses output item, for `ScriptedCompletion.output`:
 * - `reasoning`: a reasoning item; `summary: ''` gives `summary: []` (as when no summary was
 *   asked for). It carries `encrypted_content` when the request's `include` asks for
 *   `reasoning.encrypted_content`.
 * - `message`: an assistant message with an `output_text` part (`text`, its `annotations` in the
 *   service's form, e.g. `{ type: 'url_citation', url, title, start_index, end_index }`) and/or a
 *   `refusal` part, and the message's `phase`.
 * - `function_call`: a call of one of the request's function tools.
 * - `hosted`: a tool the service ran itself, as the service sends the finished item (e.g.
 *   `{ id: 'ws_1', type: 'web_search_call', status: 'completed', action: {...} }`), streamed with
 *   that tool's events (`response.web_search_call.in_progress`, `.searching`, `.completed`, ...).
 */
export type ScriptedOutputItem =
  | { type: 'reasoning'; summary: string }
  | { type: 'message'; text?: string; refusal?: string; phase?: 'commentary' | 'final_answer'; annotations?: JsonObject[] }
  | ({ type: 'function_call' } & ScriptedToolCall)
  | { type: 'hosted'; item: JsonObject & { type: string } };

/** A successful model turn: text, tool calls, reasoning and/or a refusal. */
export interface ScriptedCompletion {
  /**
   * The assistant text. When `text`, `toolCalls` and `refusal` are all absent the server answers
   * with its default echo. Returned verbatim in JSON modes, so script JSON text for them.
   */
  text?: string;
  /** Tool calls, in order. With no `text` the chat message `content` is `null`. */
  toolCalls?: ScriptedToolCall[];
  /**
   * Reasoning summary text. Responses API: a `reasoning` output item (and summary events when
   * streaming). Chat Completions: only counted in `completion_tokens_details.reasoning_tokens`.
   */
  reasoning?: string;
  /** A refusal instead of text (`message.refusal` / a `refusal` content part). */
  refusal?: string;
  /**
   * Citations on `text`, in the Responses form (`{ type: 'url_citation', url, title, start_index,
   * end_index }`, `file_citation`, ...). Chat Completions sends `url_citation`s in its nested form
   * (`{ type: 'url_citation', url_citation: {...} }`) on the message, and on the last content chunk
   * when streaming.
   */
  annotations?: JsonObject[];
  /**
   * Responses API only: the output items in order, instead of `reasoning`, `text`, `refusal`,
   * `annotations` and `toolCalls` (Chat Completions answers with their texts and calls joined).
   * For interleaved reasoning, messages with a `phase`, hosted tools and function calls.
   */
  output?: ScriptedOutputItem[];
  /**
   * Defaults to `'tool_calls'` when there are tool calls, else `'stop'`. On the Responses API
   * `'length'` and `'content_filter'` give `status: 'incomplete'` with the matching
   * `incomplete_details.reason`.
   */
  finishReason?: 'stop' | 'length' | 'tool_calls' | 'content_filter';
  /** Token usage to report instead of the deterministic count; `cached` input tokens (default 0). */
  usage?: { input: number; output: number; cached?: number };
  /** Streaming only: milliseconds to wait between SSE events (to abort mid-stream). Default 0. */
  streamDelayMs?: number;
}

/** An HTTP error reply with the OpenAI error body `{ error: { message, type, param, code } }`. */
export interface ScriptedError {
  /** The error. `type` defaults from the status, `code` for 401/429, `param` to `null`. */
  error: {
    status: number;
    message: string;
    type?: string;
    code?: string | null;
    param?: string | null;
  };
  /** Extra response headers, e.g. `{ 'retry-after-ms': '1' }` for a 429. */
  headers?: Record<string, string>;
}

/**
 * A broken reply. For streaming calls: `'truncated'` sends a few events and then drops the
 * connection (no `[DONE]`, no terminating chunk); `'garbage'` sends an event whose data is not
 * JSON. For non-streaming calls: a cut-off body, or a 200 whose body is not JSON.
 */
export interface ScriptedMalformedStream {
  malformedStream: 'truncated' | 'garbage';
}

/**
 * A failure the service reports after it accepted the request (HTTP 200), as the real service
 * does for a server error, a rate or quota problem or a bad input found while generating.
 * - Responses, streaming: `response.created`, `response.in_progress`, any `textBefore` deltas, an
 *   `error` event (see `errorEvent`), then `response.failed` whose `response.error` is `{ code, message }`.
 * - Responses, plain: the response object with `status: 'failed'`, that `error` and no output.
 * - Chat Completions, streaming: the role chunk, any `textBefore` deltas, then
 *   `data: {"error":{message,type,param,code}}` and the end of the stream (no finish chunk, no `[DONE]`).
 * - Chat Completions, plain: that API has no failed 200, so the HTTP error the service sends for
 *   the code: 429 for `rate_limit_exceeded` and `insufficient_quota`, 500 for `server_error` (or
 *   no code), 400 otherwise.
 *
 * A failed response is not stored.
 */
export interface ScriptedFailure {
  failure: {
    /** The error code, e.g. `'server_error'`, `'insufficient_quota'`, `'context_length_exceeded'`; `null` as the service sends for some. */
    code: string | null;
    message: string;
    /**
     * The error object's `type` (chat `error` object, nested Responses `error` event). Default:
     * `insufficient_quota` for that code, `requests` for `rate_limit_exceeded`, `server_error` for
     * `server_error` or no code, else `invalid_request_error`.
     */
    type?: string;
    param?: string | null;
    /**
     * How the Responses `error` event carries the error: `'nested'` (default; as the service was
     * recorded sending it: `{ type: 'error', error: { type, code, message, param } }`), `'flat'` (as
     * the SDK's `ResponseErrorEvent` declares it: `{ type: 'error', code, message, param }`), or
     * `'none'` (no `error` event, only `response.failed`).
     */
    errorEvent?: 'nested' | 'flat' | 'none';
    /** Streaming only: text sent as deltas before the failure (a partial answer). */
    textBefore?: string;
  };
}

/**
 * Recorded service traffic, sent as is after the request passed the server's checks.
 * - `{ status, body }`: a JSON reply with that status (e.g. a recorded error body).
 * - `{ events }`: a 200 event stream of these payloads (one recorded `data` JSON each), framed as
 *   the service frames the endpoint: Chat Completions `data: <json>` frames and a last
 *   `data: [DONE]`; Responses `event: <type>` and `data: <json>` frames and no `[DONE]`.
 *   Sent whether or not the request asked to stream.
 * - `{ sse }`: a 200 event stream whose body is exactly this text (a raw recorded `.sse` body).
 * `recordedEvents(name)`, `recordedBody(name)` and `recordedSse(name)` read the recordings bundled in `fixtures/`.
 */
export interface ScriptedReplay {
  replay: { status: number; body: unknown; headers?: Record<string, string> } | { events: JsonObject[] } | { sse: string };
}

/** Hold a reply for `delayMs` before sending `reply`; a client disconnect cancels it. */
export interface ScriptedDelay {
  delayMs: number;
  reply: ScriptedReply;
}

/** What the server answers to one chat completions or responses call. */
export type ScriptedReply = ScriptedCompletion | ScriptedError | ScriptedFailure | ScriptedReplay | ScriptedMalformedStream | ScriptedDelay;

/** Decides a reply for a request when the queue is empty; `undefined` means the default echo. */
export type Responder = (request: RecordedRequest) => ScriptedReply | undefined;

/** Options of {@link startOpenAITestServer}. */
export interface OpenAITestServerOptions {
  /** The key clients must send as `Authorization: Bearer KEY` or `api-key: KEY`. Default `'test-key'`. */
  apiKey?: string;
  /**
   * Answer every chat completion with one id (`chatcmpl-reused`) and every response with one id
   * (`resp_reused`), as some OpenAI-compatible servers and proxies do. A stored response then
   * replaces the one stored under that id before. Default false: a fresh id each time.
   */
  reuseIds?: boolean;
}

/** A Responses API or Conversations API item as the server stores it (input or output). */
export type ConversationItem = JsonObject & { type: string };

/** A running local OpenAI-protocol server. */
export interface OpenAITestServer {
  /** `'http://127.0.0.1:PORT/v1'`: the `baseURL` for `new OpenAI({ baseURL, apiKey })`. */
  readonly url: string;
  /** `'http://127.0.0.1:PORT'`: the `endpoint` for `new AzureOpenAI({ endpoint, ... })`. */
  readonly origin: string;
  /** The key the server accepts. */
  readonly apiKey: string;
  /** Every request received, in arrival order, including rejected ones and retries. */
  readonly requests: RecordedRequest[];
  /** Queue replies for the next chat completions / responses calls, first in first out; each is used once. */
  enqueue(...replies: ScriptedReply[]): void;
  /** Set the fallback used when the queue is empty (`undefined` restores the default echo `"You said: <last user text>"`). */
  respondWith(fn: Responder | undefined): void;
  /**
   * The full item chain the service holds for a stored response: the input and output items of
   * every response from the first one of the `previous_response_id` chain to `responseId`.
   * Throws when `responseId` was never stored (unknown, or created with `store: false`).
   */
  conversation(responseId: string): ConversationItem[];
  /** The items of a Conversations API conversation, oldest first. Throws when the id is unknown. */
  conversationItems(conversationId: string): ConversationItem[];
  /** Clear the queue, the responder, the request log, stored responses and conversations. */
  reset(): void;
  /** Stop listening and drop open connections (pending delayed replies are cancelled). */
  close(): Promise<void>;
}
