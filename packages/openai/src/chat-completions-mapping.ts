import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionContentPart,
  ChatCompletionCreateParamsBase,
  ChatCompletionMessageParam,
  ChatCompletionTool,
  ChatCompletionToolChoiceOption,
} from 'openai/resources/chat/completions';
import type {
  ChatOptions,
  ChatResponse,
  ChatResponseUpdate,
  Content,
  DataContent,
  FinishReason,
  FunctionResultContent,
  Message,
  Usage,
  JsonValue,
} from '@ctx/core';
import { generateId, Message as Messages } from '@ctx/core';
import { textContent } from './annotations.js';

/** Core messages (plus instructions) as Chat Completions messages. Reasoning is not sent: the API has no place for it. */
export function toChatMessages(
  messages: readonly Message[],
  instructions: string | undefined,
  systemRole: 'system' | 'developer',
): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = [];
  if (instructions) out.push({ role: systemRole, content: instructions });
  for (const m of messages) {
    const name = m.authorName ? { name: m.authorName.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64) } : {};
    switch (m.role) {
      case 'system':
        out.push({ role: systemRole, content: Messages.text(m), ...name });
        break;
      case 'user': {
        const parts = m.contents.flatMap(toUserPart);
        const onlyText = parts.every((p) => p.type === 'text');
        out.push({ role: 'user', content: onlyText ? parts.map((p) => (p as { text: string }).text).join('') : parts, ...name });
        for (const r of results(m)) out.push(toToolMessage(r));
        break;
      }
      case 'assistant': {
        const calls = Messages.functionCalls(m);
        const text = Messages.text(m);
        const refusal = m.contents.flatMap((c) => (c.type === 'refusal' ? [c.refusal] : [])).join('');
        out.push({
          role: 'assistant',
          content: text || (calls.length || refusal ? null : ''),
          ...(refusal ? { refusal } : {}),
          ...(calls.length
            ? {
                tool_calls: calls.map((c) => ({
                  id: c.callId,
                  type: 'function' as const,
                  function: { name: c.name, arguments: c.arguments },
                })),
              }
            : {}),
          ...name,
        });
        break;
      }
      case 'tool':
        for (const r of results(m)) out.push(toToolMessage(r));
        break;
    }
  }
  return out;
}

function results(m: Message): FunctionResultContent[] {
  return m.contents.filter((c): c is FunctionResultContent => c.type === 'function-result');
}

function toToolMessage(r: FunctionResultContent): ChatCompletionMessageParam {
  return { role: 'tool', tool_call_id: r.callId, content: resultText(r) };
}

/** A function result as the text the service expects. */
export function resultText(r: FunctionResultContent): string {
  return typeof r.result === 'string' ? r.result : JSON.stringify(r.result);
}

/** A `data:` URL for inline data, or the remote URI. */
export function dataUrl(c: DataContent): string {
  return c.uri ?? `data:${c.mediaType};base64,${c.data}`;
}

function toUserPart(c: Content): ChatCompletionContentPart[] {
  switch (c.type) {
    case 'text':
      return [{ type: 'text', text: c.text }];
    case 'data':
      if (c.mediaType.startsWith('image/')) return [{ type: 'image_url', image_url: { url: dataUrl(c) } }];
      if (c.data !== undefined && (c.mediaType === 'audio/wav' || c.mediaType === 'audio/mpeg' || c.mediaType === 'audio/mp3')) {
        return [{ type: 'input_audio', input_audio: { data: c.data, format: c.mediaType === 'audio/wav' ? 'wav' : 'mp3' } }];
      }
      if (c.data !== undefined) return [{ type: 'file', file: { file_data: dataUrl(c), filename: c.name ?? 'file' } }];
      return [{ type: 'text', text: c.uri! }];
    default:
      return [];
  }
}

/** Tools, tool choice, response format and sampling options as request fields. */
export function toChatParams(options: ChatOptions): Partial<ChatCompletionCreateParamsBase> {
  const params: Partial<ChatCompletionCreateParamsBase> = {};
  if (options.tools?.length) {
    params.tools = options.tools.map(
      (t): ChatCompletionTool => ({
        type: 'function',
        function: { name: t.name, parameters: t.parameters, ...(t.description ? { description: t.description } : {}) },
      }),
    );
  }
  if (options.toolChoice !== undefined) params.tool_choice = toToolChoice(options.toolChoice);
  if (options.temperature !== undefined) params.temperature = options.temperature;
  if (options.maxOutputTokens !== undefined) params.max_completion_tokens = options.maxOutputTokens;
  if (options.store !== undefined) params.store = options.store;
  const format = options.responseFormat;
  if (format?.type === 'json') {
    params.response_format = format.schema
      ? {
          type: 'json_schema',
          json_schema: {
            name: format.name ?? 'response',
            schema: format.schema,
            strict: true,
            ...(format.description ? { description: format.description } : {}),
          },
        }
      : { type: 'json_object' };
  } else if (format?.type === 'text') {
    params.response_format = { type: 'text' };
  }
  return params;
}

function toToolChoice(choice: NonNullable<ChatOptions['toolChoice']>): ChatCompletionToolChoiceOption {
  return typeof choice === 'string' ? choice : { type: 'function', function: { name: choice.name } };
}

