import { project, type IndexStore, type StoredDocument } from './documents.js';
import { invalidParameter, SearchServiceError } from './errors.js';
import { isObject, lookupField, type Vectorizer } from './index-definition.js';
import { parseFilter, type Predicate } from './odata-filter.js';
import { highlight, judge, parseSemanticOption, type SemanticJudgement } from './semantic.js';
import { analyze, bm25Term, idf, sentences } from './text-analysis.js';
import { checkSearchRequest } from './api-version.js';
import type { JsonObject, JsonValue, SemanticErrorReason } from './types.js';

/** Embeds the text of a `kind: 'text'` vector query with the field's vectorizer. */
export type Vectorize = (vectorizer: Vectorizer, text: string, dimensions: number) => Promise<number[]>;

/** Reciprocal rank fusion constant the service uses. */
export const RRF_K = 60;
/** Text results that take part in a hybrid fusion (the service's `maxTextRecallSize` default). */
export const MAX_TEXT_RECALL = 1000;
/** How many results the semantic ranker reranks. */
export const SEMANTIC_WINDOW = 50;
const DEFAULT_K = 50;
const MAX_K = 1000;

/** Parameters the service accepts that are not implemented here: a request using them gets a 400 saying so, never a silently different answer. */
const UNSUPPORTED = ['speller', 'queryRewrites', 'semanticFields', 'hybridSearch', 'queryLanguage'];
/** Results per page when `top` is not set, and the most one page holds when it is. */
export const PAGE_SIZE = { default: 50, max: 1000 } as const;

/** What a search needs besides the index and the body. */
export interface SearchContext {
  /** The request's `api-version`: 2026-04-01 requests are checked against the service's schema. */
  apiVersion: string;
  /** `@odata.nextLink` of a paged reply (the URL the request was sent to). */
  nextLink: string;
  /** Share of the index the query reaches, 0-100 (`@search.coverage`). */
  coverage: number;
  /** When set, the semantic ranker fails for this request for this reason. */
  semanticFailure?: SemanticErrorReason | undefined;
}

interface Ranked {
  stored: StoredDocument;
  score: number;
  semantic?: SemanticJudgement;
  captions?: JsonObject[];
}

/**
 * Runs one `docs/search.post.search` request: filter, keyword (BM25), vector (exact k-nearest
 * neighbours), hybrid (reciprocal rank fusion), `orderby`, semantic reranking with captions and
 * answers (or base results with a 206 when the ranker fails and the request allows partial
 * results), highlights, facets, `count`, `minimumCoverage`, `skip`/`top` with paging, `select`.
 * Returns the status (200 or 206) and the reply body.
 * @throws SearchServiceError (400) for what the service rejects, 503 when the coverage is below
 *   `minimumCoverage` or the semantic ranker fails with `semanticErrorHandling: 'fail'`.
 */
