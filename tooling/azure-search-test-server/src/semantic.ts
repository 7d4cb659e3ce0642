import type { SemanticConfiguration } from './index-definition.js';
import { analyze, QUESTION_STOP_WORDS, sentences } from './text-analysis.js';
import type { JsonObject, JsonValue } from './types.js';

/** What the semantic stand-in says about one document. */
export interface SemanticJudgement {
  /** 0 (irrelevant) to 4 (highly relevant), like `@search.rerankerScore`. */
  rerankerScore: number;
  /** The passage of the content fields that covers the most query terms. */
  bestPassage: string | undefined;
  /** Share of the query's terms the best passage contains, 0..1. */
  passageCoverage: number;
}

/**
 * A deterministic stand-in for the semantic ranker (there is no language model here): the query's
 * content words (question words like "what", "is", "the" left out) are matched against the
 * configuration's title, content and keywords fields. Score =
 * 4 * (0.25 * title coverage + 0.45 * content coverage + 0.30 * best-passage coverage), where a
 * coverage is the share of query terms found. Documents that answer more of the question rank
 * higher, so tests can rely on the order; the absolute values are not the service's.
 */
export function judge(config: SemanticConfiguration, document: JsonObject, query: string): SemanticJudgement {
  const terms = queryTerms(query);
  const coverage = (text: string): number => {
    if (terms.length === 0) return 0;
    const words = new Set(analyze(text));
    let hit = 0;
    for (const t of terms) if (words.has(t)) hit++;
    return hit / terms.length;
  };
  const title = config.titleField === undefined ? '' : textOf(document[config.titleField]);
  const content = config.contentFields
    .map((f) => textOf(document[f]))
    .filter(Boolean)
    .join('\n');
  const keywords = config.keywordsFields
    .map((f) => textOf(document[f]))
    .filter(Boolean)
    .join('\n');
  let bestPassage: string | undefined;
  let passageCoverage = 0;
  for (const passage of sentences(content || title)) {
    const c = coverage(passage);
    if (bestPassage === undefined || c > passageCoverage) {
      bestPassage = passage;
      passageCoverage = c;
    }
  }
  const contentCoverage = Math.max(coverage(content), keywords ? coverage(keywords) : 0);
  const rerankerScore = 4 * (0.25 * coverage(title) + 0.45 * contentCoverage + 0.3 * passageCoverage);
  return { rerankerScore: Math.round(rerankerScore * 1e6) / 1e6, bestPassage, passageCoverage };
}

/** The query's content words, unique, in order. */
export function queryTerms(query: string): string[] {
  const all = analyze(query);
  const content = all.filter((t) => !QUESTION_STOP_WORDS.has(t));
  return [...new Set(content.length ? content : all)];
}

/** `passage` with the query's terms wrapped in `<em>...</em>`, as the service highlights. */
export function highlight(passage: string, query: string): string {
  const terms = new Set(queryTerms(query));
  return passage.replace(/[\p{L}\p{N}]+/gu, (word) => (terms.has(word.toLowerCase()) ? `<em>${word}</em>` : word));
}

/** Parses `extractive|count-3,threshold-0.7,maxcharlength-200,highlight-false`. */
export function parseSemanticOption(value: JsonValue | undefined): { kind: string; settings: Map<string, string> } | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  const [kind = '', rest] = value.split('|', 2);
  const settings = new Map<string, string>();
  for (const part of rest ? rest.split(',') : []) {
    const dash = part.lastIndexOf('-');
    if (dash > 0) settings.set(part.slice(0, dash).trim(), part.slice(dash + 1).trim());
  }
  return { kind: kind.trim(), settings };
}

function textOf(value: JsonValue | undefined): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string').join('\n');
  return '';
}
