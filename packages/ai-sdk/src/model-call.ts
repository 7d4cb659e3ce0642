import { APICallError, type JSONSchema7, type LanguageModelV2CallOptions } from '@ai-sdk/provider';
import type { ChatOptions, ChatResponseUpdate, Message } from '@ctx/core';
import { abortable, pause } from '@ctx/core/backend';
import { type AiSdkLanguageModel, type CallOptions, doStream, type StreamPart, type StreamResult } from './language-model.js';
import { toPrompt } from './prompt.js';
import { createStreamMapper } from './results.js';
import { truncatedStream } from './errors.js';

type FunctionTool = Extract<NonNullable<LanguageModelV2CallOptions['tools']>[number], { type: 'function' }>;

/**
 * The AI SDK call options for ctx messages and chat options: the prompt (instructions first), tools,
 * tool choice, temperature, output limit, response format and signal, over `options.additional`
 * (any other call option, e.g. `providerOptions`, `topP`, `seed`, `headers`).
 */
export function toCallOptions(messages: readonly Message[], options: ChatOptions): CallOptions {
  const call: LanguageModelV2CallOptions = {
    ...(options.additional as Partial<LanguageModelV2CallOptions> | undefined),
    prompt: toPrompt(messages, options.instructions) as LanguageModelV2CallOptions['prompt'],
  };
  if (options.tools?.length) call.tools = options.tools.map(toFunctionTool);
  const choice = options.toolChoice;
  if (choice !== undefined) call.toolChoice = typeof choice === 'string' ? { type: choice } : { type: 'tool', toolName: choice.name };
  if (options.temperature !== undefined) call.temperature = options.temperature;
  if (options.maxOutputTokens !== undefined) call.maxOutputTokens = options.maxOutputTokens;
  if (options.responseFormat) call.responseFormat = options.responseFormat as LanguageModelV2CallOptions['responseFormat'];
  if (options.signal) call.abortSignal = options.signal;
  return call;
}

/** A ctx tool declaration as an AI SDK function tool. */
export function toFunctionTool(tool: { name: string; description?: string; parameters: object }): FunctionTool {
  return {
    type: 'function',
    name: tool.name,
    inputSchema: tool.parameters as JSONSchema7,
    ...(tool.description ? { description: tool.description } : {}),
  };
}

/**
 * Runs `call` (a model call), retrying what the AI SDK marks retryable (429, 5xx, a lost
 * connection) up to `maxRetries` times: after the service's `retry-after-ms` / `retry-after` when
 * it gives one under a minute, else after 2 s, 4 s, 8 s... Never calls with `signal` aborted, and
 * settles with the abort reason as soon as it aborts.
 */
export async function withRetries<T>(call: () => PromiseLike<T>, maxRetries: number, signal: AbortSignal | undefined): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    if (signal?.aborted) throw signal.reason;
    try {
      return await abortable(Promise.resolve(call()), signal);
    } catch (error) {
      if (signal?.aborted || attempt >= maxRetries || !APICallError.isInstance(error) || !error.isRetryable) throw error;
      await pause(retryDelay(error, attempt), signal);
    }
  }
}

function retryDelay(error: APICallError, attempt: number): number {
  const headers = error.responseHeaders ?? {};
  const ms = Number.parseFloat(headers['retry-after-ms'] ?? '');
  const after = headers['retry-after'];
  const given = Number.isFinite(ms)
    ? ms
    : after === undefined
      ? Number.NaN
      : Number.isFinite(Number(after))
        ? Number(after) * 1000
        : Date.parse(after) - Date.now();
  return given >= 0 && given < 60_000 ? given : 2000 * 2 ** attempt;
}

/** What `streamModel` reports besides the updates, and how it names failures. */
export interface StreamObserver {
  /** The result of `doStream`, once it resolved (its headers and request). */
  onStart?(result: StreamResult): void;
  /** Every part the model sent, in order, before it is mapped. */
  onPart?(part: StreamPart): void;
  /** What a failure of the call or the stream is thrown as. Default: the failure unchanged. */
  mapError?(error: unknown): unknown;
}

/**
 * Streams one model call as ctx updates, the call options made by `prepare` once the stream is
 * first read. Reading honours `signal`, and a consumer that stops early cancels the model's
 * stream. A stream that ends without its `finish` part fails with `truncatedStream`. Reads go
 * one at a time, as `for await` makes them; each costs one read of the model's stream.
 */
export function streamModel(
  model: AiSdkLanguageModel,
  prepare: () => CallOptions,
  maxRetries: number,
  signal: AbortSignal | undefined,
  observer: StreamObserver = {},
): AsyncIterable<ChatResponseUpdate> {
  return {
    [Symbol.asyncIterator]() {
      const map = createStreamMapper();
      let reader: ReadableStreamDefaultReader<StreamPart> | undefined;
      let finished = false;
      let closed = false;
      // One listener for the whole stream, not one per part: an abort cancels the reader, which ends a pending read at once.
      const onAbort = () => void reader?.cancel(signal?.reason).catch(() => {});
      const close = () => {
        if (closed) return;
        closed = true;
        signal?.removeEventListener('abort', onAbort);
        reader?.cancel().catch(() => {});
      };
      const fail = (error: unknown): never => {
        close();
        throw observer.mapError ? observer.mapError(error) : error;
      };
      const start = async () => {
        const call = prepare();
        const result = await withRetries(() => doStream(model, call), maxRetries, signal);
        if (closed) return void (result.stream as ReadableStream<StreamPart>).cancel().catch(() => {});
        observer.onStart?.(result);
        reader = (result.stream as ReadableStream<StreamPart>).getReader();
        signal?.addEventListener('abort', onAbort, { once: true });
      };
      const onRead = (
        result: ReadableStreamReadResult<StreamPart>,
      ): IteratorResult<ChatResponseUpdate> | Promise<IteratorResult<ChatResponseUpdate>> => {
        if (signal?.aborted) return fail(signal.reason);
        if (result.done) {
          close();
          if (!finished) throw truncatedStream(`${model.provider} ${model.modelId}`);
          return { done: true, value: undefined };
        }
        const part = result.value;
        let update: ChatResponseUpdate | undefined;
        try {
          observer.onPart?.(part);
          finished ||= part.type === 'finish';
          update = map(part);
        } catch (error) {
          return fail(error);
        }
        return update ? { done: false, value: update } : read();
      };
      const read = (): Promise<IteratorResult<ChatResponseUpdate>> => {
        if (closed) return Promise.resolve({ done: true, value: undefined });
        if (signal?.aborted) return Promise.reject(signal.reason).catch(fail);
        return reader!.read().then(onRead, fail);
      };
      return {
        next: () => (reader || closed ? read() : start().then(read, fail)),
        return: () => {
          close();
          return Promise.resolve({ done: true, value: undefined });
        },
      };
    },
  };
}
