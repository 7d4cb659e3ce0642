/**
 * `AzureAISearchKnowledgeBaseProvider` beside a bare REST call to the same knowledge base, on the
 * local Azure AI Search server (tooling/azure-search-test-server, in this process, one knowledge
 * base over a 200-document index, a tenant filter):
 *
 * - bare REST: `fetch` of `POST /knowledgebases('kb')/retrieve` with a hand-built body (intent,
 *   filterAddOn, references with source data), `JSON.parse`, and one context message made by hand
 *   from the text and the references (what a user writes without ctx);
 * - `provider.retrieve` on 2026-04-01 (through the SDK's `KnowledgeRetrievalClient`) and on
 *   2026-05-01-preview (REST, `messages` and a reasoning effort);
 * - the provider's whole `beforeRun` (scope filter, recent conversation, request, citations, the
 *   activity diagnostic, the context message).
 *
 * The sides take turns call by call, in a new shuffled order every round (seeded); each side's
 * median and p90 wall time and its ratio to the bare call are printed. Asserts nothing about timings.
 */
import { cpus, loadavg } from 'node:os';
import { pathToFileURL } from 'node:url';
import { AzureKeyCredential, KnowledgeRetrievalClient, SearchClient, SearchIndexClient } from '@azure/search-documents';
import { AzureAISearchKnowledgeBaseProvider, createSearchIndex, uploadSearchDocuments, type SearchDocumentInput } from '@ctx/azure-search';
import { startAzureSearchTestServer } from '@ctx/azure-search-test-server';
import { AgentSession, createAgent, Message, type ProviderRunArgs } from '@ctx/core';
import { createSessionContext, ScriptedChatClient } from '@ctx/core/testing';
import { fmtMs, fmtRatio, printTable, settle } from './timing.js';

const TENANTS = ['acme', 'globex', 'initech', 'umbrella'];
const TOPICS = [
  ['Refund policy', 'Refunds are issued within 30 days of delivery with the order number.'],
  ['Shipping times', 'Orders ship within 2 business days; express delivery takes 1 day.'],
  ['Warranty', 'Every kettle has a two-year warranty covering defects; keep the receipt.'],
  ['Descaling', 'Descale the kettle every month with citric acid and rinse twice.'],
  ['Gift cards', 'Gift cards are valid for three years and cannot be exchanged for cash.'],
] as const;
const QUERIES = ['How do refunds work?', 'When does my order ship?', 'Is the kettle under warranty?', 'How do I descale it?'];
const WARMUP = 50;
const ROUNDS = 300;

function corpus(): SearchDocumentInput[] {
  const out: SearchDocumentInput[] = [];
  for (let i = 0; i < 200; i++) {
    const [title, content] = TOPICS[i % TOPICS.length]!;
    const tenantId = TENANTS[i % TENANTS.length]!;
    out.push({
      id: `doc-${i}`,
      tenantId,
      title: `${title} ${i}`,
      url: `https://${tenantId}.example/${i}`,
      content: `${content} (${tenantId} #${i})`,
    });
  }
  return out;
}

interface Side {
  name: string;
  call: (query: string) => Promise<unknown>;
}

/** Runs the sides call by call in a seeded shuffled order each round; returns each side's wall-time samples in ms. */
async function compareWall(sides: readonly Side[]): Promise<number[][]> {
  const samples = sides.map(() => [] as number[]);
  const order = sides.map((_, i) => i);
  let seed = 0x9e3779b9;
  const random = () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return seed / 2 ** 32;
  };
  settle();
  for (let round = 0; round < WARMUP + ROUNDS; round++) {
    for (let k = order.length - 1; k > 0; k--) {
      const j = Math.floor(random() * (k + 1));
      [order[k], order[j]] = [order[j]!, order[k]!];
    }
    const query = QUERIES[round % QUERIES.length]!;
    for (const s of order) {
      const t0 = process.hrtime.bigint();
      await sides[s]!.call(query);
      if (round >= WARMUP) samples[s]!.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  }
  return samples;
}

