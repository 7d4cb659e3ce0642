import type { AgentResponse, AgentRunStream, ChatResponseUpdate, Content } from '@ctx/core';
import { dataUrl, deniedReason, errorTextOf, parseInput, type UIApprovalMode, type UIMessageChunk } from './ui-message.js';

/** What `toUIMessageStream` is told at the start and at the finish of a run, for message metadata. */
export type UIMessageMetadataEvent =
  | {
      /** Before the first chunk of the message. */
      type: 'start';
    }
  | {
      /** After the run ended (every `afterRun` included). */
      type: 'finish';
      /** The run's response: usage, finish reason, pending approvals, the messages stored. */
      response: AgentResponse;
    };

/** Options of `toUIMessageStream` and `toUIMessageStreamResponse`. */
export interface ToUIMessageStreamOptions {
  /** How a call waiting for approval is shown (see `UIApprovalMode`). Default `'request'` (`ai` 6 and later). */
  approvals?: UIApprovalMode;
  /**
   * The text of the `error` chunk the page gets when the run fails (the page's `useChat` shows it
   * as `error.message`). Default: `'An error occurred.'` for every failure, so nothing internal
   * (hosts, keys, stack) reaches the page; map the error classes you want the user to see (for
   * example `InvalidInputError`, the caller's own mistake). Log the error here if you want it logged.
   */
  onError?: (error: unknown) => string;
  /**
   * Metadata of the UI message: called at the start and at the finish; what it returns (unless
   * undefined) is sent as `messageMetadata` and merged into the page's `message.metadata`.
   * Default: none.
   */
  messageMetadata?: (event: UIMessageMetadataEvent) => unknown;
}

/** The default text of an `error` chunk: says nothing about the failure's internals. */
export const DEFAULT_UI_ERROR_TEXT = 'An error occurred.';

/**
 * A ctx run (`agent.runStream(...)`) as the AI SDK's UI message stream, the chunks `useChat` reads:
 * `start` with the id ctx stores for the turn's first assistant message (a reload, through
 * `uiMessagesFromHistory`, shows the same id), a step per model call, text, tool calls
 * (`tool-input-start`, `-delta`, `-available`) and their results (`tool-output-available`,
 * `tool-output-error`, `tool-output-denied` for a denied approval), calls waiting for approval
 * (see `approvals`), and `finish` with the run's finish reason. A run that answers approvals
 * continues the page's last assistant message (its `start` names no id). A failure of the run (or
 * of storing it) is an `error` chunk with `onError`'s text, and the stream ends there.
 *
 * Ids equal the stored ones when the chat client gives each update the `messageId` of the message
 * it becomes (every ctx client does). Cancelling the stream (the page's stop button closes the
 * request) aborts the run: nothing of it is stored.
 */
export function toUIMessageStream(stream: AgentRunStream, options: ToUIMessageStreamOptions = {}): ReadableStream<UIMessageChunk> {
  return uiMessageStream(stream, options, undefined);
}

/** Where `teedUIMessageStream` also sends the chunks, and whether the run outlives the reader. */
export interface UIChunkTee {
  /** Every chunk, in order, whether or not a reader still reads, with its JSON text (what the reader gets). */
  chunks(chunks: readonly UIMessageChunk[], json: readonly string[]): void;
  /** After the last chunk; the reader's stream closes once it settles. */
  end(): Promise<void>;
  /** Each update of the run, as it is read, before its chunks are made. */
  update?(update: ChatResponseUpdate): void;
  /** A read of the run failed: true ends the updates quietly (the stream then finishes with the run's response), false fails it. */
  readFailed?(error: unknown): boolean;
}

/**
 * `toUIMessageStream` as the protocol's server-sent events, ready for a response body
 * (`uiMessageStreamResponse`): each chunk's JSON text, also sent to `tee` with the chunk (each
 * chunk serialized once, for both), is encoded here, with no transform stream after it. A reader
 * that cancels leaves the run going (its chunks still go to the tee) instead of aborting it.
 */