export async function search(
  store: IndexStore,
  body: JsonObject,
  vectorize: Vectorize,
  context: SearchContext,
): Promise<{ status: number; body: JsonObject }> {
  checkSearchRequest(body, context.apiVersion);
  for (const name of UNSUPPORTED) {
    const value = body[name];
    if (value === null || value === undefined || (name === 'hybridSearch' && isObject(value) && Object.keys(value).length === 0)) continue;
    throw new SearchServiceError(400, `The parameter '${name}' is not supported by the Azure AI Search test server.`);
  }
  if (body.debug !== undefined && body.debug !== null && body.debug !== 'disabled')
    throw new SearchServiceError(
      400,
      `The parameter 'debug' ('${String(body.debug)}') is not supported by the Azure AI Search test server.`,
    );
  const minimumCoverage = body.minimumCoverage;
  if (minimumCoverage !== undefined && minimumCoverage !== null) {
    if (typeof minimumCoverage !== 'number' || minimumCoverage < 0 || minimumCoverage > 100)
      throw invalidParameter('minimumCoverage', `The parameter 'minimumCoverage' must be a number between 0 and 100.`);
    if (context.coverage < minimumCoverage) {
      throw new SearchServiceError(
        503,
        `The search reached ${context.coverage}% of the index, less than the requested minimumCoverage of ${minimumCoverage}%. Retry later, or lower minimumCoverage.`,
      );
    }
  }
  checkScoringProfile(store, body);
  const { definition } = store;
  const all = [...store.documents.values()];
  const filter = optionalString(body.filter, 'filter');
  const predicate: Predicate | undefined =
    filter === undefined || filter.trim() === '' ? undefined : parseFilter(filter, (path) => lookupField(definition.fields, path));
  const filterMode = optionalString(body.vectorFilterMode, 'vectorFilterMode') ?? 'preFilter';
  if (!['preFilter', 'postFilter', 'strictPostFilter'].includes(filterMode))
    throw invalidParameter('vectorFilterMode', `Invalid value '${filterMode}'.`);
  const candidates = predicate ? all.filter((d) => predicate(d.document)) : all;
  const candidateSet = new Set(candidates);

  const searchText = optionalString(body.search, 'search');
  const textQuery = searchText !== undefined && searchText.trim() !== '' && searchText.trim() !== '*';
  const vectorQueries = Array.isArray(body.vectorQueries) ? body.vectorQueries : [];
  const lists: { ranked: Ranked[]; weight: number }[] = [];

  if (textQuery) {
    lists.push({ ranked: keywordSearch(store, candidates, all.length, searchText, body), weight: 1 });
  }
  let maxK = 0;
  for (const [i, raw] of vectorQueries.entries()) {
    if (!isObject(raw)) throw invalidParameter('vectorQueries', `Invalid vector query at index ${i}.`);
    const k = raw.k === undefined || raw.k === null ? DEFAULT_K : raw.k;
    if (typeof k !== 'number' || !Number.isInteger(k) || k < 1 || k > MAX_K)
      throw invalidParameter('vectorQueries', `The 'k' of the vector query at index ${i} must be an integer between 1 and ${MAX_K}.`);
    maxK = Math.max(maxK, k);
    const weight = typeof raw.weight === 'number' ? raw.weight : 1;
    const fieldNames =
      typeof raw.fields === 'string'
        ? raw.fields
            .split(',')
            .map((f) => f.trim())
            .filter(Boolean)
        : [];
    if (fieldNames.length === 0)
      throw invalidParameter('vectorQueries', `The vector query at index ${i} must name at least one vector field in 'fields'.`);
    for (const fieldName of fieldNames) {
      const vectorField = definition.vectorFields.get(fieldName);
      if (!vectorField)
        throw invalidParameter(
          'vectorQueries',
          `The field '${fieldName}' in the vector query at index ${i} is not a vector field of the index.`,
        );
      const dimensions = vectorField.field.dimensions!;
      let vector: number[];
      if (raw.kind === 'vector') {
        if (!Array.isArray(raw.vector) || !raw.vector.every((x) => typeof x === 'number'))
          throw invalidParameter('vectorQueries', `The vector query at index ${i} needs a 'vector' of numbers.`);
        vector = raw.vector as number[];
      } else if (raw.kind === 'text') {
        if (typeof raw.text !== 'string' || raw.text.trim() === '')
          throw invalidParameter('vectorQueries', `The text vector query at index ${i} needs a non-empty 'text'.`);
        if (!vectorField.vectorizer) {
          throw invalidParameter(
            'vectorQueries',
            `The field '${fieldName}' does not have a vectorizer configured in its vector search profile, so the text vector query at index ${i} cannot be vectorized.`,
          );
        }
        vector = await vectorize(vectorField.vectorizer, raw.text, dimensions);
      } else {
        throw invalidParameter(
          'vectorQueries',
          `The vector query kind '${String(raw.kind)}' at index ${i} is not supported by the test server (vector, text).`,
        );
      }
      if (vector.length !== dimensions) {
        throw invalidParameter(
          'vectorQueries',
          `The vector query's 'vector' property dimensionality ('${vector.length}') does not match the dimensionality of the field '${fieldName}' ('${dimensions}').`,
        );
      }
      const pool = filterMode === 'preFilter' ? candidates : all;
      let ranked = knn(pool, fieldName, vector, vectorField.metric, k);
      if (filterMode !== 'preFilter') ranked = ranked.filter((r) => candidateSet.has(r.stored));
      lists.push({ ranked, weight });
    }
  }

  let results: Ranked[];
  if (lists.length === 0) {
    results = candidates.map((stored) => ({ stored, score: 1 }));
  } else if (lists.length === 1) {
    results = lists[0]!.ranked;
  } else {
    results = fuse(lists);
  }

  const orderby = optionalString(body.orderby, 'orderby');
  if (orderby) results = orderBy(store, results, orderby);

  const queryType = optionalString(body.queryType, 'queryType') ?? 'simple';
  if (!['simple', 'full', 'semantic'].includes(queryType)) throw invalidParameter('queryType', `Invalid value '${queryType}'.`);
  let answers: JsonObject[] | undefined;
  let partial: SemanticErrorReason | undefined;
  const captionsOption = parseSemanticOption(body.captions);
  const answersOption = parseSemanticOption(body.answers);
  const wantsAnswers = answersOption !== undefined && answersOption.kind !== 'none';
  const wantsCaptions = captionsOption !== undefined && captionsOption.kind !== 'none';
  if (queryType === 'semantic') {
    const configName = optionalString(body.semanticConfiguration, 'semanticConfiguration') ?? definition.semantic.defaultConfiguration;
    if (configName === undefined) {
      throw invalidParameter(
        'semanticConfiguration',
        `The 'semanticConfiguration' parameter is required when 'queryType' is 'semantic' and the index defines no default semantic configuration.`,
      );
    }
    const config = definition.semantic.configurations.get(configName);
    if (!config) throw invalidParameter('semanticConfiguration', `Unknown semantic configuration '${configName}'.`);
    const semanticQuery = optionalString(body.semanticQuery, 'semanticQuery') ?? (textQuery ? searchText : undefined);
    if (semanticQuery === undefined || semanticQuery.trim() === '') {
      throw invalidParameter('search', `Semantic ranking needs a query: set 'search' (not '*') or 'semanticQuery'.`);
    }
    const errorMode = optionalString(body.semanticErrorHandling, 'semanticErrorHandling') ?? 'fail';
    results = results.slice(0, SEMANTIC_WINDOW);
    if (context.semanticFailure !== undefined) {
      // The ranker failed: with 'partial' the base results come back as they are (206), with 'fail' the query fails.
      if (errorMode !== 'partial') {
        throw new SearchServiceError(
          503,
          `Semantic ranking could not be completed (${context.semanticFailure}). Retry later, or set semanticErrorHandling to 'partial' to receive the base results.`,
        );
      }
      partial = context.semanticFailure;
      if (wantsAnswers) answers = [];
    } else {
      const window = results.map((r) => ({ ...r, semantic: judge(config, r.stored.document, semanticQuery) }));
      window.sort((a, b) => b.semantic.rerankerScore - a.semantic.rerankerScore);
      results = window;
      if (wantsAnswers) answers = extractAnswers(results, answersOption.settings, semanticQuery);
      if (wantsCaptions) {
        const withHighlights = captionsOption.settings.get('highlight') !== 'false';
        const maxLength = captionsOption.settings.has('maxcharlength') ? Number(captionsOption.settings.get('maxcharlength')) : undefined;
        for (const r of results) {
          const passage = r.semantic!.bestPassage;
          if (passage === undefined) continue;
          const text = clip(passage, maxLength);
          r.captions = [{ text, highlights: withHighlights ? highlight(text, semanticQuery) : '' }];
        }
      }
    }
  } else {
    const asked = wantsAnswers ? 'answers' : wantsCaptions ? 'captions' : undefined;
    if (asked) throw invalidParameter(asked, `'${asked}' can only be requested when 'queryType' is 'semantic'.`);
  }

  const select = parseSelect(store, body.select);
  const highlighter = textQuery ? parseHighlight(store, body, searchText) : undefined;
  const facets = parseFacets(store, body.facets);
  const skip = integer(body.skip, 'skip', 0, 100_000) ?? 0;
  const top = integer(body.top, 'top', 0, 100_000) ?? (lists.length > 0 && !textQuery ? maxK : undefined);
  // Without `top` a page holds 50 results, with a larger `top` at most 1000; the rest is announced by the continuation.
  const wanted = top ?? Number.POSITIVE_INFINITY;
  const pageSize = Math.min(wanted, top === undefined ? PAGE_SIZE.default : PAGE_SIZE.max);
  const page = results.slice(skip, skip + pageSize);
  const more = results.length > skip + pageSize && wanted > pageSize;
  const value = page.map((r) => {
    const out: JsonObject = { '@search.score': r.score };
    const highlights = highlighter?.(r.stored.document);
    if (highlights) out['@search.highlights'] = highlights;
    if (r.semantic) {
      out['@search.rerankerScore'] = r.semantic.rerankerScore;
      out['@search.rerankerBoostedScore'] = r.semantic.rerankerScore;
    }
    if (r.captions) out['@search.captions'] = r.captions;
    return Object.assign(out, project(definition, r.stored.document, select));
  });
  const reply: JsonObject = {};
  if (body.count === true) reply['@odata.count'] = results.length;
  if (minimumCoverage !== undefined && minimumCoverage !== null) reply['@search.coverage'] = context.coverage;
  if (facets) reply['@search.facets'] = facets(results.map((r) => r.stored.document));
  if (answers) reply['@search.answers'] = answers;
  if (more) {
    const next: JsonObject = { ...body, skip: skip + pageSize };
    if (top !== undefined) next.top = top - pageSize;
    else delete next.top;
    reply['@search.nextPageParameters'] = next;
  }
  reply.value = value;
  if (more) reply['@odata.nextLink'] = context.nextLink;
  if (partial) {
    reply['@search.semanticPartialResponseReason'] = partial;
    reply['@search.semanticPartialResponseType'] = 'baseResults';
  }
  return { status: partial ? 206 : 200, body: reply };
}