const quantile = (sorted: readonly number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? Number.NaN;

export async function azureSearchKnowledgeBase(): Promise<void> {
  const server = await startAzureSearchTestServer({ apiKey: 'bench-key' });
  try {
    const credential = new AzureKeyCredential('bench-key');
    const clientOptions = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };
    await createSearchIndex(new SearchIndexClient(server.endpoint, credential, clientOptions), {
      name: 'bench-kb-docs',
      filterableFields: ['tenantId'],
    });
    await uploadSearchDocuments(new SearchClient<object>(server.endpoint, 'bench-kb-docs', credential, clientOptions), corpus());
    server.createKnowledgeBase({ name: 'kb', knowledgeSources: [{ name: 'ks-docs', indexName: 'bench-kb-docs' }] });

    const common = {
      endpoint: server.endpoint,
      apiKey: 'bench-key',
      knowledgeBaseName: 'kb',
      clientOptions,
      knowledgeSources: [{ name: 'ks-docs' }],
      scope: () => ({ tenantId: 'acme' }),
    } as const;
    const ga = new AzureAISearchKnowledgeBaseProvider(common);
    const preview = new AzureAISearchKnowledgeBaseProvider({ ...common, apiVersion: '2026-05-01-preview', reasoningEffort: 'low' });
    const agent = createAgent({ client: new ScriptedChatClient({ replies: ['ok'] }) });
    const session = new AgentSession();
    const runArgs = (query: string): ProviderRunArgs => ({
      agent,
      session,
      context: createSessionContext({ sessionId: session.sessionId, inputMessages: [Message.user(query)] }),
      state: {},
      signal: new AbortController().signal,
      report: () => undefined,
      redact: async (messages) => [...messages],
    });
    const url = `${server.endpoint}/knowledgebases('kb')/retrieve?api-version=2026-04-01`;
    const bare = async (query: string) => {
      const reply = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'api-key': 'bench-key' },
        body: JSON.stringify({
          intents: [{ search: query, type: 'semantic' }],
          includeActivity: true,
          knowledgeSourceParams: [
            {
              filterAddOn: "tenantId eq 'acme'",
              knowledgeSourceName: 'ks-docs',
              includeReferences: true,
              includeReferenceSourceData: true,
              kind: 'searchIndex',
            },
          ],
        }),
      });
      if (!reply.ok) throw new Error(`bare retrieve: ${reply.status}`);
      const body = (await reply.json()) as {
        response: { content: { text: string }[] }[];
        references: { docKey: string; sourceData?: { title?: string; url?: string } }[];
      };
      const refs = body.references.map((r, i) => `[${i + 1}] ${r.sourceData?.title ?? r.docKey} (${r.sourceData?.url ?? ''})`);
      return Message.user(`${body.response[0]!.content[0]!.text}\n\nReferences:\n${refs.join('\n')}`, {
        metadata: { citations: body.references.map((r, i) => ({ n: i + 1, id: r.docKey })) },
      });
    };
    const sdkClient = new KnowledgeRetrievalClient(server.endpoint, 'kb', credential, clientOptions);
    const bareSdk = async (query: string) => {
      const body = await sdkClient.retrieve({
        intents: [{ search: query, type: 'semantic' }],
        includeActivity: true,
        knowledgeSourceParams: [
          {
            filterAddOn: "tenantId eq 'acme'",
            knowledgeSourceName: 'ks-docs',
            includeReferences: true,
            includeReferenceSourceData: true,
            kind: 'searchIndex',
          },
        ],
      });
      const references = (body.references ?? []) as { docKey?: string; sourceData?: { title?: string; url?: string } }[];
      const text = (body.response?.[0]?.content?.[0] as { text?: string } | undefined)?.text ?? '';
      const refs = references.map((r, i) => `[${i + 1}] ${r.sourceData?.title ?? r.docKey} (${r.sourceData?.url ?? ''})`);
      return Message.user(`${text}\n\nReferences:\n${refs.join('\n')}`, {
        metadata: { citations: references.map((r, i) => ({ n: i + 1, id: r.docKey ?? '' })) },
      });
    };
    const sides: Side[] = [
      { name: 'bare REST call (fetch) + hand-made context message', call: bare },
      { name: 'bare SDK KnowledgeRetrievalClient.retrieve + message', call: bareSdk },
      { name: 'provider.retrieve, 2026-04-01 (SDK)', call: (q) => ga.retrieve({ queries: [q] }, { filter: "tenantId eq 'acme'" }) },
      {
        name: 'provider.retrieve, 2026-05-01-preview (REST)',
        call: (q) => preview.retrieve({ messages: [Message.user(q)] }, { filter: "tenantId eq 'acme'" }),
      },
      { name: 'provider beforeRun (before mode)', call: (q) => ga.beforeRun(runArgs(q)) },
    ];
    // Sanity: every side finds the tenant's documents.
    const check = await ga.retrieve({ queries: ['refunds'] }, { filter: "tenantId eq 'acme'" });
    if (check.citations.length === 0 || check.citations.some((c) => !c.id.startsWith('doc-'))) throw new Error('no references');
    const samples = await compareWall(sides);
    const median = (i: number) =>
      quantile(
        [...samples[i]!].sort((a, b) => a - b),
        0.5,
      );
    // Each provider row against the bare call on the same transport: the SDK rows against the SDK, the REST row against fetch.
    const baseOf = [0, 1, 1, 0, 1];
    console.log(
      `\n@ctx/azure-search knowledge base retrieve beside a bare REST call: ${ROUNDS} calls per side (after ${WARMUP} warm-up rounds), the sides in a seeded shuffled order every round, wall ms; the local server answers in this process; load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores at the end.`,
    );
    printTable(
      ['side', 'median ms', 'p90 ms', 'against', 'added ms (median)', 'ratio'],
      sides.map((side, i) => {
        const sorted = [...samples[i]!].sort((a, b) => a - b);
        const base = baseOf[i]!;
        return [
          side.name,
          fmtMs(median(i)),
          fmtMs(quantile(sorted, 0.9)),
          base === 0 ? 'bare fetch' : 'bare SDK',
          fmtMs(median(i) - median(base)),
          fmtRatio(median(i) / median(base)),
        ];
      }),
    );
  } finally {
    await server.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await azureSearchKnowledgeBase();
