import type {
  FunctionTool,
  Response,
  ResponseCreateParamsBase,
  ResponseInputContent,
  ResponseInputItem,
  ResponseStreamEvent,
} from 'openai/resources/responses/responses';
import type {
  ChatOptions,
  ChatResponse,
  ChatResponseUpdate,
  Content,
  FinishReason,
  JsonObject,
  Message,
  TextContent,
  Usage,
} from '@ctx/core';
import { generateId } from '@ctx/core';
import { keptBeforeCompaction, newestCompactionIndex } from '@ctx/core/backend';
import { fromPhase, textContent, toAnnotation } from './annotations.js';
import { dataUrl, resultText, SERVICE_MESSAGE_ID } from './chat-completions-mapping.js';
import { serviceError } from './errors.js';

/** Whether an id names a Conversations API conversation (else it is a previous response id). */
export const isConversationObjectId = (id: string) => id.startsWith('conv_');

/** Options of `toResponseInput`. */
export interface ResponseInputOptions {
  /**
   * Drop what the newest compaction item stands for (default true): every item before it, but the
   * context providers added and the window a standalone compaction returned with it (see core's
   * `keptBeforeCompaction`). Off for `previous_response_id` chains, which must not be pruned.
   */
  prune?: boolean;
}

/**
 * Core messages as Responses input items, in order. Assistant texts go as assistant messages, one
 * per phase (with its `phase`), refusals as assistant text; hosted tool items (compaction items
 * among them) go back unchanged. The items a compaction item stands for are not sent again.
 */
export function toResponseInput(messages: readonly Message[], options: ResponseInputOptions = {}): ResponseInputItem[] {
  const at = options.prune === false ? -1 : newestCompactionIndex(messages);
  if (at === -1) return messages.flatMap(toItems);
  const compaction = messages[at]!;
  const own = toItems(compaction);
  // Within its message too, the items before the compaction item are what it stands for.
  let last = own.length - 1;
  while (last >= 0 && own[last]!.type !== 'compaction') last--;
  const after = [...own.slice(Math.max(0, last)), ...messages.slice(at + 1).flatMap(toItems)];
  // A call whose output is still to be sent stays (before the item), so the pair goes together.
  const answered = new Set(after.flatMap((i) => (i.type === 'function_call_output' ? [i.call_id] : [])));
  const answeredCall = (i: ResponseInputItem) => i.type === 'function_call' && answered.has(i.call_id);
  const before = messages.slice(0, at).flatMap((m) => (keptBeforeCompaction(m, compaction) ? toItems(m) : toItems(m).filter(answeredCall)));
  return [...before, ...own.slice(0, Math.max(0, last)).filter(answeredCall), ...after];
}

/** One message as Responses input items. */
function toItems(m: Message): ResponseInputItem[] {
  const items: ResponseInputItem[] = [];
  if (m.role === 'user' || m.role === 'system') {
    const content = m.contents.flatMap(toInputContent);
    if (content.length) items.push({ type: 'message', role: m.role, content });
  }
  let text = '';
  let phase: TextContent['phase'];
  const flushText = () => {
    const wire = fromPhase(phase);
    if (text) items.push({ role: 'assistant', content: text, ...(wire ? { phase: wire } : {}) });
    text = '';
  };
  for (const c of m.contents) {
    if (m.role === 'assistant' && (c.type === 'text' || c.type === 'refusal')) {
      const next = c.type === 'text' ? c.phase : undefined;
      if (next !== phase) flushText();
      phase = next;
      text += c.type === 'text' ? c.text : c.refusal;
      continue;
    }
    if (c.type === 'hosted-tool' && m.role === 'assistant') {
      flushText();
      items.push(c.item as unknown as ResponseInputItem);
    } else if (c.type === 'function-call') {
      flushText();
      items.push({ type: 'function_call', call_id: c.callId, name: c.name, arguments: c.arguments });
    } else if (c.type === 'function-result') {
      flushText();
      items.push({ type: 'function_call_output', call_id: c.callId, output: resultText(c) });
    } else if (c.type === 'reasoning' && c.id !== undefined && m.role === 'assistant') {
      flushText();
      items.push({
        type: 'reasoning',
        id: c.id,
        summary: c.text ? [{ type: 'summary_text', text: c.text }] : [],
        ...(c.encrypted !== undefined ? { encrypted_content: c.encrypted } : {}),
      });
    }
  }
  flushText();
  return items;
}

function toInputContent(c: Content): ResponseInputContent[] {
  switch (c.type) {
    case 'text':
      return [{ type: 'input_text', text: c.text }];
    case 'data':
      if (c.mediaType.startsWith('image/')) return [{ type: 'input_image', image_url: dataUrl(c), detail: 'auto' }];
      if (c.data !== undefined) return [{ type: 'input_file', file_data: dataUrl(c), filename: c.name ?? 'file' }];
      return [{ type: 'input_file', file_url: c.uri! }];
    default:
      return [];
  }
}