/** Maps the service's finish reason. */
export function toFinishReason(reason: string | null | undefined): FinishReason | undefined {
  switch (reason) {
    case null:
    case undefined:
      return undefined;
    case 'stop':
      return 'stop';
    case 'length':
      return 'length';
    case 'tool_calls':
    case 'function_call':
      return 'tool-calls';
    case 'content_filter':
      return 'content-filter';
    default:
      return 'other';
  }
}

/** Chat Completions usage as core usage, with the cached and reasoning token details when the service gives them. */
export function toUsage(usage: ChatCompletion['usage'] | null | undefined): Usage | undefined {
  if (!usage) return undefined;
  const out: Usage = { inputTokens: usage.prompt_tokens, outputTokens: usage.completion_tokens, totalTokens: usage.total_tokens };
  const cached = usage.prompt_tokens_details?.cached_tokens;
  const reasoning = usage.completion_tokens_details?.reasoning_tokens;
  if (typeof cached === 'number') out.cachedInputTokens = cached;
  if (typeof reasoning === 'number') out.reasoningTokens = reasoning;
  return out;
}

/**
 * What the service calls the message of choice `index` (kept as `metadata.serviceMessageId`): the
 * completion's id for the first choice, `<id>:<index>` for the others. The message's own `id` is a
 * fresh one: services and proxies may answer several completions with one id.
 */
export const choiceMessageId = (completionId: string, index: number) => (index === 0 ? completionId : `${completionId}:${index}`);

/** The metadata key under which `@ctx/openai` and `@ctx/ai-sdk` keep what the service called a message. */
export const SERVICE_MESSAGE_ID = 'serviceMessageId';

/**
 * A completion as a core response: one assistant message per choice (one unless the request set
 * `n`), each with its text (and citations), refusal and function calls. `finishReason` is the first
 * choice's.
 */
export function fromChatCompletion(completion: ChatCompletion): ChatResponse {
  const createdAt = new Date(completion.created * 1000).toISOString();
  const choices = completion.choices.length ? completion.choices : [undefined];
  const response: ChatResponse = {
    messages: choices.map((choice) => ({
      id: generateId(),
      role: 'assistant',
      contents: choice ? messageContents(choice.message) : [],
      createdAt,
      metadata: { [SERVICE_MESSAGE_ID]: choiceMessageId(completion.id, choice?.index ?? 0) },
    })),
    raw: completion,
  };
  const finishReason = toFinishReason(completion.choices[0]?.finish_reason);
  if (finishReason) response.finishReason = finishReason;
  const usage = toUsage(completion.usage);
  if (usage) response.usage = usage;
  return response;
}

function messageContents(message: ChatCompletion.Choice['message']): Content[] {
  const contents: Content[] = [];
  if (message.content) contents.push(textContent(message.content, message.annotations));
  if (message.refusal) contents.push({ type: 'refusal', refusal: message.refusal });
  for (const call of message.tool_calls ?? []) {
    if (call.type === 'function')
      contents.push({ type: 'function-call', callId: call.id, name: call.function.name, arguments: call.function.arguments });
  }
  return contents;
}

/**
 * Turns a chunk into updates: one per choice it carries (each choice is its own message, with a
 * fresh id; its first update carries `metadata.serviceMessageId`, see `choiceMessageId`), or one without contents for a chunk with no choices (the usage chunk, Azure's
 * first chunk). Remembers which call id and name each tool-call index of each choice has. Only the
 * first choice's finish reason is reported.
 */
export function createChunkMapper(): (chunk: ChatCompletionChunk) => ChatResponseUpdate[] {
  const calls = new Map<string, { callId: string; name: string }>();
  // A fresh id per choice, made once; the first update of each choice says what the service calls it.
  const ids = new Map<number, string>();
  const idOf = (chunk: ChatCompletionChunk, index: number) => {
    let id = ids.get(index);
    let metadata: Record<string, JsonValue> | undefined;
    if (id === undefined) {
      ids.set(index, (id = generateId()));
      metadata = { [SERVICE_MESSAGE_ID]: choiceMessageId(chunk.id, index) };
    }
    return { id, metadata };
  };
  return (chunk) => {
    const usage = toUsage(chunk.usage);
    if (chunk.choices.length === 0)
      return [{ messageId: ids.get(0), role: 'assistant', contents: [], usage, finishReason: undefined, metadata: undefined }];
    return chunk.choices.map((choice, i) => {
      const contents: Content[] = [];
      const delta = choice.delta as ChatCompletionChunk.Choice['delta'] & { annotations?: unknown[] };
      if (delta?.content || delta?.annotations?.length) contents.push(textContent(delta.content ?? '', delta.annotations));
      if (delta?.refusal) contents.push({ type: 'refusal', refusal: delta.refusal });
      for (const piece of delta?.tool_calls ?? []) {
        const key = `${choice.index}:${piece.index}`;
        let call = calls.get(key);
        if (!call) calls.set(key, (call = { callId: piece.id ?? `call_${piece.index}`, name: piece.function?.name ?? '' }));
        contents.push({
          type: 'function-call',
          callId: call.callId,
          name: piece.function?.name ?? '',
          arguments: piece.function?.arguments ?? '',
        });
      }
      // One object shape for every update keeps this hot path monomorphic.
      const { id, metadata } = idOf(chunk, choice.index);
      return {
        messageId: id,
        role: 'assistant',
        contents,
        usage: i === 0 ? usage : undefined,
        finishReason: choice.index === 0 ? toFinishReason(choice.finish_reason) : undefined,
        metadata,
      };
    });
  };
}
