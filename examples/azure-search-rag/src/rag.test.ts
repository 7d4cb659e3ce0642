import { describe, expect, it } from 'vitest';
import { createScriptedModel, DOCUMENTS, QUESTIONS, runRag, searchTarget } from './rag.js';

describe('azure-search-rag example', () => {
  it('answers from the index with citations, prints the per-source audit, and shows the 206 partial answer', async () => {
    const target = await searchTarget({});
    const lines: string[] = [];
    try {
      const runs = await runRag({ client: createScriptedModel(), target, print: (line) => lines.push(line) });
      expect(runs.map((r) => r.question)).toEqual([...QUESTIONS, QUESTIONS[0]]);
      const [refunds, warranty, overloaded] = runs;
      expect(refunds!.cited[0]).toBe('refunds');
      expect(refunds!.answer).toBe(`${DOCUMENTS[0]!.content.split('.')[0]}. [1] (Refund policy (https://acme.example/refunds))`);
      expect(warranty!.cited[0]).toBe('warranty');
      expect(warranty!.answer).toMatch(/two year warranty\. \[1\]/);
      for (const run of runs) {
        expect(run.audit.sources.map((s) => s.sourceId)).toEqual(['agent', 'azure-search', 'input']);
        expect(run.audit.sources[1]!.messages).toBe(1);
      }
      expect(refunds!.diagnostics).toEqual([]);
      // Overloaded: base results, not dropped by the reranker-scale minScore, and a diagnostic saying so.
      expect(overloaded!.cited).toContain('refunds');
      expect(overloaded!.diagnostics.map((d) => d.code)).toEqual(['azure-search-partial']);
      const auditLine = new RegExp(`^ {2}azure-search +${refunds!.audit.sources[1]!.tokens} tokens {2}1 message\\(s\\)`);
      expect(lines.some((l) => auditLine.test(l))).toBe(true);
      expect(
        lines.some((l) => l.startsWith('Diagnostic azure-search-partial: Azure AI Search index "ctx-rag-example" answered partially')),
      ).toBe(true);
    } finally {
      await target.close();
    }
  });
});