/** The extractive answers: the best passages whose coverage of the question reaches the threshold (none may qualify: `[]`). */
function extractAnswers(results: Ranked[], settings: Map<string, string>, semanticQuery: string): JsonObject[] {
  const count = Number(settings.get('count') ?? 1);
  const threshold = Number(settings.get('threshold') ?? 0.7);
  const maxLength = settings.has('maxcharlength') ? Number(settings.get('maxcharlength')) : undefined;
  return results
    .filter((r) => r.semantic!.bestPassage !== undefined && r.semantic!.passageCoverage >= threshold)
    .sort((a, b) => b.semantic!.passageCoverage - a.semantic!.passageCoverage)
    .slice(0, count)
    .map((r) => {
      const text = clip(r.semantic!.bestPassage!, maxLength);
      return {
        key: r.stored.key,
        text,
        highlights: highlight(text, semanticQuery),
        score: Math.round(r.semantic!.passageCoverage * 1e6) / 1e6,
      };
    });
}

/** `scoringProfile` must name a profile of the index (profiles themselves are not implemented); `scoringParameters` need one. */
function checkScoringProfile(store: IndexStore, body: JsonObject): void {
  const name = optionalString(body.scoringProfile, 'scoringProfile');
  if (name === undefined) {
    if (Array.isArray(body.scoringParameters) && body.scoringParameters.length > 0)
      throw invalidParameter('scoringParameters', `'scoringParameters' can only be used with a 'scoringProfile'.`);
    return;
  }
  const profiles = Array.isArray(store.definition.raw.scoringProfiles) ? store.definition.raw.scoringProfiles : [];
  if (!profiles.some((p) => isObject(p) && p.name === name))
    throw invalidParameter('scoringProfile', `The scoring profile '${name}' does not exist in the index '${store.definition.name}'.`);
  throw new SearchServiceError(400, `The parameter 'scoringProfile' is not supported by the Azure AI Search test server.`);
}