export function teedUIMessageStream(
  stream: AgentRunStream,
  options: ToUIMessageStreamOptions,
  tee: UIChunkTee,
): ReadableStream<Uint8Array> {
  return uiMessageStream(stream, options, tee);
}

function uiMessageStream(stream: AgentRunStream, options: ToUIMessageStreamOptions, tee: UIChunkTee): ReadableStream<Uint8Array>;
function uiMessageStream(stream: AgentRunStream, options: ToUIMessageStreamOptions, tee: undefined): ReadableStream<UIMessageChunk>;
function uiMessageStream(
  stream: AgentRunStream,
  options: ToUIMessageStreamOptions,
  tee: UIChunkTee | undefined,
): ReadableStream<UIMessageChunk | Uint8Array> {
  const writer = new ChunkWriter(options);
  let iterator: AsyncIterator<ChatResponseUpdate> | undefined;
  let finished = false;
  let cancelled = false;
  /** The read under way, so a drain after a cancel starts after it. */
  let reading: Promise<ReadonlyArray<UIMessageChunk | Uint8Array>> | undefined;
  /** The next chunks of the run (at least one; with a tee, as JSON texts), and whether they are its last. */
  const next = async (): Promise<ReadonlyArray<UIMessageChunk | Uint8Array>> => {
    let chunks: UIMessageChunk[];
    try {
      // Read until an update gives chunks (or the run ends), so each pull enqueues something.
      iterator ??= stream[Symbol.asyncIterator]();
      do {
        let item: IteratorResult<ChatResponseUpdate>;
        try {
          item = await iterator.next();
        } catch (error) {
          if (!tee?.readFailed?.(error)) throw error;
          item = { done: true, value: undefined };
        }
        if (item.done) {
          finished = true;
          chunks = writer.finish(await stream.response);
        } else {
          tee?.update?.(item.value);
          chunks = writer.add(item.value);
        }
      } while (chunks.length === 0);
    } catch (error) {
      finished = true;
      chunks = writer.fail(error);
    }
    if (!tee) return chunks;
    const json = chunks.map((chunk) => JSON.stringify(chunk));
    tee.chunks(chunks, json);
    if (finished) await tee.end();
    // The pull's chunks as one piece of the body, the protocol's last event after the last chunk.
    return [SSE_ENCODER.encode(`data: ${json.join('\n\ndata: ')}\n\n${finished ? SSE_DONE : ''}`)];
  };
  return new ReadableStream<UIMessageChunk | Uint8Array>(
    {
      async pull(controller) {
        if (finished) return;
        reading = next();
        const chunks = await reading;
        if (cancelled) return; // the reader went away meanwhile: nothing to send to
        for (const chunk of chunks) controller.enqueue(chunk);
        if (finished) controller.close();
      },
      async cancel() {
        cancelled = true;
        if (tee) {
          // The run goes on for the tee: read it to its end, after the read under way.
          const drain = async () => {
            await reading;
            while (!finished) await next();
          };
          void drain();
          return;
        }
        finished = true;
        await iterator?.return?.();
        stream.response.catch(() => {});
      },
      // With a tee, the run reads ahead of a slow reader (up to this many chunks), so the tee's other readers are not held back.
    },
    tee ? { highWaterMark: TEE_READ_AHEAD } : undefined,
  );
}

/** How many chunks a teed stream reads ahead of its reader. */
const TEE_READ_AHEAD = 256;

/** What `toUIMessageStream` tracks of the message being streamed. */
interface OpenCall {
  name: string;
  args: string;
}

/** Turns ctx updates into UI message chunks, message by message. */
class ChunkWriter {
  private started = false;
  private stepOpen = false;
  private messageId: string | undefined;
  private role: string | undefined;
  /** The open text part: its chunk id and what it holds (`text:<phase>` or `refusal`). */
  private text: { id: string; kind: string } | undefined;
  private calls = new Map<string, OpenCall>();
  private parts = 0;

