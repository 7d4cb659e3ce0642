import { project, type IndexStore, type StoredDocument } from './documents.js';
import { invalidParameter, invalidRequest, SearchServiceError } from './errors.js';
import { isObject, lookupField, type Vectorizer } from './index-definition.js';
import { parseFilter, type Predicate } from './odata-filter.js';
import { highlight, judge, parseSemanticOption, type SemanticJudgement } from './semantic.js';
import { analyze, bm25Term, idf } from './text-analysis.js';
import type { JsonObject, JsonValue } from './types.js';

/** Embeds the text of a `kind: 'text'` vector query with the field's vectorizer. */
export type Vectorize = (vectorizer: Vectorizer, text: string, dimensions: number) => Promise<number[]>;

/** Reciprocal rank fusion constant the service uses. */
export const RRF_K = 60;
/** Text results that take part in a hybrid fusion (the service's `maxTextRecallSize` default). */
export const MAX_TEXT_RECALL = 1000;
/** How many results the semantic ranker reranks. */
export const SEMANTIC_WINDOW = 50;
const DEFAULT_TOP = 50;
const MAX_TOP = 1000;

const KNOWN = new Set([
  'count',
  'facets',
  'filter',
  'highlight',
  'highlightPostTag',
  'highlightPreTag',
  'minimumCoverage',
  'orderby',
  'queryType',
  'scoringStatistics',
  'sessionId',
  'scoringParameters',
  'scoringProfile',
  'debug',
  'search',
  'searchFields',
  'searchMode',
  'select',
  'skip',
  'top',
  'semanticConfiguration',
  'semanticErrorHandling',
  'semanticMaxWaitInMilliseconds',
  'semanticQuery',
  'answers',
  'captions',
  'vectorQueries',
  'vectorFilterMode',
  'queryLanguage',
  'speller',
  'semanticFields',
  'hybridSearch',
  'queryRewrites',
]);
/** Accepted by the service but not implemented here: a request using them gets a 400 saying so, never a silently different answer. */
const UNSUPPORTED = [
  'facets',
  'highlight',
  'scoringProfile',
  'scoringParameters',
  'speller',
  'queryRewrites',
  'semanticFields',
  'hybridSearch',
];

interface Ranked {
  stored: StoredDocument;
  score: number;
  semantic?: SemanticJudgement;
}

/**
 * Runs one `docs/search.post.search` request: filter, keyword (BM25), vector (exact k-nearest
 * neighbours), hybrid (reciprocal rank fusion), `orderby`, semantic reranking with captions and
 * answers, `count`, `skip`/`top`, `select`. Returns the reply body.
 * @throws SearchServiceError (400) for what the service rejects.
 */
export async function search(store: IndexStore, body: JsonObject, vectorize: Vectorize): Promise<JsonObject> {
  for (const name of Object.keys(body)) {
    if (!KNOWN.has(name))
      throw invalidRequest(
        `parameters : The parameter '${name}' in the request payload is not a valid parameter for the operation 'search'.`,
      );
    const value = body[name];
    if (
      UNSUPPORTED.includes(name) &&
      value !== null &&
      value !== undefined &&
      !(name === 'hybridSearch' && isObject(value) && Object.keys(value).length === 0)
    ) {
      throw new SearchServiceError(400, `The parameter '${name}' is not supported by the Azure AI Search test server.`);
    }
  }
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
    const k = raw.k === undefined || raw.k === null ? DEFAULT_TOP : raw.k;
    if (typeof k !== 'number' || !Number.isInteger(k) || k < 1 || k > MAX_TOP)
      throw invalidParameter('vectorQueries', `The 'k' of the vector query at index ${i} must be an integer between 1 and ${MAX_TOP}.`);
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
  const captionsOption = parseSemanticOption(body.captions);
  const answersOption = parseSemanticOption(body.answers);
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
    const window = results.slice(0, SEMANTIC_WINDOW).map((r) => ({ ...r, semantic: judge(config, r.stored.document, semanticQuery) }));
    window.sort((a, b) => b.semantic.rerankerScore - a.semantic.rerankerScore);
    results = window;
    if (answersOption && answersOption.kind !== 'none') {
      const count = Number(answersOption.settings.get('count') ?? 1);
      const threshold = Number(answersOption.settings.get('threshold') ?? 0.7);
      const maxLength = answersOption.settings.has('maxcharlength') ? Number(answersOption.settings.get('maxcharlength')) : undefined;
      answers = results
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
    if (captionsOption && captionsOption.kind !== 'none') {
      const withHighlights = captionsOption.settings.get('highlight') !== 'false';
      const maxLength = captionsOption.settings.has('maxcharlength') ? Number(captionsOption.settings.get('maxcharlength')) : undefined;
      for (const r of results) {
        const passage = r.semantic!.bestPassage;
        if (passage === undefined) continue;
        const text = clip(passage, maxLength);
        (r as Ranked & { captions?: JsonObject[] }).captions = [{ text, highlights: withHighlights ? highlight(text, semanticQuery) : '' }];
      }
    }
  } else {
    const asked =
      answersOption && answersOption.kind !== 'none'
        ? 'answers'
        : captionsOption && captionsOption.kind !== 'none'
          ? 'captions'
          : undefined;
    if (asked) throw invalidParameter(asked, `'${asked}' can only be requested when 'queryType' is 'semantic'.`);
  }

  const select = parseSelect(store, body.select);
  const skip = integer(body.skip, 'skip', 0, 100_000) ?? 0;
  const top = integer(body.top, 'top', 0, MAX_TOP) ?? (lists.length > 0 && !textQuery ? maxK : DEFAULT_TOP);
  const page = results.slice(skip, skip + top);
  const value = page.map((r) => {
    const out: JsonObject = { '@search.score': r.score };
    if (r.semantic) out['@search.rerankerScore'] = r.semantic.rerankerScore;
    const captions = (r as Ranked & { captions?: JsonObject[] }).captions;
    if (captions) out['@search.captions'] = captions;
    return Object.assign(out, project(definition, r.stored.document, select));
  });
  const reply: JsonObject = {};
  if (body.count === true) reply['@odata.count'] = results.length;
  if (answers) reply['@search.answers'] = answers;
  reply.value = value;
  return reply;
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
