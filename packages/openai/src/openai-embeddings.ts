import type OpenAI from 'openai';
import type { EmbeddingGenerator } from '@ctx/core';
import { checkInteger, checkOptionNames, optionNames } from '@ctx/core/backend';
import { toCtxError } from './errors.js';
import { CONNECTION_OPTIONS, connect, type OpenAIConnectionOptions } from './openai-connection.js';

/** Options of `OpenAIEmbeddings`. */
export interface OpenAIEmbeddingsOptions extends OpenAIConnectionOptions {
  /** Default `text-embedding-3-small`. With Azure, the deployment name is used when this is absent. */
  model?: string;
  /** Shorter vectors (text-embedding-3 models). Default: the model's own length. */
  dimensions?: number;
  /** Inputs per request. Default 2048 (the service's limit). */
  batchSize?: number;
  /** Requests in flight at once. Default 4. */
  concurrency?: number;
}

const OPTION_NAMES = optionNames<OpenAIEmbeddingsOptions>()({
  ...CONNECTION_OPTIONS,
  model: true,
  dimensions: true,
  batchSize: true,
  concurrency: true,
});

/**
 * An `EmbeddingGenerator` on the OpenAI (or Azure OpenAI) embeddings endpoint, batching large inputs.
 * @throws ConfigurationError (constructor) for `dimensions`, `batchSize` or `concurrency` that are not positive integers,
 *   or for an option it does not know (named).
 */
export class OpenAIEmbeddings implements EmbeddingGenerator {
  readonly modelId: string;
  readonly dimensions: number | undefined;
  readonly client: OpenAI;
  readonly #secret: string | undefined;
  readonly #batchSize: number;
  readonly #concurrency: number;

  constructor(options: OpenAIEmbeddingsOptions = {}) {
    const owner = 'OpenAIEmbeddings';
    checkOptionNames(owner, options, OPTION_NAMES);
    const { client, secret } = connect(owner, options);
    this.client = client;
    this.#secret = secret;
    this.modelId = options.model ?? options.azure?.deployment ?? 'text-embedding-3-small';
    this.dimensions = options.dimensions === undefined ? undefined : checkInteger(owner, 'dimensions', options.dimensions);
    this.#batchSize = options.batchSize === undefined ? 2048 : checkInteger(owner, 'batchSize', options.batchSize);
    this.#concurrency = options.concurrency === undefined ? 4 : checkInteger(owner, 'concurrency', options.concurrency);
  }

  async embed(values: readonly string[], options: { signal?: AbortSignal } = {}): Promise<number[][]> {
    const batches: string[][] = [];
    for (let i = 0; i < values.length; i += this.#batchSize) batches.push(values.slice(i, i + this.#batchSize));
    const out: number[][][] = new Array(batches.length);
    let next = 0;
    const worker = async () => {
      while (next < batches.length) {
        const index = next++;
        out[index] = await this.#request(batches[index]!, options.signal);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.#concurrency, batches.length) }, worker));
    return out.flat();
  }

  async #request(input: string[], signal?: AbortSignal): Promise<number[][]> {
    try {
      const res = await this.client.embeddings.create(
        { model: this.modelId, input, ...(this.dimensions !== undefined ? { dimensions: this.dimensions } : {}) },
        { signal },
      );
      return [...res.data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
    } catch (error) {
      throw toCtxError(error, this.#secret, signal);
    }
  }
}
