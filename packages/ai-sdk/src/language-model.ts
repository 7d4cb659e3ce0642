import type {
  LanguageModelV2,
  LanguageModelV2CallOptions,
  LanguageModelV2Content,
  LanguageModelV2FinishReason,
  LanguageModelV2StreamPart,
  LanguageModelV2Usage,
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3FinishReason,
  LanguageModelV3GenerateResult,
  LanguageModelV3StreamPart,
  LanguageModelV3StreamResult,
  LanguageModelV3Usage,
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4FinishReason,
  LanguageModelV4GenerateResult,
  LanguageModelV4StreamPart,
  LanguageModelV4StreamResult,
} from '@ai-sdk/provider';
import { InvalidInputError } from '@ctx/core';

/** The specification versions of AI SDK language models ctx takes, and the `ai` major of each. */
export const SPECIFICATION_VERSIONS = { v2: 'ai 5', v3: 'ai 6', v4: 'ai 7' } as const;

/**
 * An AI SDK language model: specification `v2` (what `ai` 5 and its providers implement), `v3`
 * (`ai` 6) or `v4` (`ai` 7), e.g. `openai('gpt-4o-mini')` of `@ai-sdk/openai` 2, 3 or 4.
 * Declared by its shape, so a model of any of them type-checks whichever `@ai-sdk/provider` is installed.
 */
export interface AiSdkLanguageModel {
  /** `v2`, `v3` or `v4`. */
  readonly specificationVersion: keyof typeof SPECIFICATION_VERSIONS;
  /** The provider, e.g. `openai.chat`. */
  readonly provider: string;
  /** The model, e.g. `gpt-4o-mini`. */
  readonly modelId: string;
  /** One call; the options and the result are those of the model's specification version. */
  doGenerate(options: never): PromiseLike<unknown>;
  /** One streamed call (see `doGenerate`). */
  doStream(options: never): PromiseLike<unknown>;
}

/** A language model of one of the versions, with its own types. */
export type LanguageModel = LanguageModelV2 | LanguageModelV3 | LanguageModelV4;

/** The options of one model call, in any specification version. */
export type CallOptions = LanguageModelV2CallOptions | LanguageModelV3CallOptions | LanguageModelV4CallOptions;

/** What `doGenerate` resolves to, in any version. */
export type GenerateResult =
  | Awaited<ReturnType<LanguageModelV2['doGenerate']>>
  | LanguageModelV3GenerateResult
  | LanguageModelV4GenerateResult;

/** What `doStream` resolves to, in any version. */
export type StreamResult = Awaited<ReturnType<LanguageModelV2['doStream']>> | LanguageModelV3StreamResult | LanguageModelV4StreamResult;

/** One part of a model's stream, in any version. */
export type StreamPart = LanguageModelV2StreamPart | LanguageModelV3StreamPart | LanguageModelV4StreamPart;

/** One part of a generated answer, in any version. */
export type ContentPart = LanguageModelV2Content | LanguageModelV3Content | LanguageModelV4Content;

/** Token usage as a model reports it: flat in v2, split into input and output details in v3 and v4. */
export type ModelUsage = LanguageModelV2Usage | LanguageModelV3Usage;

/** Why the model stopped: a string in v2, `{ unified, raw }` in v3 and v4. */
export type ModelFinishReason = LanguageModelV2FinishReason | LanguageModelV3FinishReason | LanguageModelV4FinishReason;

/** Whether usage and finish reasons have the v3 shape (`{ unified, raw }`, nested token counts), as in v3 and v4. */
export const nestedResults = (model: AiSdkLanguageModel): boolean => model.specificationVersion !== 'v2';

/**
 * Calls `doGenerate` of a model of any version. ctx builds options in the v2 and v3 shape (the
 * prompt parts and tools it produces are the same in both); for a v4 model, file parts of the
 * prompt are sent in v4's shape (`data: { type: 'data' | 'url', ... }`).
 */
export function doGenerate(model: AiSdkLanguageModel, options: CallOptions): PromiseLike<GenerateResult> {
  return (model as LanguageModelV4).doGenerate(forVersion(model, options) as LanguageModelV4CallOptions);
}

/** Calls `doStream` of a model of any version (see `doGenerate`). */
export function doStream(model: AiSdkLanguageModel, options: CallOptions): PromiseLike<StreamResult> {
  return (model as LanguageModelV4).doStream(forVersion(model, options) as LanguageModelV4CallOptions);
}

/** The call options in the model's version: for v4, file data as `{ type: 'data', data }` or `{ type: 'url', url }`. */
function forVersion(model: AiSdkLanguageModel, options: CallOptions): CallOptions {
  if (model.specificationVersion !== 'v4') return options;
  let changed = false;
  const prompt = options.prompt.map((message) => {
    if (message.role === 'system') return message;
    const content = (message.content as { type: string; data?: unknown }[]).map((part) => {
      if (part.type !== 'file' || !isFileData(part.data)) return part;
      changed = true;
      return { ...part, data: part.data instanceof URL ? { type: 'url', url: part.data } : { type: 'data', data: part.data } };
    });
    return { ...message, content };
  });
  return changed ? ({ ...options, prompt } as CallOptions) : options;
}

/** File data in the v2 and v3 shape: bytes, base64 or a URL. */
const isFileData = (data: unknown): data is string | Uint8Array | URL =>
  typeof data === 'string' || data instanceof Uint8Array || data instanceof URL;

/**
 * File data of a prompt or result part of any version as bytes, base64 or a URL: v4's
 * `{ type: 'data' }` and `{ type: 'url' }` unwrapped, its `{ type: 'text' }` as UTF-8 bytes.
 * @throws InvalidInputError for a v4 file given by provider reference: ctx keeps files as bytes or URLs.
 */
export function fileData(data: unknown): string | Uint8Array | URL {
  if (isFileData(data)) return data;
  const v4 = (typeof data === 'object' && data !== null ? data : {}) as { type?: unknown; data?: unknown; url?: unknown; text?: unknown };
  if (v4.type === 'data' && (typeof v4.data === 'string' || v4.data instanceof Uint8Array)) return v4.data;
  if (v4.type === 'url' && (v4.url instanceof URL || typeof v4.url === 'string')) return v4.url instanceof URL ? v4.url : new URL(v4.url);
  if (v4.type === 'text' && typeof v4.text === 'string') return new TextEncoder().encode(v4.text);
  throw new InvalidInputError(
    `A file part's data of type ${JSON.stringify(v4.type ?? typeof data)} has no ctx form: ctx keeps files as bytes, base64 or a URL. Pass the file's bytes or URL instead of a provider reference.`,
  );
}

/** Provider metadata of a part or result (and provider options of a prompt part), in any version. */
export type ProviderMetadata = Record<string, Record<string, unknown>>;
