import type { EmbeddingModelV2, EmbeddingModelV3, EmbeddingModelV4 } from '@ai-sdk/provider';
import { BackendUnavailableError, ConfigurationError, type EmbeddingGenerator } from '@ctx/core';
import { abortable } from '@ctx/core/backend';
import { toCtxError } from './errors.js';

/** An AI SDK embedding model: specification `v2` (`ai` 5 and its providers), `v3` (`ai` 6) or `v4` (`ai` 7). */
export type AiSdkEmbeddingModel = EmbeddingModelV2<string> | EmbeddingModelV3 | EmbeddingModelV4;

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
          const call = model.doEmbed({
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