/**
 * `highlight` (comma-separated searchable fields) with `highlightPreTag`/`highlightPostTag`
 * (default `<em>`/`</em>`): for each field, the sentences that contain a query term, each term
 * wrapped in the tags; fields without a match are left out, and so is a result without any.
 */
function parseHighlight(
  store: IndexStore,
  body: JsonObject,
  searchText: string,
): ((document: JsonObject) => JsonObject | undefined) | undefined {
  const fields = optionalString(body.highlight, 'highlight');
  if (fields === undefined || fields.trim() === '') return undefined;
  const names = fields.split(',').map((f) => f.trim().split('-')[0]!);
  for (const name of names) {
    const field = store.definition.fields.find((f) => f.name === name);
    if (!field)
      throw invalidParameter('highlight', `Invalid expression: Could not find a property named '${name}' on type 'search.document'.`);
    if (!field.searchable) throw invalidParameter('highlight', `The field '${name}' is not searchable, so it cannot be highlighted.`);
  }
  const pre = optionalString(body.highlightPreTag, 'highlightPreTag') ?? '<em>';
  const post = optionalString(body.highlightPostTag, 'highlightPostTag') ?? '</em>';
  const terms = new Set(analyze(searchText));
  const wrap = (text: string) => text.replace(/[\p{L}\p{N}]+/gu, (word) => (terms.has(word.toLowerCase()) ? `${pre}${word}${post}` : word));
  const matches = (text: string) => analyze(text).some((t) => terms.has(t));
  return (document) => {
    const out: JsonObject = {};
    for (const name of names) {
      const value = document[name];
      const texts =
        typeof value === 'string' ? [value] : Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
      const fragments = texts
        .flatMap((t) => sentences(t))
        .filter(matches)
        .map(wrap);
      if (fragments.length) out[name] = fragments;
    }
    return Object.keys(out).length ? out : undefined;
  };
}

