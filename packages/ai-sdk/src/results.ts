import {
  generateId,
  type ChatResponse,
  type ChatResponseUpdate,
  type Content,
  type FinishReason,
  type JsonValue,
  Message,
  type Usage,
} from '@ctx/core';
import {
  type ContentPart,
  fileData,
  type GenerateResult,
  type ModelFinishReason,
  type ModelUsage,
  type ProviderMetadata,
  type StreamPart,
} from './language-model.js';
import { encodeReasoningMetadata, toBase64 } from './prompt.js';

/**
 * The metadata key under which the adapter keeps what the service called a message (the AI SDK's
 * `response.id`), the same key `@ctx/openai` uses: `message.metadata.serviceMessageId`.
 */
export const SERVICE_MESSAGE_ID = 'serviceMessageId';

/** A model's usage as ctx usage: input, output and total tokens, plus cached input and reasoning tokens when reported. */
export function toUsage(usage: ModelUsage | undefined): Usage | undefined {
  if (!usage) return undefined;
  const out: Usage = {};
  const set = (field: keyof Usage, value: number | undefined) => {
    if (typeof value === 'number') out[field] = value;
  };
  if (typeof usage.inputTokens === 'object' || typeof usage.outputTokens === 'object') {
    // v3: { inputTokens: { total, noCache, cacheRead, cacheWrite }, outputTokens: { total, text, reasoning } }
    const { inputTokens: input, outputTokens: output } = usage as Extract<ModelUsage, { inputTokens: object }>;
    set('inputTokens', input?.total);
    set('outputTokens', output?.total);
    if (input?.total !== undefined || output?.total !== undefined) out.totalTokens = (input?.total ?? 0) + (output?.total ?? 0);
    set('cachedInputTokens', input?.cacheRead);
    set('reasoningTokens', output?.reasoning);
  } else {
    const flat = usage as Extract<ModelUsage, { totalTokens: unknown }>;
    set('inputTokens', flat.inputTokens);
    set('outputTokens', flat.outputTokens);
    set('totalTokens', flat.totalTokens);
    set('cachedInputTokens', flat.cachedInputTokens);
    set('reasoningTokens', flat.reasoningTokens);
  }
  return Object.keys(out).length ? out : undefined;
}

/** A model's finish reason as ctx's (`unknown` becomes `other`). */
export function toFinishReason(reason: ModelFinishReason | undefined): FinishReason | undefined {
  const unified = typeof reason === 'object' ? reason.unified : reason;
  if (unified === undefined) return undefined;
  // v4's `interrupted` (the model stopped before it finished) has no ctx reason of its own.
  return unified === 'unknown' || unified === 'interrupted' ? 'other' : unified;
}

/**
 * One generated part as ctx content: text, reasoning (its provider metadata kept in `encrypted`),
 * files, function calls, and the results of tools the provider ran itself. Sources and tool
 * approval requests have no ctx form.
 */
export function toContent(part: ContentPart): Content | undefined {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text };
    case 'reasoning':
      return { type: 'reasoning', text: part.text, ...reasoningMetadata(part.providerMetadata) };
    case 'file': {
      const data = fileData(part.data);
      return data instanceof URL
        ? { type: 'data', mediaType: part.mediaType, uri: data.href }
        : { type: 'data', mediaType: part.mediaType, data: typeof data === 'string' ? data : toBase64(data) };
    }
    case 'tool-call':
      return { type: 'function-call', callId: part.toolCallId, name: part.toolName, arguments: part.input };
    case 'tool-result':
      return {
        type: 'function-result',
        callId: part.toolCallId,
        name: part.toolName,
        result: toJson(part.result),
        ...(part.isError ? { isError: true } : {}),
      };
    default:
      return undefined;
  }
}

function reasoningMetadata(metadata: ProviderMetadata | undefined): { encrypted?: string } {
  return metadata && Object.keys(metadata).length ? { encrypted: encodeReasoningMetadata(metadata) } : {};
}

function toJson(value: unknown): JsonValue {
  if (value === undefined) return null;
  try {
    return JSON.parse(JSON.stringify(value)) as JsonValue;
  } catch {
    return String(value);
  }
}

/** A generated answer as a ctx response: one assistant message with its contents, usage and finish reason. */
export function toChatResponse(result: GenerateResult): ChatResponse {
  const contents: Content[] = [];
  for (const part of result.content) {
    const content = toContent(part);
    if (content) contents.push(content);
  }
  // A fresh id of ctx's own (services may answer several calls with one id); the service's id rides in metadata.
  const id = result.response?.id;
  const message = Message.assistant(contents, id ? { metadata: { [SERVICE_MESSAGE_ID]: id } } : undefined);
  const response: ChatResponse = { messages: [message], raw: result };
  const usage = toUsage(result.usage);
  if (usage) response.usage = usage;
  const finishReason = toFinishReason(result.finishReason);
  if (finishReason) response.finishReason = finishReason;
  return response;
}

/**
 * Turns a model's stream parts into ctx updates, all of one message. Returns `undefined` for parts
 * that carry nothing for ctx (starts and ends of blocks, tool input pieces: the whole call follows as
 * one `tool-call` part, raw chunks). An `error` part throws its error.
 */
export function createStreamMapper(): (part: StreamPart) => ChatResponseUpdate | undefined {
  // The message's own id, fresh; the service's id (`response-metadata`) rides in its metadata.
  const messageId = generateId();
  let serviceId: string | undefined;
  let announced = false;
  const reasoning = new Map<string, ProviderMetadata>();
  const update = (contents: Content[]): ChatResponseUpdate => {
    const out: ChatResponseUpdate = { messageId, role: 'assistant', contents };
    if (!announced && serviceId !== undefined) {
      announced = true;
      out.metadata = { [SERVICE_MESSAGE_ID]: serviceId };
    }
    return out;
  };
  const reasoningPart = (id: string, text: string, metadata: ProviderMetadata | undefined) => {
    let merged = reasoning.get(id);
    if (metadata) {
      merged = { ...merged };
      for (const [provider, values] of Object.entries(metadata)) merged[provider] = { ...merged[provider], ...values };
      reasoning.set(id, merged);
    }
    if (!text && !metadata) return undefined;
    return update([{ type: 'reasoning', text, id, ...reasoningMetadata(merged) }]);
  };
  return (part) => {
    switch (part.type) {
      case 'response-metadata':
        if (part.id) serviceId ??= part.id;
        return undefined;
      case 'text-delta':
        return part.delta ? update([{ type: 'text', text: part.delta }]) : undefined;
      case 'reasoning-start':
      case 'reasoning-end':
        return reasoningPart(part.id, '', part.providerMetadata);
      case 'reasoning-delta':
        return reasoningPart(part.id, part.delta, part.providerMetadata);
      case 'tool-call':
      case 'tool-result':
      case 'file': {
        const content = toContent(part);
        return content ? update([content]) : undefined;
      }
      case 'finish': {
        const done = update([]);
        const usage = toUsage(part.usage);
        if (usage) done.usage = usage;
        const finishReason = toFinishReason(part.finishReason);
        if (finishReason) done.finishReason = finishReason;
        return done;
      }
      case 'error':
        throw part.error;
      default:
        return undefined;
    }
  };
}
