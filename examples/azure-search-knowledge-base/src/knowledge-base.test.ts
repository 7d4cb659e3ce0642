import { describe, expect, it } from 'vitest';
import { createScriptedModel, DOCUMENTS, knowledgeBaseTarget, QUESTIONS, runKnowledgeBase } from './knowledge-base.js';

describe('azure-search-knowledge-base example', () => {
  it("answers from the knowledge base with the tenant's citations, prints the per-source audit and the activity, and shows the 206", async () => {
    const target = await knowledgeBaseTarget({});
    const lines: string[] = [];
    try {
      const runs = await runKnowledgeBase({ client: createScriptedModel(), target, print: (line) => lines.push(line) });
      expect(runs.map((r) => r.question)).toEqual([...QUESTIONS, QUESTIONS[0]]);
      const [refunds, warranty, partial] = runs;
      expect(refunds!.cited[0]).toBe('acme-refunds');
      expect(refunds!.answer).toBe(`${DOCUMENTS[0]!.content.split('. ')[0]}. [1]`);
      expect(warranty!.cited[0]).toBe('acme-warranty');
      // Tenant acme never sees globex's documents.
      expect(runs.flatMap((r) => r.cited).some((id) => id.startsWith('globex'))).toBe(false);
      for (const run of runs) {
        expect(run.audit.sources.map((s) => s.sourceId)).toEqual(['agent', 'azure-search-knowledge-base', 'input']);
        expect(run.activity!.activity.map((a) => a.knowledgeSourceName)).toEqual(['ks-support-docs', 'ks-support-wiki']);
      }
      expect(refunds!.diagnostics.map((d) => d.code)).toEqual(['azure-search-knowledge-activity']);
      expect(partial!.diagnostics.map((d) => d.code)).toEqual(['azure-search-knowledge-activity', 'azure-search-knowledge-partial']);
      expect(partial!.cited).toEqual(['acme-refunds']);
      const auditLine = new RegExp(`^ {2}azure-search-knowledge-base +${refunds!.audit.sources[1]!.tokens} tokens {2}1 message\\(s\\)`);
      expect(lines.some((l) => auditLine.test(l))).toBe(true);
      expect(lines).toContain(`  #0 searchIndex ks-support-docs "How long do refunds take?" filter tenantId eq 'acme', 1 document(s)`);
      expect(
        lines.some((l) =>
          l.startsWith(
            'Diagnostic azure-search-knowledge-partial: Knowledge base "ctx-support-kb" answered partially (206): knowledge source "ks-support-wiki" failed',
          ),
        ),
      ).toBe(true);
    } finally {
      await target.close();
    }
  });
});
