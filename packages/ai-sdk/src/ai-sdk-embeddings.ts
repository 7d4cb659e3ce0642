import type { EmbeddingModelV4 } from '@ai-sdk/provider';
import { BackendUnavailableError, ConfigurationError, type EmbeddingGenerator } from '@ctx/core';
import { abortable } from '@ctx/core/backend';
import { toCtxError } from './errors.js';

/**
 * An AI SDK embedding model: specification `v2` (`ai` 5 and its providers), `v3` (`ai` 6) or `v4`
 * (`ai` 7), e.g. `openai.textEmbeddingModel('text-embedding-3-small')` of `@ai-sdk/openai` 2, 3 or 4.
 * Declared by its shape, so a model of any of them type-checks whichever `@ai-sdk/provider` is installed.
 */
export interface AiSdkEmbeddingModel {
  /** `v2`, `v3` or `v4`. */
  readonly specificationVersion: 'v2' | 'v3' | 'v4';
  /** The provider, e.g. `openai.embedding`. */
  readonly provider: string;
  /** The model, e.g. `text-embedding-3-small`. */
  readonly modelId: string;
  /** The most texts one call takes, when the model limits it (a number, or a promise of one). */
  readonly maxEmbeddingsPerCall: PromiseLike<number | undefined> | number | undefined;
  /** One call; the options and the result are those of the model's specification version. */
  doEmbed(options: never): PromiseLike<unknown>;
}

/** Options of `aiSdkEmbeddings`. */
export interface AiSdkEmbeddingsOptions {
  /** The vector length, when known (e.g. 1536 for `text-embedding-3-small`); a `VectorIndex` may use it. */
  dimensions?: number;
  /** Texts per model call. Default: the model's `maxEmbeddingsPerCall`, else all in one call. */
  maxEmbeddingsPerCall?: number;
  /** Passed to every call as `providerOptions` (e.g. `{ openai: { dimensions: 512 } }`). */
  providerOptions?: Record<string, Record<string, unknown>>;
  /** Extra HTTP headers of every call. */
  headers?: Record<string, string>;
}

/**
 * An `EmbeddingGenerator` from any AI SDK embedding model (`openai.textEmbeddingModel(...)`,
 * `google.textEmbeddingModel(...)`, ...), for `SemanticRecallProvider`, `InMemoryRetriever` and
 * tool selection. Texts are sent in batches of the model's `maxEmbeddingsPerCall`, one call at a
 * time, each with the caller's signal; a failing call is a ctx error (`toCtxError`), and an abort
 * rejects with the signal's reason at once.
 * @throws ConfigurationError for a model that is not an AI SDK embedding model, or bad options.
 */
export function aiSdkEmbeddings(model: AiSdkEmbeddingModel, options: AiSdkEmbeddingsOptions = {}): EmbeddingGenerator {
  if (typeof model?.doEmbed !== 'function' || !['v2', 'v3', 'v4'].includes(model.specificationVersion))
    throw new ConfigurationError(
      `aiSdkEmbeddings: model must be an AI SDK embedding model (specification v2, v3 or v4, with doEmbed), got specification ${JSON.stringify(model?.specificationVersion)}.`,
    );
  for (const key of ['dimensions', 'maxEmbeddingsPerCall'] as const) {
    const value = options[key];
    if (value !== undefined && !(Number.isInteger(value) && value > 0))
      throw new ConfigurationError(`aiSdkEmbeddings: ${key} must be a positive integer, got ${String(value)}.`);
  }
  const name = `${model.provider} ${model.modelId}`;
  const batchSize = async (): Promise<number> => {
    if (options.maxEmbeddingsPerCall !== undefined) return options.maxEmbeddingsPerCall;
    const limit = await model.maxEmbeddingsPerCall;
    return limit !== undefined && Number.isFinite(limit) && limit > 0 ? limit : Number.POSITIVE_INFINITY;
  };
  return {
    specificationVersion: 'v1',
    ...(options.dimensions === undefined ? {} : { dimensions: options.dimensions }),
    async embed(values, { signal } = {}) {
      signal?.throwIfAborted();
      const size = await batchSize();
      const out: number[][] = [];
      for (let start = 0; start < values.length; start += size) {
        const batch = values.slice(start, start + size);
        let embeddings: number[][];
        try {
          // The call options ctx sends are the same in v2, v3 and v4.
          const call = (model as unknown as EmbeddingModelV4).doEmbed({
            values: batch,
            ...(signal ? { abortSignal: signal } : {}),
            ...(options.providerOptions ? { providerOptions: options.providerOptions as never } : {}),
            ...(options.headers ? { headers: options.headers } : {}),
          });
          ({ embeddings } = await abortable(Promise.resolve(call), signal));
        } catch (error) {
          throw toCtxError(error, name, signal);
        }
        if (!Array.isArray(embeddings) || embeddings.length !== batch.length)
          throw new BackendUnavailableError(
            model.provider,
            `${name} returned ${Array.isArray(embeddings) ? embeddings.length : 'no'} embeddings for ${batch.length} texts.`,
          );
        out.push(...embeddings);
      }
      return out;
    },
  };
}