/**
 * `facets`: `field`, `field,count:N` (default 10), `field,sort:count|-count|value|-value`
 * (default count) give value buckets `{ value, count }`; `field,metric:sum|min|max|avg` gives one
 * `{ <metric>: x }` over a numeric field. Fields must be facetable. Counted over every matching
 * document, not only the page.
 */
function parseFacets(store: IndexStore, value: JsonValue | undefined): ((documents: JsonObject[]) => JsonObject) | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string'))
    throw invalidParameter('facets', `'facets' must be a list of strings.`);
  const specs = (value as string[]).map((expression) => {
    const [name = '', ...params] = expression.split(',').map((p) => p.trim());
    const field = store.definition.fields.find((f) => f.name === name);
    if (!field)
      throw invalidParameter('facets', `Invalid expression: Could not find a property named '${name}' on type 'search.document'.`);
    if (!field.facetable)
      throw invalidParameter('facets', `The field '${name}' is not facetable. Only facetable fields can be used in facets.`);
    const settings = new Map<string, string>();
    for (const param of params) {
      const colon = param.indexOf(':');
      if (colon <= 0) throw invalidParameter('facets', `Invalid facet expression '${expression}'.`);
      settings.set(param.slice(0, colon), param.slice(colon + 1));
    }
    for (const key of settings.keys()) {
      if (key === 'interval' || key === 'values' || key === 'timeoffset')
        throw new SearchServiceError(400, `The facet parameter '${key}' is not supported by the Azure AI Search test server.`);
      if (!['count', 'sort', 'metric', 'default'].includes(key))
        throw invalidParameter('facets', `Invalid facet parameter '${key}' in '${expression}'.`);
    }
    const metric = settings.get('metric');
    if (metric !== undefined && !['sum', 'min', 'max', 'avg'].includes(metric))
      throw invalidParameter('facets', `Invalid facet metric '${metric}' in '${expression}'.`);
    const count = Number(settings.get('count') ?? 10);
    if (!Number.isInteger(count) || count < 0) throw invalidParameter('facets', `Invalid facet count in '${expression}'.`);
    const sort = settings.get('sort') ?? 'count';
    if (!['count', '-count', 'value', '-value'].includes(sort))
      throw invalidParameter('facets', `Invalid facet sort '${sort}' in '${expression}'.`);
    return { name, metric, count, sort, fallback: settings.has('default') ? Number(settings.get('default')) : undefined };
  });
  return (documents) => {
    const out: JsonObject = {};
    for (const spec of specs) {
      const values = documents.flatMap((d) => {
        const v = d[spec.name];
        return Array.isArray(v) ? v : v === undefined || v === null ? [] : [v];
      });
      if (spec.metric) {
        const numbers = documents
          .map((d) => d[spec.name])
          .map((v) => (typeof v === 'number' ? v : spec.fallback))
          .filter((v): v is number => typeof v === 'number');
        const total = numbers.reduce((a, b) => a + b, 0);
        const result =
          spec.metric === 'sum'
            ? total
            : spec.metric === 'avg'
              ? numbers.length
                ? total / numbers.length
                : null
              : numbers.length
                ? Math[spec.metric as 'min' | 'max'](...numbers)
                : null;
        out[spec.name] = [{ [spec.metric]: result }];
        continue;
      }
      const counts = new Map<string | number | boolean, number>();
      for (const v of values) if (typeof v !== 'object') counts.set(v, (counts.get(v) ?? 0) + 1);
      const buckets = [...counts].map(([v, count]) => ({ count, value: v }));
      const byValue = (a: { value: string | number | boolean }, b: { value: string | number | boolean }) =>
        a.value < b.value ? -1 : a.value > b.value ? 1 : 0;
      buckets.sort((a, b) => {
        if (spec.sort === 'value') return byValue(a, b);
        if (spec.sort === '-value') return byValue(b, a);
        const diff = spec.sort === '-count' ? a.count - b.count : b.count - a.count;
        return diff || byValue(a, b);
      });
      out[spec.name] = buckets.slice(0, spec.count);
    }
    return out;
  };
}

