// How ctx's names and messages map onto the OpenTelemetry GenAI semantic conventions.
import type { Content, FinishReason, JsonValue, Message } from '@ctx/core';

/** ctx client providers (and AI SDK provider prefixes) whose conventions name differs. */
const PROVIDER_NAMES: Readonly<Record<string, string>> = {
  'azure-openai': 'azure.ai.openai',
  azure: 'azure.ai.openai',
  'amazon-bedrock': 'aws.bedrock',
  bedrock: 'aws.bedrock',
  'google.vertex': 'gcp.vertex_ai',
  google: 'gcp.gemini',
  vertex: 'gcp.vertex_ai',
  mistral: 'mistral_ai',
  xai: 'x_ai',
};

/**
 * The `gen_ai.provider.name` for a `ChatClient.provider`: the conventions' well-known value where
 * one applies (`azure-openai` is `azure.ai.openai`, an AI SDK `anthropic.messages` is `anthropic`,
 * `google.vertex.chat` is `gcp.vertex_ai`), else the provider string unchanged.
 */
export function genAiProviderName(provider: string): string {
  const [first = provider, second] = provider.split('.');
  return PROVIDER_NAMES[`${first}.${second}`] ?? PROVIDER_NAMES[first] ?? first;
}

/** The conventions' `finish_reason` for a ctx `FinishReason`. */
export function genAiFinishReason(reason: FinishReason): string {
  switch (reason) {
    case 'tool-calls':
      return 'tool_call';
    case 'content-filter':
      return 'content_filter';
    default:
      return reason;
  }
}

/** A low-cardinality `error.type`: the error's class name (`ToolExecutionError`, `AbortError`), else `_OTHER`. */
export function errorType(error: unknown): string {
  const name = (error as { name?: unknown } | null | undefined)?.name;
  return typeof name === 'string' && name !== '' && name !== 'Error' ? name : '_OTHER';
}

/** A short description of an error for the span status. */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return typeof error === 'string' ? error : String(error);
}

/** A message part as the conventions' input and output message schemas define it. */
type GenAiPart = { type: string; [key: string]: JsonValue | undefined };

function toPart(content: Content): GenAiPart {
  switch (content.type) {
    case 'text':
      return { type: 'text', content: content.text };
    case 'reasoning':
      return { type: 'reasoning', content: content.text };
    case 'refusal':
      return { type: 'refusal', content: content.refusal };
    case 'function-call':
      return { type: 'tool_call', id: content.callId, name: content.name, arguments: parseJson(content.arguments) };
    case 'function-result':
      return { type: 'tool_call_response', id: content.callId, response: content.result };
    case 'data': {
      const modality = content.mediaType.split('/')[0] ?? '';
      const common = {
        mime_type: content.mediaType,
        modality: ['image', 'video', 'audio'].includes(modality) ? modality : content.mediaType,
      };
      return content.uri !== undefined ? { type: 'uri', uri: content.uri, ...common } : { type: 'blob', content: content.data, ...common };
    }
    case 'hosted-tool':
      return { type: 'server_tool_call', name: typeof content.item.type === 'string' ? content.item.type : 'hosted-tool' };
    default:
      return { type: (content as { type: string }).type };
  }
}

function parseJson(text: string): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    return text;
  }
}

/**
 * Messages as the JSON text of `gen_ai.input.messages` / `gen_ai.output.messages`: `{ role, parts }`
 * each, plus `finish_reason` on output messages when it is known.
 */
export function genAiMessages(messages: readonly Message[], finishReason?: FinishReason): string {
  return JSON.stringify(
    messages.map((m) => ({
      role: m.role,
      parts: m.contents.map(toPart),
      ...(finishReason !== undefined ? { finish_reason: genAiFinishReason(finishReason) } : {}),
    })),
  );
}