  constructor(private readonly options: ToUIMessageStreamOptions) {}

  add(update: ChatResponseUpdate): UIMessageChunk[] {
    const out: UIMessageChunk[] = [];
    if (update.contents.length === 0) return out; // usage or metadata only: nothing to show
    const role =
      update.role ?? (update.messageId === undefined || update.messageId === this.messageId ? this.role : undefined) ?? 'assistant';
    const isNew = this.role === undefined || role !== this.role || (update.messageId !== undefined && update.messageId !== this.messageId);
    if (isNew) {
      this.endMessage(out);
      if (!this.started) this.start(out, role === 'assistant' ? update.messageId : undefined);
      this.role = role;
      this.messageId = update.messageId;
      if (role === 'assistant') {
        if (this.stepOpen) out.push({ type: 'finish-step' });
        out.push({ type: 'start-step' });
        this.stepOpen = true;
      }
    }
    for (const piece of update.contents) this.content(piece, out);
    return out;
  }

  finish(response: AgentResponse): UIMessageChunk[] {
    const out: UIMessageChunk[] = [];
    if (!this.started) this.start(out, undefined);
    this.endMessage(out);
    if ((this.options.approvals ?? 'request') === 'request') {
      for (const pending of response.pendingApprovals ?? []) {
        out.push({ type: 'tool-approval-request', approvalId: pending.callId, toolCallId: pending.callId });
      }
    }
    if (this.stepOpen) out.push({ type: 'finish-step' });
    this.stepOpen = false;
    const metadata = this.options.messageMetadata?.({ type: 'finish', response });
    out.push({
      type: 'finish',
      ...(response.finishReason !== undefined ? { finishReason: response.finishReason } : {}),
      ...(metadata !== undefined ? { messageMetadata: metadata } : {}),
    });
    return out;
  }

  fail(error: unknown): UIMessageChunk[] {
    const out: UIMessageChunk[] = [];
    if (!this.started) this.start(out, undefined);
    let errorText = DEFAULT_UI_ERROR_TEXT;
    if (this.options.onError) {
      try {
        errorText = this.options.onError(error);
      } catch {
        // a mapper that fails leaves the safe default
      }
    }
    out.push({ type: 'error', errorText });
    return out;
  }

  private start(out: UIMessageChunk[], messageId: string | undefined): void {
    this.started = true;
    const metadata = this.options.messageMetadata?.({ type: 'start' });
    out.push({
      type: 'start',
      ...(messageId !== undefined ? { messageId } : {}),
      ...(metadata !== undefined ? { messageMetadata: metadata } : {}),
    });
  }

  /** Closes the open text part and announces the message's calls as complete. */
  private endMessage(out: UIMessageChunk[]): void {
    this.closeText(out);
    for (const [toolCallId, call] of this.calls) {
      out.push({ type: 'tool-input-available', toolCallId, toolName: call.name, input: parseInput(call.args) });
    }
    this.calls.clear();
  }

  private closeText(out: UIMessageChunk[]): void {
    if (this.text) out.push({ type: 'text-end', id: this.text.id });
    this.text = undefined;
  }

