/**
 * Text analysis like the service's default `standard.lucene` analyzer, simplified: the text is
 * split into runs of letters and digits (Unicode), lower-cased; no stop words are removed and
 * nothing is stemmed (the same as `standard.lucene`).
 */
export function analyze(text: string): string[] {
  return (
    text
      .normalize('NFKC')
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? []
  );
}

/** BM25 parameters of the service's default similarity (`BM25Similarity`, k1 = 1.2, b = 0.75). */
export const BM25 = { k1: 1.2, b: 0.75 } as const;

/** Lucene's BM25 idf: ln(1 + (N - n + 0.5) / (n + 0.5)). */
export function idf(documentCount: number, documentsWithTerm: number): number {
  return Math.log(1 + (documentCount - documentsWithTerm + 0.5) / (documentsWithTerm + 0.5));
}

/** One term's BM25 contribution in one field. */
export function bm25Term(termFrequency: number, fieldLength: number, averageFieldLength: number, termIdf: number): number {
  if (termFrequency === 0) return 0;
  const norm = BM25.k1 * (1 - BM25.b + (BM25.b * fieldLength) / (averageFieldLength || 1));
  return (termIdf * (termFrequency * (BM25.k1 + 1))) / (termFrequency + norm);
}

/** Splits text into sentences (after `.`, `!`, `?` or a line break), trimmed, without empty ones. */
export function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+|\n+/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** Words the semantic ranker stand-in ignores when matching a question to passages. */
export const QUESTION_STOP_WORDS: ReadonlySet<string> = new Set(
  'a an and are as at be by can could do does did for from has have how i in is it its me my of on or our should so that the this to us was we what when where which who why will with would you your'.split(
    ' ',
  ),
);
