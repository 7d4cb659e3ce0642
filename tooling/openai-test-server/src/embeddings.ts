import { sendError, sendJson, type Exchange } from './exchange.js';
import { countTokens } from './tokens.js';
import type { JsonObject } from './types.js';

/** The vector length the server uses when the request names no `dimensions`: 3072 for `*-3-large`, else 1536. */
export function defaultDimensions(model: string): number {
  return model.includes('3-large') ? 3072 : 1536;
}

const STOP_WORDS = new Set(
  'a an and are as at be by do does for from has have i in is it its of on or so that the this to was were what when where which who will with you your'.split(
    ' ',
  ),
);

/** FNV-1a, 32-bit. */
function fnv1a(text: string, seed = 0x811c9dc5): number {
  let hash = seed;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/**
 * A deterministic unit vector for `text` (the one the server returns): a signed hashed bag of
 * lower-cased words (weight 2, stop words 0.25) and of their character trigrams (weight 1) in
 * `dimensions` buckets, L2-normalized and rounded to float32. Texts that share words or word
 * pieces get a higher cosine similarity than unrelated texts (near 0). Default 1536 dimensions.
 */
export function deterministicEmbedding(text: string, dimensions = 1536): number[] {
  const vector = new Float64Array(dimensions);
  const add = (feature: string, weight: number): void => {
    const bucket = fnv1a(feature) % dimensions;
    const sign = fnv1a(feature, 0x9747b28c) & 1 ? 1 : -1;
    vector[bucket] = (vector[bucket] ?? 0) + sign * weight;
  };
  const words =
    text
      .normalize('NFKC')
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? [];
  for (const word of words) {
    if (STOP_WORDS.has(word)) {
      add(`w:${word}`, 0.25);
      continue;
    }
    add(`w:${word}`, 2);
    const padded = `<${word}>`;
    for (let i = 0; i + 3 <= padded.length; i++) add(`t:${padded.slice(i, i + 3)}`, 1);
  }
  if (words.length === 0) add(`raw:${text}`, 1);
  let norm = 0;
  for (const value of vector) norm += value * value;
  norm = Math.sqrt(norm);
  return Array.from(vector, (value) => Math.fround(value / norm));
}

/** Little-endian float32 bytes of `vector`, base64-encoded, as the service sends for `encoding_format: 'base64'`. */
export function encodeBase64Embedding(vector: number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((value, i) => bytes.writeFloatLE(value, i * 4));
  return bytes.toString('base64');
}

const INVALID_INPUT = "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.";

/** `POST /embeddings`: `input` is a string, an array of strings, or token arrays. */
export function handleEmbeddings(ex: Exchange, body: JsonObject, deployment: string | undefined): void {
  const model = typeof body.model === 'string' ? body.model : deployment;
  if (model === undefined) {
    sendError(ex, 400, { message: 'you must provide a model parameter' });
    return;
  }
  const inputs = embeddingInputs(body.input);
  if (inputs === undefined) {
    sendError(ex, 400, { message: INVALID_INPUT });
    return;
  }
  ex.recorded.batchSize = inputs.length;
  if (inputs.length === 0 || inputs.length > 2048 || inputs.some((text) => text.length === 0)) {
    sendError(ex, 400, { message: INVALID_INPUT });
    return;
  }
  const format = body.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64') {
    sendError(ex, 400, {
      message: `Invalid value for 'encoding_format': '${String(format)}'. Supported values are: 'float' and 'base64'.`,
      param: 'encoding_format',
      code: 'invalid_value',
    });
    return;
  }
  const dimensions = typeof body.dimensions === 'number' ? body.dimensions : defaultDimensions(model);
  if (!Number.isInteger(dimensions) || dimensions < 1) {
    sendError(ex, 400, { message: `Invalid value for 'dimensions': ${dimensions}.`, param: 'dimensions', code: 'invalid_value' });
    return;
  }
  let tokens = 0;
  const data = inputs.map((text, index) => {
    tokens += Math.max(1, countTokens(text));
    const vector = deterministicEmbedding(text, dimensions);
    return { object: 'embedding', index, embedding: format === 'base64' ? encodeBase64Embedding(vector) : vector };
  });
  sendJson(ex, 200, { object: 'list', data, model, usage: { prompt_tokens: tokens, total_tokens: tokens } });
}

/** The inputs as texts (token arrays become their numbers joined by spaces); `undefined` when malformed. */
function embeddingInputs(input: unknown): string[] | undefined {
  if (typeof input === 'string') return [input];
  if (!Array.isArray(input)) return undefined;
  if (input.length > 0 && input.every((value) => typeof value === 'number')) return [input.join(' ')];
  const texts: string[] = [];
  for (const value of input) {
    if (typeof value === 'string') texts.push(value);
    else if (Array.isArray(value) && value.every((token) => typeof token === 'number')) texts.push(value.join(' '));
    else return undefined;
  }
  return texts;
}