  private content(piece: Content, out: UIMessageChunk[]): void {
    switch (piece.type) {
      case 'text':
      case 'refusal': {
        const delta = piece.type === 'text' ? piece.text : piece.refusal;
        const kind = piece.type === 'text' ? `text:${piece.phase ?? ''}` : 'refusal';
        if (this.text && this.text.kind !== kind) this.closeText(out);
        if (delta === '') return;
        if (!this.text) {
          this.text = { id: `${this.messageId ?? 'text'}:${this.parts++}`, kind };
          out.push({ type: 'text-start', id: this.text.id });
        }
        out.push({ type: 'text-delta', id: this.text.id, delta });
        return;
      }
      case 'function-call': {
        this.closeText(out);
        const open = this.calls.get(piece.callId);
        if (open) {
          open.args += piece.arguments;
          if (!open.name && piece.name) open.name = piece.name;
        } else {
          this.calls.set(piece.callId, { name: piece.name, args: piece.arguments });
          out.push({ type: 'tool-input-start', toolCallId: piece.callId, toolName: piece.name });
        }
        if (piece.arguments !== '') out.push({ type: 'tool-input-delta', toolCallId: piece.callId, inputTextDelta: piece.arguments });
        return;
      }
      case 'function-result': {
        this.closeText(out);
        if (!piece.isError) {
          out.push({ type: 'tool-output-available', toolCallId: piece.callId, output: piece.result });
        } else if ((this.options.approvals ?? 'request') === 'request' && deniedReason(piece.result)) {
          out.push({ type: 'tool-output-denied', toolCallId: piece.callId });
        } else {
          out.push({ type: 'tool-output-error', toolCallId: piece.callId, errorText: errorTextOf(piece.result) });
        }
        return;
      }
      case 'data': {
        this.closeText(out);
        out.push({ type: 'file', url: dataUrl(piece), mediaType: piece.mediaType });
        return;
      }
      default:
        // Reasoning and the service's own tools are not shown (see the README).
        return;
    }
  }
}

/**
 * The headers of a UI message stream response, as the AI SDK sets them: server-sent events, and
 * `x-vercel-ai-ui-message-stream: v1`, by which `useChat` knows the protocol.
 */
export const UI_MESSAGE_STREAM_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-vercel-ai-ui-message-stream': 'v1',
  'x-accel-buffering': 'no',
});

/** Options of `toUIMessageStreamResponse`: the stream's, and the response's status and headers. */
export interface ToUIMessageStreamResponseOptions extends ToUIMessageStreamOptions {
  /** The HTTP status. Default 200. */
  status?: number;
  /** More headers (they win over the protocol's of the same name). */
  headers?: Record<string, string>;
}

/**
 * A web `Response` streaming a ctx run to `useChat`: `toUIMessageStream` as server-sent events
 * (`data: <chunk JSON>` each, then `data: [DONE]`), with `UI_MESSAGE_STREAM_HEADERS`. Return it from a
 * route handler (Next.js, Hono, any fetch-style server).
 */
export function toUIMessageStreamResponse(stream: AgentRunStream, options: ToUIMessageStreamResponseOptions = {}): Response {
  const { status = 200, headers, ...streamOptions } = options;
  return chunkStreamResponse(toUIMessageStream(stream, streamOptions), status, headers);
}

/** Encodes the server-sent events of a streamed turn's body. */
const SSE_ENCODER = new TextEncoder();
/** The protocol's last event. */
const SSE_DONE = 'data: [DONE]\n\n';

/**
 * A UI message stream response whose body is already the protocol's server-sent events (as
 * `teedUIMessageStream` makes them), with `UI_MESSAGE_STREAM_HEADERS`.
 */
export function uiMessageStreamResponse(
  body: ReadableStream<Uint8Array>,
  status = 200,
  headers: Record<string, string> | undefined = undefined,
): Response {
  return new Response(body, { status, headers: { ...UI_MESSAGE_STREAM_HEADERS, ...headers } });
}

/** UI message chunks as the protocol's server-sent events response (`data: <chunk JSON>` each, then `data: [DONE]`). */
export function chunkStreamResponse(
  chunks: ReadableStream<UIMessageChunk>,
  status = 200,
  headers: Record<string, string> | undefined = undefined,
): Response {
  const encoder = new TextEncoder();
  const body = chunks.pipeThrough(
    new TransformStream<UIMessageChunk, Uint8Array>({
      transform(chunk, controller) {
        controller.enqueue(encoder.encode(`data: ${JSON.stringify(chunk)}\n\n`));
      },
      flush(controller) {
        controller.enqueue(encoder.encode('data: [DONE]\n\n'));
      },
    }),
  );
  return new Response(body, { status, headers: { ...UI_MESSAGE_STREAM_HEADERS, ...headers } });
}
