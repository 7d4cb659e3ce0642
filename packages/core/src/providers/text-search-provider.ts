import { checkOptionNames, optionNames } from '../backend/checks.js';
import { ConfigurationError, CtxError } from '../errors.js';
import { checkHistoryCount, recentConversationText } from '../messages/conversation-text.js';
import { findNonJson } from '../messages/json.js';
import { Message } from '../messages/message.js';
import { type BudgetPolicy, fitPrefix, recordBudget, resolveBudget, type ResolvedBudget } from '../policies/budget.js';
import { type ProviderGate, RunGate } from '../policies/gate.js';
import type { JsonObject } from '../contracts/json.js';
import type { RetrievalResult, Retriever } from '../contracts/retriever.js';
import type { ContextProvider, ProviderRunArgs, Tool } from '../contracts/run-view.js';
import { defineTool } from '../tools/define-tool.js';

/** Options of `TextSearchProvider`. */
export interface TextSearchProviderOptions {
  /** Where results come from. */
  retriever: Retriever;
  /** Default `text-search`. */
  sourceId?: string;
  /**
   * `before` (default): search before every run and inject the results as one context message.
   * `tool`: advertise a search tool and let the model search when it needs to.
   */
  mode?: 'before' | 'tool';
  /** Results asked of the retriever per search. Default 5. */
  topK?: number;
  /**
   * `before` mode: build the query from the last N user/assistant messages (loaded history plus
   * the input) instead of the input alone. Default: the input alone.
   */
  queryFromHistory?: number;
  /** Results with a `score` below this are left out. Default: none left out. */
  minScore?: number;
  /**
   * A token cap on the injected message (`before`) or on each tool result (`tool`). The retriever's
   * order is the value: the lowest-ranked results are dropped first.
   */
  budget?: BudgetPolicy;
  /** Gating: when it returns false the provider neither searches nor advertises its tool. */
  when?: ProviderGate;
  /** Default `'skip'`: a failing search leaves the run without results and emits `provider-skipped`. */
  onError?: 'throw' | 'skip';
  /** Bounds each of its hooks, in milliseconds (see `ContextProvider.timeoutMs`). Default: the agent's `providerTimeoutMs`. */
  timeoutMs?: number;
  /** Role of the injected message. Default `user`, so retrieved text never speaks with system authority. */
  role?: 'user' | 'system';
  /** First line of the injected message. */
  header?: string;
  /** Formats one result of the injected message; `n` is its citation number (1-based). */
  formatResult?: (result: RetrievalResult, n: number) => string;
  /** `tool` mode: the tool's name. Default `search`. */
  toolName?: string;
  /** `tool` mode: the tool's description. */
  toolDescription?: string;
}

/** One citation in `metadata.citations` of the injected message. */
export interface RetrievalCitation {
  /** The number the text cites it by, `[n]`. */
  n: number;
  /** The document's id. */
  id: string;
  /** The document's title. */
  title?: string;
  /** The document's URL. */
  url?: string;
  /** The retriever's score. */
  score?: number;
  /** The document's metadata. */
  metadata?: JsonObject;
}

const DEFAULT_HEADER = 'Retrieved context for this turn. It may be incomplete or irrelevant; cite what you use by its [n].';
const DEFAULT_TOOL_DESCRIPTION =
  'Searches the knowledge base for information that helps answer the user. Returns passages with ids, titles and urls to cite.';

const TEXT_SEARCH_PROVIDER_OPTIONS = optionNames<TextSearchProviderOptions>()({
  retriever: true,
  sourceId: true,
  mode: true,
  topK: true,
  queryFromHistory: true,
  minScore: true,
  budget: true,
  when: true,
  onError: true,
  timeoutMs: true,
  role: true,
  header: true,
  formatResult: true,
  toolName: true,
  toolDescription: true,
});

/**
 * Retrieval-augmented generation over any `Retriever`. In `before` mode it searches with the input
 * (or the recent conversation) before every run and injects the results as one attributed context
 * message (`metadata.citations` lists them); in `tool` mode it advertises a search tool instead.
 * @throws ConfigurationError (constructor) for invalid options.
 */
export class TextSearchProvider implements ContextProvider {
  /** Attribution of the injected message and the tool. Default `text-search`. */
  readonly sourceId: string;
  /** Default `'skip'`. */
  readonly onError: 'throw' | 'skip';
  readonly timeoutMs: number | undefined;
  /** `before`: inject results before each run; `tool`: advertise a search tool. */
  readonly mode: 'before' | 'tool';
  readonly #retriever: Retriever;
  readonly #topK: number;
  readonly #queryFromHistory: number | undefined;
  readonly #minScore: number | undefined;
  readonly #budget: ResolvedBudget | undefined;
  readonly #gate: RunGate;
  readonly #role: 'user' | 'system';
  readonly #header: string;
  readonly #format: (result: RetrievalResult, n: number) => string;
  readonly #tool: Tool | undefined;

