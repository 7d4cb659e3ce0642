/** Turns texts into vectors, for retrieval and tool selection (`@ctx/openai` ships one). */
export interface EmbeddingGenerator {
  /** The contract version this generator implements. Absent means `'v1'`. */
  readonly specificationVersion?: 'v1';
  /** Vector length, when known before the first call; `undefined` means the same as absent. */
  readonly dimensions?: number | undefined;
  /** One vector per value, in order. */
  embed(values: readonly string[], options?: { signal?: AbortSignal }): Promise<number[][]>;
}
