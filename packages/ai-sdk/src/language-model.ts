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
} from '@ai-sdk/provider';

/**
 * An AI SDK language model: specification `v2` (what `ai` 5 and its providers implement) or `v3`
 * (`ai` 6 and its providers). Both run on Node 20.
 */
export type AiSdkLanguageModel = LanguageModelV2 | LanguageModelV3;

/** The options of one model call, in either specification version. */
export type CallOptions = LanguageModelV2CallOptions | LanguageModelV3CallOptions;

/** What `doGenerate` resolves to, in either version. */
export type GenerateResult = Awaited<ReturnType<LanguageModelV2['doGenerate']>> | LanguageModelV3GenerateResult;

/** What `doStream` resolves to, in either version. */
export type StreamResult = Awaited<ReturnType<LanguageModelV2['doStream']>> | LanguageModelV3StreamResult;

/** One part of a model's stream, in either version. */
export type StreamPart = LanguageModelV2StreamPart | LanguageModelV3StreamPart;

/** One part of a generated answer, in either version. */
export type ContentPart = LanguageModelV2Content | LanguageModelV3Content;

/** Token usage as a model reports it: flat in v2, split into input and output details in v3. */
export type ModelUsage = LanguageModelV2Usage | LanguageModelV3Usage;

/** Why the model stopped: a string in v2, `{ unified, raw }` in v3. */
export type ModelFinishReason = LanguageModelV2FinishReason | LanguageModelV3FinishReason;

/**
 * Calls `doGenerate` of a model of either version. The options are built for both: the prompt
 * parts and tools ctx produces have the same shape in v2 and v3.
 */
export function doGenerate(model: AiSdkLanguageModel, options: CallOptions): PromiseLike<GenerateResult> {
  return (model as LanguageModelV3).doGenerate(options as LanguageModelV3CallOptions);
}

/** Calls `doStream` of a model of either version (see `doGenerate`). */
export function doStream(model: AiSdkLanguageModel, options: CallOptions): PromiseLike<StreamResult> {
  return (model as LanguageModelV3).doStream(options as LanguageModelV3CallOptions);
}

/** Provider metadata of a part or result (and provider options of a prompt part), in either version. */
export type ProviderMetadata = Record<string, Record<string, unknown>>;