function keywordSearch(store: IndexStore, candidates: StoredDocument[], documentCount: number, text: string, body: JsonObject): Ranked[] {
  const { definition } = store;
  const terms = [...new Set(analyze(text))];
  const searchable = definition.fields
    .filter((f) => f.searchable && (f.type === 'Edm.String' || f.type === 'Collection(Edm.String)'))
    .map((f) => f.name);
  const searchFieldsParam = optionalString(body.searchFields, 'searchFields');
  let fields = searchable;
  if (searchFieldsParam !== undefined && searchFieldsParam.trim() !== '') {
    fields = searchFieldsParam.split(',').map((f) => f.trim());
    for (const f of fields) {
      if (!definition.fields.some((d) => d.name === f))
        throw invalidParameter('searchFields', `Invalid expression: Could not find a property named '${f}' on type 'search.document'.`);
      if (!searchable.includes(f)) throw invalidParameter('searchFields', `The field '${f}' is not searchable.`);
    }
  }
  const mode = optionalString(body.searchMode, 'searchMode') ?? 'any';
  if (mode !== 'any' && mode !== 'all') throw invalidParameter('searchMode', `Invalid value '${mode}'.`);
  if (terms.length === 0) return [];

  // Statistics over the whole index, as Lucene keeps them (not only over filtered documents).
  const stats = new Map<string, { averageLength: number; df: Map<string, number> }>();
  for (const field of fields) {
    let totalLength = 0;
    const df = new Map<string, number>(terms.map((t) => [t, 0]));
    for (const stored of store.documents.values()) {
      const tokens = stored.terms.get(field) ?? [];
      totalLength += tokens.length;
      const seen = new Set(tokens);
      for (const t of terms) if (seen.has(t)) df.set(t, df.get(t)! + 1);
    }
    stats.set(field, { averageLength: documentCount ? totalLength / documentCount : 0, df });
  }
  const ranked: Ranked[] = [];
  for (const stored of candidates) {
    let score = 0;
    const matched = new Set<string>();
    for (const field of fields) {
      const tokens = stored.terms.get(field) ?? [];
      if (tokens.length === 0) continue;
      const { averageLength, df } = stats.get(field)!;
      const tf = new Map<string, number>();
      for (const token of tokens) if (df.has(token)) tf.set(token, (tf.get(token) ?? 0) + 1);
      for (const [term, frequency] of tf) {
        matched.add(term);
        score += bm25Term(frequency, tokens.length, averageLength, idf(documentCount, df.get(term)!));
      }
    }
    if (matched.size === 0 || (mode === 'all' && matched.size < terms.length)) continue;
    ranked.push({ stored, score });
  }
  return sortByScore(ranked);
}

function knn(pool: StoredDocument[], field: string, query: readonly number[], metric: string, k: number): Ranked[] {
  const scored: Ranked[] = [];
  for (const stored of pool) {
    const vector = stored.document[field];
    if (!Array.isArray(vector) || vector.length !== query.length) continue;
    scored.push({ stored, score: similarityScore(vector as number[], query, metric) });
  }
  return sortByScore(scored).slice(0, k);
}