  constructor(options: TextSearchProviderOptions) {
    this.sourceId = options.sourceId ?? 'text-search';
    const owner = `TextSearchProvider("${this.sourceId}")`;
    checkOptionNames(owner, options, TEXT_SEARCH_PROVIDER_OPTIONS);
    if (typeof options.retriever?.search !== 'function')
      throw new ConfigurationError(`${owner} needs a \`retriever\` with a search(query, { topK, signal }) method.`);
    this.#retriever = options.retriever;
    this.mode = options.mode ?? 'before';
    if (this.mode !== 'before' && this.mode !== 'tool')
      throw new ConfigurationError(`${owner}: mode must be "before" or "tool", got ${JSON.stringify(this.mode)}.`);
    this.#topK = options.topK ?? 5;
    if (!Number.isInteger(this.#topK) || this.#topK <= 0)
      throw new ConfigurationError(`${owner}: topK must be a positive integer, got ${String(options.topK)}.`);
    checkHistoryCount(owner, options.queryFromHistory);
    this.#queryFromHistory = options.queryFromHistory;
    this.#minScore = options.minScore;
    this.#budget = resolveBudget(owner, options.budget);
    this.#gate = new RunGate(options.when);
    this.onError = options.onError ?? 'skip';
    this.timeoutMs = options.timeoutMs;
    this.#role = options.role ?? 'user';
    this.#header = options.header ?? DEFAULT_HEADER;
    this.#format = options.formatResult ?? defaultFormat;
    if (this.mode === 'tool')
      this.#tool = this.#searchTool(options.toolName ?? 'search', options.toolDescription ?? DEFAULT_TOOL_DESCRIPTION);
  }

  /** Searches and injects the results (`before`), or advertises the search tool (`tool`), unless gated off. */
  async beforeRun(args: ProviderRunArgs): Promise<void> {
    if (!(await this.#gate.enter(args))) return;
    const { context, signal } = args;
    if (this.#tool) {
      context.extendTools(this.sourceId, [this.#tool]);
      return;
    }
    const query = recentConversationText(context, this.#queryFromHistory);
    if (!query) return;
    const results = await this.#search(query, signal);
    if (!results.length) return;
    let kept = results;
    if (this.#budget) {
      const { tokenizer, maxTokens } = this.#budget;
      kept = results.slice(
        0,
        fitPrefix(results, maxTokens, (prefix) => tokenizer.countMessageTokens([this.#message(prefix)])),
      );
      recordBudget(context.metadata, this.sourceId, {
        maxTokens,
        tokens: kept.length ? tokenizer.countMessageTokens([this.#message(kept)]) : 0,
        dropped: results.length - kept.length,
      });
    }
    if (kept.length) context.extendMessages(this.sourceId, [this.#message(kept)]);
  }

  /** Searches and checks what the retriever returned: at most `topK`, well-formed, above `minScore`. */
  async #search(query: string, signal: AbortSignal): Promise<RetrievalResult[]> {
    const results = await this.#retriever.search(query, { topK: this.#topK, signal });
    if (!Array.isArray(results))
      throw new CtxError(`The retriever of "${this.sourceId}" returned ${typeof results} instead of an array of results.`);
    results.forEach((r, i) => {
      if (typeof r?.id !== 'string' || typeof r.content !== 'string') {
        throw new CtxError(
          `The retriever of "${this.sourceId}" returned a malformed result at [${i}]: each needs a string \`id\` and \`content\`.`,
        );
      }
    });
    const min = this.#minScore;
    return results.filter((r) => min === undefined || (typeof r.score === 'number' && r.score >= min)).slice(0, this.#topK);
  }

  #message(results: readonly RetrievalResult[]): Message {
    const parts = [this.#header, ...results.map((r, i) => this.#format(r, i + 1))];
    const citations = results.map((r, i) => citation(r, i + 1));
    const init = { metadata: { citations: citations as unknown as JsonObject[] } };
    return this.#role === 'system' ? Message.system(parts.join('\n\n'), init) : Message.user(parts.join('\n\n'), init);
  }

  #searchTool(name: string, description: string): Tool {
    return defineTool<{ query: string }>({
      name,
      description,
      parameters: {
        type: 'object',
        properties: { query: { type: 'string', description: 'What to search for, in a few keywords or a question.' } },
        required: ['query'],
        additionalProperties: false,
      },
      execute: async ({ query }, { signal }) => {
        if (typeof query !== 'string' || !query.trim()) throw new Error('The search needs a non-empty "query" string.');
        const results = (await this.#search(query, signal)).map((r, i) => ({ ...citation(r, i + 1), content: r.content }));
        if (!this.#budget) return { results };
        const { tokenizer, maxTokens } = this.#budget;
        const k = fitPrefix(results, maxTokens, (prefix) => tokenizer.countTokens(JSON.stringify({ results: prefix })));
        return { results: results.slice(0, k), ...(k < results.length ? { omitted: results.length - k } : {}) };
      },
    });
  }
}

function citation(r: RetrievalResult, n: number): RetrievalCitation {
  const c: RetrievalCitation = { n, id: r.id };
  if (typeof r.title === 'string') c.title = r.title;
  if (typeof r.url === 'string') c.url = r.url;
  if (typeof r.score === 'number' && Number.isFinite(r.score)) c.score = r.score;
  if (r.metadata !== undefined && findNonJson(r.metadata) === undefined) c.metadata = r.metadata;
  return c;
}

function defaultFormat(r: RetrievalResult, n: number): string {
  const head = [`[${n}]`, r.title, r.url && `(${r.url})`].filter(Boolean).join(' ');
  return `${head}\n${r.content}`;
}
