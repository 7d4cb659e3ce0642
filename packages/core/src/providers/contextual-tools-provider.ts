import { checkOptionNames, optionNames } from '../backend/checks.js';
import { abortable } from '../backend/deadline.js';
import { ConfigurationError } from '../errors.js';
import { checkHistoryCount, recentConversationText } from '../messages/conversation-text.js';
import { type BudgetPolicy, countToolTokens, fitToBudget, recordBudget, resolveBudget, type ResolvedBudget } from '../policies/budget.js';
import { type ProviderGate, RunGate } from '../policies/gate.js';
import { EmbeddingCache, type EmbeddingKey } from '../retrieval/embedding-cache.js';
import { dot, normalize } from '../retrieval/vectors.js';
import type { EmbeddingGenerator } from '../contracts/embedding-generator.js';
import type { ContextProvider, ProviderRunArgs, Tool } from '../contracts/run-view.js';

/** The tools a `ContextualToolsProvider` chooses from: a fixed list, or one computed per run. */
export type ToolCatalog = readonly Tool[] | ((args: ProviderRunArgs) => readonly Tool[] | Promise<readonly Tool[]>);

/** Options of `ContextualToolsProvider`. */
export interface ContextualToolsProviderOptions {
  /** Every tool that may be advertised (say 100), or a function returning them per run. Names must be unique. */
  tools: ToolCatalog;
  /** Embeds tool descriptions (once each) and the conversation (every run). */
  embeddings: EmbeddingGenerator;
  /** How many tools, besides `alwaysInclude`, are advertised per run: the most similar. Default 5. */
  maxTools?: number;
  /** Names of catalog tools advertised in every run, besides the `maxTools` chosen ones. */
  alwaysInclude?: readonly string[];
  /** The query is the last N user/assistant messages (loaded history plus the input). Default 4. */
  queryFromHistory?: number;
  /** Tools less similar than this (cosine) are not advertised even when there is room. Default: none. */
  minSimilarity?: number;
  /** The text embedded for a tool. Default: its name split into words, then its description. */
  describeTool?: (tool: Tool) => string;
  /** Default `contextual-tools`. */
  sourceId?: string;
  /**
   * A token cap on the advertised tool definitions (name, description and parameters as JSON).
   * The least similar go first; `alwaysInclude` tools go last.
   */
  budget?: BudgetPolicy;
  /** Gating: when it returns false no catalog tool is advertised in that run. */
  when?: ProviderGate;
  /** Default `'throw'`. With `'skip'` a failing embedding call leaves the run without catalog tools. */
  onError?: 'throw' | 'skip';
  /** Bounds each of its hooks, in milliseconds (see `ContextProvider.timeoutMs`). Default: the agent's `providerTimeoutMs`. */
  timeoutMs?: number;
}

/** `metadata.priority` of `alwaysInclude` tools: above any cosine similarity. */
const ALWAYS_PRIORITY = 2;

const CONTEXTUAL_TOOLS_PROVIDER_OPTIONS = optionNames<ContextualToolsProviderOptions>()({
  tools: true,
  embeddings: true,
  maxTools: true,
  alwaysInclude: true,
  queryFromHistory: true,
  minSimilarity: true,
  describeTool: true,
  sourceId: true,
  budget: true,
  when: true,
  onError: true,
  timeoutMs: true,
});

/**
 * Advertises, out of a large tool catalog, only the tools most similar to the recent conversation
 * (plus `alwaysInclude`), so the model sees a short, relevant list. Tool embeddings are computed
 * once per tool (keyed by name and embedded text) and cached in the provider, shared by every
 * session; concurrent first runs share one embedding call. Each advertised tool carries its
 * similarity in `metadata.priority` (`alwaysInclude`: 2). Catalog tools whose name is already in
 * the run (the agent's own tools) are not added again.
 * @throws ConfigurationError (constructor) for duplicate names, an `alwaysInclude` name not in a
 *   fixed catalog, or invalid options; at run time for the same problems in a computed catalog.
 */
export class ContextualToolsProvider implements ContextProvider {
  /** Attribution of the advertised tools. Default `contextual-tools`. */
  readonly sourceId: string;
  /** Default `'throw'`. */
  readonly onError: 'throw' | 'skip';
  readonly timeoutMs: number | undefined;
  readonly #catalog: ToolCatalog;
  readonly #embeddings: EmbeddingGenerator;
  readonly #maxTools: number;
  readonly #always: ReadonlySet<string>;
  readonly #queryFromHistory: number;
  readonly #minSimilarity: number | undefined;
  readonly #describe: (tool: Tool) => string;
  readonly #budget: ResolvedBudget | undefined;
  readonly #gate: RunGate;
  readonly #cache: EmbeddingCache;
  readonly #keys = new WeakMap<Tool, EmbeddingKey>();