/** Tools, tool choice, format, sampling and conversation options as request fields. */
export function toResponseParams(options: ChatOptions): Partial<ResponseCreateParamsBase> {
  const params: Partial<ResponseCreateParamsBase> = {};
  if (options.instructions) params.instructions = options.instructions;
  if (options.tools?.length) {
    params.tools = options.tools.map(
      (t): FunctionTool => ({
        type: 'function',
        name: t.name,
        parameters: t.parameters,
        strict: false,
        ...(t.description ? { description: t.description } : {}),
      }),
    );
  }
  const choice = options.toolChoice;
  if (choice !== undefined) params.tool_choice = typeof choice === 'string' ? choice : { type: 'function', name: choice.name };
  if (options.temperature !== undefined) params.temperature = options.temperature;
  if (options.maxOutputTokens !== undefined) params.max_output_tokens = options.maxOutputTokens;
  if (options.store !== undefined) params.store = options.store;
  // Without stored responses, reasoning must travel back encrypted.
  if (options.store === false) params.include = ['reasoning.encrypted_content'];
  const format = options.responseFormat;
  if (format?.type === 'json') {
    params.text = {
      format: format.schema
        ? {
            type: 'json_schema',
            name: format.name ?? 'response',
            schema: format.schema,
            strict: true,
            ...(format.description ? { description: format.description } : {}),
          }
        : { type: 'json_object' },
    };
  }
  if (options.conversationId !== undefined) {
    if (isConversationObjectId(options.conversationId)) params.conversation = options.conversationId;
    else params.previous_response_id = options.conversationId;
  }
  return params;
}

/** Token usage in core form, from a response or a compacted response. */
export function toUsage(usage: Response['usage']): Usage | undefined {
  if (!usage) return undefined;
  const out: Usage = { inputTokens: usage.input_tokens, outputTokens: usage.output_tokens, totalTokens: usage.total_tokens };
  const cached = usage.input_tokens_details?.cached_tokens;
  const reasoning = usage.output_tokens_details?.reasoning_tokens;
  if (typeof cached === 'number') out.cachedInputTokens = cached;
  if (typeof reasoning === 'number') out.reasoningTokens = reasoning;
  return out;
}

function toFinishReason(response: Response): FinishReason {
  if (response.status === 'incomplete') {
    return response.incomplete_details?.reason === 'content_filter'
      ? 'content-filter'
      : response.incomplete_details?.reason === 'max_output_tokens'
        ? 'length'
        : 'other';
  }
  return response.output.some((item) => item.type === 'function_call') ? 'tool-calls' : 'stop';
}

/** The conversation id to continue from: the conversation, else the response when it was stored. */
function continuation(response: Response, requested: ChatOptions): string | undefined {
  if (response.conversation?.id) return response.conversation.id;
  if (requested.conversationId !== undefined && isConversationObjectId(requested.conversationId)) return requested.conversationId;
  return requested.store === false ? undefined : response.id;
}

/**
 * A response as one assistant message, its output items in order: texts (with their citations and
 * phase), refusals, reasoning, function calls, and every other item (the tools the service ran
 * itself) as a `hosted-tool` content holding the item.
 * @throws what `serviceError` makes of `response.error` when the response has `status: 'failed'`.
 */
export function fromResponse(response: Response, requested: ChatOptions): ChatResponse {
  if (response.status === 'failed') throw failure(response.error?.code, response.error?.message, response.id);
  const contents: Content[] = [];
  for (const item of response.output) {
    if (item.type === 'message') {
      for (const part of item.content) {
        contents.push(
          part.type === 'output_text' ? textContent(part.text, part.annotations, item.phase) : { type: 'refusal', refusal: part.refusal },
        );
      }
    } else if (item.type === 'function_call') {
      contents.push({ type: 'function-call', callId: item.call_id, name: item.name, arguments: item.arguments });
    } else if (item.type === 'reasoning') {
      contents.push({
        type: 'reasoning',
        id: item.id,
        text: item.summary.map((s) => s.text).join('\n'),
        ...(item.encrypted_content ? { encrypted: item.encrypted_content } : {}),
      });
    } else {
      contents.push({ type: 'hosted-tool', item: item as unknown as JsonObject });
    }
  }
  const result: ChatResponse = {
    messages: [
      {
        id: generateId(),
        role: 'assistant',
        contents,
        createdAt: new Date(response.created_at * 1000).toISOString(),
        metadata: { [SERVICE_MESSAGE_ID]: response.id },
      },
    ],
    finishReason: toFinishReason(response),
    raw: response,
  };
  const usage = toUsage(response.usage);
  if (usage) result.usage = usage;
  const conversationId = continuation(response, requested);
  if (conversationId !== undefined) result.conversationId = conversationId;
  return result;
}

