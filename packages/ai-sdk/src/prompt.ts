import type {
  JSONValue,
  LanguageModelV2Message,
  LanguageModelV2ToolResultOutput,
  LanguageModelV3Message,
  LanguageModelV4Message,
  SharedV2ProviderOptions,
} from '@ai-sdk/provider';
import { generateId, type Content, type FunctionResultContent, type JsonValue, Message } from '@ctx/core';
import { isPlainObject } from '@ctx/core/backend';
import { fileData, type ProviderMetadata } from './language-model.js';

/** A prompt message, in any specification version. */
export type PromptMessage = LanguageModelV2Message | LanguageModelV3Message | LanguageModelV4Message;

type AssistantPart = Extract<LanguageModelV2Message, { role: 'assistant' }>['content'][number];
type UserPart = Extract<LanguageModelV2Message, { role: 'user' }>['content'][number];
type ToolResultPart = Extract<AssistantPart, { type: 'tool-result' }>;

/**
 * Reasoning the AI SDK returned with provider metadata (Anthropic's signature, OpenAI's item id and
 * encrypted content) keeps that metadata in `ReasoningContent.encrypted` behind this prefix, so it
 * is sent back as the part's `providerOptions` when the conversation continues.
 */
const REASONING_METADATA = 'ai-sdk:';

/** The `encrypted` value that carries a reasoning part's provider metadata. */
export function encodeReasoningMetadata(metadata: ProviderMetadata): string {
  return REASONING_METADATA + JSON.stringify(metadata);
}

