import { Tiktoken } from 'js-tiktoken/lite';
import cl100k_base from 'js-tiktoken/ranks/cl100k_base';
import o200k_base from 'js-tiktoken/ranks/o200k_base';
import { ConfigurationError, type Message, type Tokenizer } from '@ctx/core';
import { checkOptionNames, countContentTokens, optionNames } from '@ctx/core/backend';

/** The BPE encodings OpenAI's current models use. */
export type OpenAIEncoding = 'o200k_base' | 'cl100k_base';

/** Options of `createOpenAITokenizer`. */
export interface OpenAITokenizerOptions {
  /** The model whose encoding to use (e.g. `gpt-4o`, `gpt-4.1-mini`, `o3`, `gpt-4`). Default `gpt-4o`. */
  model?: string;
  /** Force an encoding instead of deriving it from `model`. */
  encoding?: OpenAIEncoding;
}

/** An exact tokenizer for an OpenAI model, counting chat framing the way the service does. */
export interface OpenAITokenizer extends Tokenizer {
  readonly encoding: OpenAIEncoding;
  /** The token ids of `text`. */
  encode(text: string): number[];
}

const OPTION_NAMES = optionNames<OpenAITokenizerOptions>()({ model: true, encoding: true });
const ranks = { o200k_base, cl100k_base };
const cache = new Map<OpenAIEncoding, Tiktoken>();

/** Chat framing: every message costs 3 tokens plus its role, a name 1 more, and the reply is primed with 3. */
const PER_MESSAGE = 3;
const PER_NAME = 1;
const REPLY_PRIMING = 3;

/** The encoding of a model: o200k for GPT-4o, GPT-4.1, GPT-5 and the o-series; cl100k for GPT-4, GPT-3.5 and the embedding models. */
export function encodingForModel(model: string): OpenAIEncoding {
  const m = model.toLowerCase().replace(/^(ft:|azure\/)/, '');
  if (/^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|o1|o3|o4|chatgpt-4o|gpt-oss)/.test(m)) return 'o200k_base';
  if (/^(gpt-4|gpt-3\.5|gpt-35|text-embedding-(3|ada-002))/.test(m)) return 'cl100k_base';
  return 'o200k_base';
}

/**
 * An exact `Tokenizer` for OpenAI models (requires the optional peer dependency `js-tiktoken`).
 * `countMessageTokens` follows the service's chat framing, so its result for a Chat Completions
 * request of plain text messages equals the `prompt_tokens` the service reports. Function calls
 * and results are counted by their JSON text (the service's framing for them is undocumented).
 * @throws ConfigurationError for an option it does not know (named), or an unknown `encoding`.
 */
export function createOpenAITokenizer(options: OpenAITokenizerOptions = {}): OpenAITokenizer {
  checkOptionNames('createOpenAITokenizer', options, OPTION_NAMES);
  const encoding = options.encoding ?? encodingForModel(options.model ?? 'gpt-4o');
  if (!Object.hasOwn(ranks, encoding))
    throw new ConfigurationError(`createOpenAITokenizer: encoding must be 'o200k_base' or 'cl100k_base', got ${JSON.stringify(encoding)}.`);
  let bpe = cache.get(encoding);
  if (!bpe) cache.set(encoding, (bpe = new Tiktoken(ranks[encoding])));
  const tiktoken = bpe;
  const countTokens = (text: string) => (text ? tiktoken.encode(text).length : 0);
  return {
    encoding,
    encode: (text) => tiktoken.encode(text),
    countTokens,
    countMessageTokens(messages: readonly Message[]) {
      let total = REPLY_PRIMING;
      for (const m of messages) {
        total += PER_MESSAGE + countTokens(m.role === 'system' ? 'system' : m.role);
        if (m.authorName) total += PER_NAME + countTokens(m.authorName);
        // Reasoning is not sent back as prompt text; images cost 85 tokens (low detail).
        for (const c of m.contents)
          if (c.type !== 'reasoning')
            total += countContentTokens(c, countTokens, c.type === 'data' && c.mediaType.startsWith('image/') ? 85 : 0);
      }
      return total;
    },
  };
}
