// Type tests (checked by `tsc --noEmit`): an embedding model of `@ai-sdk/openai` 2, 3 and 4
// (specification v2, v3 and v4, each typed by its own `@ai-sdk/provider` major) is an
// `AiSdkEmbeddingModel`, and `aiSdkEmbeddings` takes it without a cast.
import { openai as openai3 } from '@ai-sdk/openai';
import { openai as openai2 } from '@ai-sdk/openai-v2';
import { openai as openai4 } from '@ai-sdk/openai-v4';
import type { EmbeddingGenerator } from '@ctx/core';
import { type AiSdkEmbeddingModel, aiSdkEmbeddings } from './ai-sdk-embeddings.js';

export const model2: AiSdkEmbeddingModel = openai2.textEmbeddingModel('text-embedding-3-small');
export const model3: AiSdkEmbeddingModel = openai3.textEmbeddingModel('text-embedding-3-small');
export const model4: AiSdkEmbeddingModel = openai4.textEmbeddingModel('text-embedding-3-small');
export const embeddings2: EmbeddingGenerator = aiSdkEmbeddings(openai2.embedding('text-embedding-3-small'));
export const embeddings3: EmbeddingGenerator = aiSdkEmbeddings(openai3.embedding('text-embedding-3-small'));
export const embeddings4: EmbeddingGenerator = aiSdkEmbeddings(openai4.embedding('text-embedding-3-small'));
// @ts-expect-error a language model is not an embedding model (it has no doEmbed).
export const notEmbeddings: EmbeddingGenerator = aiSdkEmbeddings(openai4('gpt-4o-mini'));