function decodeReasoningMetadata(encrypted: string | undefined): SharedV2ProviderOptions | undefined {
  if (!encrypted?.startsWith(REASONING_METADATA)) return undefined;
  try {
    const value: unknown = JSON.parse(encrypted.slice(REASONING_METADATA.length));
    return isPlainObject(value) ? (value as SharedV2ProviderOptions) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * ctx messages (after `instructions`) as an AI SDK prompt. A function result inside an assistant
 * message is a tool the provider ran itself (`providerExecuted`); results in user and tool messages
 * go into tool messages. A function call the conversation never answered (the model asked for an
 * app's tool and a ctx tool at once, and the app answered only its own) gets an error result, so
 * the prompt is one the service accepts.
 */
export function toPrompt(messages: readonly Message[], instructions: string | undefined): PromptMessage[] {
  const prompt: LanguageModelV2Message[] = [];
  if (instructions) prompt.push({ role: 'system', content: instructions });
  const names = new Map<string, string>();
  let open: Map<string, string> | undefined;
  const closeOpenCalls = () => {
    if (!open?.size) return (open = undefined);
    const last = prompt[prompt.length - 1];
    const results = [...open].map(([callId, name]) => notRun(callId, name));
    if (last?.role === 'tool') last.content.push(...results);
    else prompt.push({ role: 'tool', content: results });
    open = undefined;
  };
  for (const m of messages) {
    // Results answer the calls before them; calls still open when another kind of message follows get an error result.
    if (m.role !== 'assistant') addResults(prompt, m.contents, names, open);
    if (m.role !== 'tool') closeOpenCalls();
    switch (m.role) {
      case 'system':
        prompt.push({ role: 'system', content: textOf(m.contents) });
        break;
      case 'user': {
        const content = m.contents.flatMap(toUserPart);
        if (content.length) prompt.push({ role: 'user', content });
        break;
      }
      case 'assistant': {
        const executed = new Set(m.contents.flatMap((c) => (c.type === 'function-result' ? [c.callId] : [])));
        const content: AssistantPart[] = [];
        for (const c of m.contents) {
          const part = toAssistantPart(c, executed);
          if (part) content.push(part);
          if (c.type === 'function-call') {
            names.set(c.callId, c.name);
            if (!executed.has(c.callId)) (open ??= new Map()).set(c.callId, c.name);
          }
        }
        prompt.push({ role: 'assistant', content });
        break;
      }
      case 'tool':
        break;
    }
  }
  closeOpenCalls();
  return prompt;
}

function textOf(contents: readonly Content[]): string {
  let text = '';
  for (const c of contents) if (c.type === 'text') text += c.text;
  return text;
}

function toUserPart(c: Content): UserPart[] {
  if (c.type === 'text') return [{ type: 'text', text: c.text }];
  if (c.type === 'data') return [toFilePart(c)];
  return [];
}

function toFilePart(c: Extract<Content, { type: 'data' }>): Extract<UserPart, { type: 'file' }> {
  const data = c.data ?? new URL(c.uri ?? '');
  return { type: 'file', data, mediaType: c.mediaType, ...(c.name ? { filename: c.name } : {}) };
}

function toAssistantPart(c: Content, executed: ReadonlySet<string>): AssistantPart | undefined {
  switch (c.type) {
    case 'text':
      return { type: 'text', text: c.text };
    case 'reasoning': {
      const providerOptions = decodeReasoningMetadata(c.encrypted);
      return { type: 'reasoning', text: c.text, ...(providerOptions ? { providerOptions } : {}) };
    }
    case 'data':
      return toFilePart(c);
    case 'function-call':
      return {
        type: 'tool-call',
        toolCallId: c.callId,
        toolName: c.name,
        input: parseArguments(c.arguments),
        ...(executed.has(c.callId) ? { providerExecuted: true } : {}),
      };
    case 'function-result':
      return toResultPart(c, c.name ?? '');
    default:
      return undefined;
  }
}

/** The model's JSON arguments as the object the AI SDK expects; text that is not JSON stays text. */
function parseArguments(text: string): unknown {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function addResults(
  prompt: LanguageModelV2Message[],
  contents: readonly Content[],
  names: Map<string, string>,
  open: Map<string, string> | undefined,
) {
  const results = contents.filter((c): c is FunctionResultContent => c.type === 'function-result');
  if (!results.length) return;
  const parts = results.map((r) => {
    open?.delete(r.callId);
    return toResultPart(r, r.name ?? names.get(r.callId) ?? '');
  });
  const last = prompt[prompt.length - 1];
  if (last?.role === 'tool') last.content.push(...parts);
  else prompt.push({ role: 'tool', content: parts });
}

function toResultPart(r: FunctionResultContent, toolName: string): ToolResultPart {
  const output: LanguageModelV2ToolResultOutput =
    typeof r.result === 'string'
      ? { type: r.isError ? 'error-text' : 'text', value: r.result }
      : { type: r.isError ? 'error-json' : 'json', value: r.result as JSONValue };
  return { type: 'tool-result', toolCallId: r.callId, toolName, output };
}

function notRun(callId: string, toolName: string): ToolResultPart {
  return {
    type: 'tool-result',
    toolCallId: callId,
    toolName,
    output: { type: 'error-text', value: 'Not run: no result was given for this call. Call the tool again if it is still needed.' },
  };
}

/**
 * An AI SDK prompt message (not a system message) as a ctx message with a fresh id. Tool approval
 * responses have no ctx form and are left out; a message left without contents is dropped.
 */
export function fromPromptMessage(message: PromptMessage): Message | undefined {
  if (message.role === 'system') return { id: generateId(), role: 'system', contents: [{ type: 'text', text: message.content }] };
  const contents: Content[] = [];
  for (const part of message.content) {
    switch (part.type) {
      case 'text':
        contents.push({ type: 'text', text: part.text });
        break;
      case 'reasoning': {
        const metadata = part.providerOptions;
        contents.push({ type: 'reasoning', text: part.text, ...(metadata ? { encrypted: encodeReasoningMetadata(metadata) } : {}) });
        break;
      }
      case 'file':
        contents.push(fromFilePart(part));
        break;
      case 'tool-call':
        contents.push({
          type: 'function-call',
          callId: part.toolCallId,
          name: part.toolName,
          arguments: typeof part.input === 'string' ? part.input : JSON.stringify(part.input ?? {}),
        });
        break;
      case 'tool-result':
        contents.push(fromResultPart(part));
        break;
      default:
        break;
    }
  }
  if (!contents.length) return undefined;
  if (message.role === 'tool') return Message.tool(contents as FunctionResultContent[]);
  return message.role === 'user' ? Message.user(contents) : Message.assistant(contents);
}

function fromFilePart(part: { data: unknown; mediaType: string; filename?: string }): Content {
  const { mediaType } = part;
  const data = fileData(part.data);
  const name = part.filename ? { name: part.filename } : {};
  if (data instanceof URL) return { type: 'data', mediaType, uri: data.href, ...name };
  if (typeof data === 'string') {
    return /^(https?|data):/i.test(data) ? { type: 'data', mediaType, uri: data, ...name } : { type: 'data', mediaType, data, ...name };
  }
  return { type: 'data', mediaType, data: toBase64(data), ...name };
}

/** Bytes as base64, without Node's Buffer (the AI SDK also runs in browsers and edge runtimes). */
export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

function fromResultPart(part: { toolCallId: string; toolName: string; output: { type: string; value?: unknown } }): FunctionResultContent {
  const { output } = part;
  const isError = output.type === 'error-text' || output.type === 'error-json' || output.type === 'execution-denied';
  const result: JsonValue =
    output.type === 'execution-denied'
      ? { denied: true, ...('reason' in output && typeof output.reason === 'string' ? { reason: output.reason } : {}) }
      : output.type === 'content'
        ? (JSON.parse(JSON.stringify(output.value ?? [])) as JsonValue)
        : ((output.value ?? null) as JsonValue);
  return { type: 'function-result', callId: part.toolCallId, name: part.toolName, result, ...(isError ? { isError: true } : {}) };
}