  constructor(options: ContextualToolsProviderOptions) {
    this.sourceId = options.sourceId ?? 'contextual-tools';
    const owner = `ContextualToolsProvider("${this.sourceId}")`;
    checkOptionNames(owner, options, CONTEXTUAL_TOOLS_PROVIDER_OPTIONS);
    if (typeof options.embeddings?.embed !== 'function') throw new ConfigurationError(`${owner} needs an \`embeddings\` generator.`);
    this.#embeddings = options.embeddings;
    this.#catalog = options.tools;
    this.#maxTools = options.maxTools ?? 5;
    if (!Number.isInteger(this.#maxTools) || this.#maxTools < 0)
      throw new ConfigurationError(`${owner}: maxTools must be a non-negative integer, got ${String(options.maxTools)}.`);
    this.#always = new Set(options.alwaysInclude ?? []);
    checkHistoryCount(owner, options.queryFromHistory);
    this.#queryFromHistory = options.queryFromHistory ?? 4;
    this.#minSimilarity = options.minSimilarity;
    this.#describe = options.describeTool ?? describeTool;
    this.#budget = resolveBudget(owner, options.budget);
    this.#gate = new RunGate(options.when);
    this.onError = options.onError ?? 'throw';
    this.timeoutMs = options.timeoutMs;
    this.#cache = new EmbeddingCache(options.embeddings);
    if (typeof options.tools !== 'function') this.#check(options.tools);
  }

  /** Chooses and advertises this run's tools, unless gated off. */
  async beforeRun(args: ProviderRunArgs): Promise<void> {
    if (!(await this.#gate.enter(args))) return;
    const { context, signal } = args;
    const catalog = typeof this.#catalog === 'function' ? this.#check(await this.#catalog(args)) : this.#catalog;
    const taken = new Set(context.tools.map((t) => t.name));
    const always: Tool[] = [];
    const candidates: Tool[] = [];
    for (const tool of catalog) {
      if (taken.has(tool.name)) continue;
      (this.#always.has(tool.name) ? always : candidates).push(tool);
    }
    const chosen = await this.#select(candidates, recentConversationText(context, this.#queryFromHistory), signal);
    let advertised: Array<{ tool: Tool; priority: number }> = [...always.map((tool) => ({ tool, priority: ALWAYS_PRIORITY })), ...chosen];
    if (this.#budget) {
      const { maxTokens, tokenizer } = this.#budget;
      const fit = fitToBudget(advertised, { maxTokens, tokensOf: (a) => countToolTokens(a.tool, tokenizer), priority: (a) => a.priority });
      recordBudget(context.metadata, this.sourceId, { maxTokens, tokens: fit.tokens, dropped: fit.dropped.length });
      advertised = fit.kept;
    }
    context.extendTools(
      this.sourceId,
      advertised.map(({ tool, priority }) => ({ ...tool, metadata: { ...tool.metadata, priority } })),
    );
  }

  /** The `maxTools` candidates most similar to `query`, most similar first. */
  async #select(candidates: readonly Tool[], query: string, signal: AbortSignal): Promise<Array<{ tool: Tool; priority: number }>> {
    const n = this.#maxTools;
    if (!query || n === 0 || candidates.length === 0) return [];
    const [vectors, [raw]] = await Promise.all([
      this.#cache.vectors(
        candidates.map((t) => this.#key(t)),
        signal,
      ),
      abortable(this.#embeddings.embed([query], { signal }), signal),
    ]);
    const q = normalize(raw ?? []);
    const min = this.#minSimilarity ?? -Infinity;
    // A sparse query (hashed bag of words) is compared on its non-zero dimensions only.
    const nonZero: number[] = [];
    for (let d = 0; d < q.length; d++) if (q[d] !== 0) nonZero.push(d);
    const sparse = nonZero.length * 2 < q.length;
    // Keep the n best in `top`, sorted by similarity, best first.
    const top: Array<{ index: number; score: number }> = [];
    for (let i = 0; i < vectors.length; i++) {
      const v = vectors[i]!;
      if (v.length !== q.length)
        throw new ConfigurationError(
          `ContextualToolsProvider("${this.sourceId}"): the query embedding has ${q.length} dimensions and the tool embeddings ${v.length}; use one embedding model.`,
        );
      let score = 0;
      if (sparse) for (const d of nonZero) score += q[d]! * v[d]!;
      else score = dot(q, v);
      if (score < min || (top.length === n && score <= top[n - 1]!.score)) continue;
      let at = top.length;
      while (at > 0 && top[at - 1]!.score < score) at--;
      top.splice(at, 0, { index: i, score });
      if (top.length > n) top.pop();
    }
    return top.map(({ index, score }) => ({ tool: candidates[index]!, priority: score }));
  }

  #key(tool: Tool): EmbeddingKey {
    let key = this.#keys.get(tool);
    if (!key) {
      const text = this.#describe(tool);
      key = { key: `${tool.name}\u0000${text}`, text };
      this.#keys.set(tool, key);
    }
    return key;
  }

  #check(tools: readonly Tool[]): readonly Tool[] {
    const owner = `ContextualToolsProvider("${this.sourceId}")`;
    if (!Array.isArray(tools)) throw new ConfigurationError(`${owner}: the tool catalog must be an array of tools.`);
    const names = new Set<string>();
    for (const tool of tools) {
      if (typeof tool?.name !== 'string') throw new ConfigurationError(`${owner}: every catalog tool needs a name.`);
      if (names.has(tool.name))
        throw new ConfigurationError(`${owner}: the catalog has two tools named "${tool.name}"; tool names must be unique.`);
      names.add(tool.name);
    }
    for (const name of this.#always)
      if (!names.has(name)) throw new ConfigurationError(`${owner}: alwaysInclude names "${name}", which is not in the tool catalog.`);
    return tools;
  }
}

/** The default text embedded for a tool: its name split into words (`get_weather` -> `get weather`), then its description. */
function describeTool(tool: Tool): string {
  const name = tool.name.replace(/[_-]+/g, ' ').replace(/([a-z0-9])([A-Z])/g, '$1 $2');
  return tool.description ? `${name}: ${tool.description}` : name;
}