/**
 * Turns stream events into updates; `done` tells whether the service finished the response,
 * `responseId` which response the stream is about (once `response.created` arrived).
 * @throws what `serviceError` makes of an `error` or `response.failed` event.
 */
export function createEventMapper(requested: ChatOptions): {
  map: (event: ResponseStreamEvent) => ChatResponseUpdate | undefined;
  done: () => boolean;
  responseId: () => string | undefined;
} {
  // The message's own id, fresh; what the service calls it (the response id) rides in its metadata.
  const messageId = generateId();
  let responseId: string | undefined;
  let announced = false;
  let finished = false;
  const callIds = new Map<string, string>();
  const phases = new Map<string, string | null | undefined>();
  // Streamed texts of one phase join into one content (see core's assembleResponse): where each
  // part starts in that joined text, so its citations' indices still point at their span.
  let run: { phase: TextContent['phase']; length: number } | undefined;
  const partStart = new Map<string, number>();
  const update = (contents: Content[]): ChatResponseUpdate => {
    if (contents.some((c) => c.type !== 'text')) run = undefined;
    const update: ChatResponseUpdate = { messageId, role: 'assistant', contents };
    if (!announced && responseId !== undefined) {
      announced = true;
      update.metadata = { [SERVICE_MESSAGE_ID]: responseId };
    }
    return update;
  };
  const text = (event: { item_id: string; content_index: number }, delta: string, annotations?: unknown[]) => {
    const content = textContent(delta, annotations, phases.get(event.item_id));
    const current = run && run.phase === content.phase ? run : { phase: content.phase, length: 0 };
    run = current;
    const part = `${event.item_id}:${event.content_index}`;
    const offset = partStart.get(part) ?? current.length;
    partStart.set(part, offset);
    current.length += delta.length;
    if (offset) {
      for (const a of content.annotations ?? []) {
        if (a.startIndex !== undefined) a.startIndex += offset;
        if (a.endIndex !== undefined) a.endIndex += offset;
        if (a.type === 'file-citation' && a.index !== undefined) a.index += offset;
      }
    }
    return update([content]);
  };
  const map = (event: ResponseStreamEvent): ChatResponseUpdate | undefined => {
    switch (event.type) {
      case 'response.created':
        responseId = event.response.id;
        return undefined;
      case 'response.output_text.delta':
        return text(event, event.delta);
      case 'response.output_text.annotation.added':
        return toAnnotation(event.annotation) ? text(event, '', [event.annotation]) : undefined;
      case 'response.refusal.delta':
        return update([{ type: 'refusal', refusal: event.delta }]);
      case 'response.reasoning_summary_text.delta':
        return update([{ type: 'reasoning', id: event.item_id, text: event.delta }]);
      case 'response.output_item.added':
        if (event.item.type === 'message') phases.set(event.item.id, event.item.phase);
        if (event.item.type !== 'function_call') return undefined;
        if (event.item.id) callIds.set(event.item.id, event.item.call_id);
        return update([
          { type: 'function-call', callId: event.item.call_id, name: event.item.name, arguments: event.item.arguments ?? '' },
        ]);
      case 'response.function_call_arguments.delta': {
        const callId = callIds.get(event.item_id);
        return callId ? update([{ type: 'function-call', callId, name: '', arguments: event.delta }]) : undefined;
      }
      case 'response.output_item.done':
        if (event.item.type === 'reasoning') {
          // Every reasoning item, summarized or not, so it can go back in its place.
          const encrypted = event.item.encrypted_content ? { encrypted: event.item.encrypted_content } : {};
          return update([{ type: 'reasoning', id: event.item.id, text: '', ...encrypted }]);
        }
        if (event.item.type === 'message' || event.item.type === 'function_call') return undefined;
        return update([{ type: 'hosted-tool', item: event.item as unknown as JsonObject }]);
      case 'response.completed':
      case 'response.incomplete': {
        finished = true;
        responseId ??= event.response.id;
        const done = fromResponse(event.response, requested);
        const last = update([]);
        last.finishReason = done.finishReason!;
        if (done.usage) last.usage = done.usage;
        if (done.conversationId !== undefined) last.conversationId = done.conversationId;
        last.raw = event.response;
        return last;
      }
      case 'response.failed':
        throw failure(event.response.error?.code, event.response.error?.message, event.response.id);
      case 'error':
        throw failure(event.code ?? undefined, event.message, responseId);
      default:
        return undefined;
    }
  };
  return { map, done: () => finished, responseId: () => responseId };
}

/** The error for a response the service reported as failed (in a stream or as a failed response), mapped as its HTTP form would be. */
function failure(code: string | null | undefined, message: string | undefined, responseId: string | undefined) {
  return serviceError({ code, message: message ?? '' }, { failed: responseId ? `response ${responseId}` : 'response' });
}