/**
 * `@search.score` of a vector match, as the service defines it per metric: cosine
 * `1 / (1 + (1 - cosine))`, euclidean `1 / (1 + distance)`, dotProduct the dot product itself
 * (higher is closer; the service uses it as is).
 */
export function similarityScore(a: readonly number[], b: readonly number[], metric: string): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  let squared = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    dot += x * y;
    na += x * x;
    nb += y * y;
    squared += (x - y) ** 2;
  }
  if (metric === 'euclidean') return 1 / (1 + Math.sqrt(squared));
  if (metric === 'dotProduct') return dot;
  const cosine = na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
  return 1 / (1 + (1 - cosine));
}

/** Reciprocal rank fusion: each list adds weight / (60 + rank), ranks from 1. */
function fuse(lists: { ranked: Ranked[]; weight: number }[]): Ranked[] {
  const scores = new Map<StoredDocument, number>();
  for (const { ranked, weight } of lists) {
    ranked.slice(0, MAX_TEXT_RECALL).forEach((r, i) => scores.set(r.stored, (scores.get(r.stored) ?? 0) + weight / (RRF_K + i + 1)));
  }
  return sortByScore([...scores].map(([stored, score]) => ({ stored, score })));
}

function sortByScore(ranked: Ranked[]): Ranked[] {
  return ranked.sort((a, b) => b.score - a.score);
}

function orderBy(store: IndexStore, results: Ranked[], clause: string): Ranked[] {
  const keys = clause.split(',').map((part) => {
    const [name = '', direction = 'asc', extra] = part.trim().split(/\s+/);
    if (extra !== undefined || (direction !== 'asc' && direction !== 'desc'))
      throw invalidParameter('$orderby', `Invalid expression: Syntax error in '${clause}'.`);
    if (name === 'search.score()') return { name, desc: direction === 'desc' };
    const field = store.definition.fields.find((f) => f.name === name);
    if (!field)
      throw invalidParameter('$orderby', `Invalid expression: Could not find a property named '${name}' on type 'search.document'.`);
    if (!field.sortable)
      throw invalidParameter(
        '$orderby',
        `Invalid expression: '${name}' is not a sortable field. Only sortable fields can be used in $orderby expressions.`,
      );
    return { name, desc: direction === 'desc' };
  });
  const value = (r: Ranked, name: string): JsonValue => (name === 'search.score()' ? r.score : (r.stored.document[name] ?? null));
  return [...results].sort((a, b) => {
    for (const { name, desc } of keys) {
      const x = value(a, name);
      const y = value(b, name);
      if (x === y) continue;
      // Nulls sort first ascending, last descending, as on the service.
      const cmp = x === null ? -1 : y === null ? 1 : (x as number | string) < (y as number | string) ? -1 : 1;
      return desc ? -cmp : cmp;
    }
    return b.score - a.score;
  });
}

function parseSelect(store: IndexStore, value: JsonValue | undefined): string[] | undefined {
  const text = optionalString(value, 'select');
  if (text === undefined || text.trim() === '' || text.trim() === '*') return undefined;
  const names = text.split(',').map((s) => s.trim());
  for (const name of names) {
    const field = store.definition.fields.find((f) => f.name === name);
    if (!field)
      throw invalidParameter('$select', `Invalid expression: Could not find a property named '${name}' on type 'search.document'.`);
    if (!field.retrievable)
      throw invalidParameter(
        '$select',
        `Invalid expression: '${name}' is not a retrievable field. Only retrievable fields can be selected.`,
      );
  }
  return names;
}

function optionalString(value: JsonValue | undefined, name: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalidParameter(name, `The parameter '${name}' must be a string.`);
  return value;
}

function integer(value: JsonValue | undefined, name: string, min: number, max: number): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalidParameter(`$${name}`, `The parameter '${name}' must be an integer between ${min} and ${max}.`);
  }
  return value;
}

function clip(text: string, maxLength: number | undefined): string {
  return maxLength !== undefined && Number.isFinite(maxLength) && text.length > maxLength ? text.slice(0, maxLength) : text;
}
