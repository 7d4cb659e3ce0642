import { AzureKeyCredential, SearchClient, SearchIndexClient } from '@azure/search-documents';
import {
  AzureAISearchKnowledgeBaseProvider,
  createSearchIndex,
  uploadSearchDocuments,
  type KnowledgeBaseActivitySummary,
  type SearchDocumentInput,
} from '@ctx/azure-search';
import { startAzureSearchTestServer, type AzureSearchTestServer } from '@ctx/azure-search-test-server';
import { createAgent, createAuditProvider, Message, type AgentEvent, type ChatClient, type ContextAudit } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';

/** The documents the local knowledge source's index holds, for two tenants. */
export const DOCUMENTS: (SearchDocumentInput & { tenantId: string })[] = [
  {
    id: 'acme-refunds',
    tenantId: 'acme',
    title: 'Refund policy',
    url: 'https://acme.example/refunds',
    content: 'Acme refunds purchases within 30 days of delivery. Refunds go back to the original payment method.',
  },
  {
    id: 'acme-warranty',
    tenantId: 'acme',
    title: 'Warranty',
    url: 'https://acme.example/warranty',
    content: 'Every Acme kettle has a two year warranty. A warranty claim needs the serial number and the receipt.',
  },
  {
    id: 'globex-refunds',
    tenantId: 'globex',
    title: 'Refund policy',
    url: 'https://globex.example/refunds',
    content: 'Globex refunds unopened boxes within 14 days. Opened software is never refunded.',
  },
];

/** The local wiki knowledge source's documents. */
export const WIKI: (SearchDocumentInput & { tenantId: string })[] = [
  {
    id: 'acme-wiki-refund-howto',
    tenantId: 'acme',
    title: 'How to refund an order',
    url: 'https://wiki.acme.example/refunds',
    content: 'Support agents start refunds from the order page; the customer gets an email when it is paid.',
  },
];

/** The questions the example asks as tenant `acme`, one run each. */
export const QUESTIONS = ['How long do refunds take?', 'Is there a warranty on the kettle?'];

/** The knowledge base and its knowledge source (local names). */
export const KNOWLEDGE_BASE = 'ctx-support-kb';
export const KNOWLEDGE_SOURCE = 'ks-support-docs';
export const WIKI_SOURCE = 'ks-support-wiki';

/** Where the knowledge base lives: the local server (offline), or a real service from the environment. */
export interface KnowledgeBaseTarget {
  endpoint: string;
  apiKey: string;
  knowledgeBaseName: string;
  /** The knowledge sources the provider filters by tenant (every one of the base). */
  knowledgeSourceNames: string[];
  /** The local server, when the example started one. */
  local?: AzureSearchTestServer;
  close(): Promise<void>;
}

/**
 * A real knowledge base when `AZURE_SEARCH_ENDPOINT`, `AZURE_SEARCH_KEY`, `AZURE_SEARCH_KNOWLEDGE_BASE`
 * and `AZURE_SEARCH_KNOWLEDGE_SOURCE` (its searchIndex sources, comma-separated) are set (it must
 * exist, over indexes with a filterable `tenantId` field),
 * else the local server on 127.0.0.1 with the example's index and knowledge base.
 */
export async function knowledgeBaseTarget(env: NodeJS.ProcessEnv = process.env): Promise<KnowledgeBaseTarget> {
  const { AZURE_SEARCH_ENDPOINT, AZURE_SEARCH_KEY, AZURE_SEARCH_KNOWLEDGE_BASE, AZURE_SEARCH_KNOWLEDGE_SOURCE } = env;
  if (AZURE_SEARCH_ENDPOINT && AZURE_SEARCH_KEY && AZURE_SEARCH_KNOWLEDGE_BASE && AZURE_SEARCH_KNOWLEDGE_SOURCE)
    return {
      endpoint: AZURE_SEARCH_ENDPOINT,
      apiKey: AZURE_SEARCH_KEY,
      knowledgeBaseName: AZURE_SEARCH_KNOWLEDGE_BASE,
      knowledgeSourceNames: AZURE_SEARCH_KNOWLEDGE_SOURCE.split(',').map((name) => name.trim()),
      close: async () => {},
    };
  const local = await startAzureSearchTestServer();
  const credential = new AzureKeyCredential(local.apiKey);
  const clientOptions = { allowInsecureConnection: true };
  const indexes = new SearchIndexClient(local.endpoint, credential, clientOptions);
  for (const [name, documents] of [
    ['ctx-support-docs', DOCUMENTS],
    ['ctx-support-wiki', WIKI],
  ] as const) {
    await createSearchIndex(indexes, { name, filterableFields: ['tenantId'] });
    await uploadSearchDocuments(new SearchClient<object>(local.endpoint, name, credential, clientOptions), documents);
  }
  local.createKnowledgeBase({
    name: KNOWLEDGE_BASE,
    knowledgeSources: [
      { name: KNOWLEDGE_SOURCE, indexName: 'ctx-support-docs' },
      { name: WIKI_SOURCE, indexName: 'ctx-support-wiki' },
    ],
  });
  return {
    endpoint: local.endpoint,
    apiKey: local.apiKey,
    knowledgeBaseName: KNOWLEDGE_BASE,
    knowledgeSourceNames: [KNOWLEDGE_SOURCE, WIKI_SOURCE],
    local,
    close: () => local.close(),
  };
}

/** Offline model: answers with the first passage of the grounding and cites it as `[1]`. */
export function createScriptedModel(): ChatClient {
  return new ScriptedChatClient({
    replies: (messages) => {
      const context = messages.find((m) => Message.source(m)?.sourceId === 'azure-search-knowledge-base');
      const extracts = context ? /"content":"([^"]*?\.)/.exec(Message.text(context)) : null;
      return extracts ? `${extracts[1]} [1]` : 'I do not know; the knowledge base had nothing on that.';
    },
  });
}

/** What one run of the example printed and found, for the test. */
export interface KnowledgeBaseRun {
  question: string;
  answer: string;
  /** The document keys the added context cites, in order. */
  cited: string[];
  audit: ContextAudit;
  activity: KnowledgeBaseActivitySummary | undefined;
  diagnostics: Extract<AgentEvent, { type: 'provider-diagnostic' }>[];
}

/**
 * Asks `QUESTIONS` as tenant `acme` of an agent grounded by the knowledge base (the tenant's filter
 * on the knowledge source), printing each answer, the per-source audit and the retrieval activity.
 * Against the local server it then asks once more while a second knowledge source fails, to show
 * the 206 partial answer.
 */
export async function runKnowledgeBase(options: { client: ChatClient; target: KnowledgeBaseTarget; print?: (line: string) => void }) {
  const { client, target } = options;
  const print = options.print ?? (() => {});
  const knowledge = new AzureAISearchKnowledgeBaseProvider({
    endpoint: target.endpoint,
    apiKey: target.apiKey,
    knowledgeBaseName: target.knowledgeBaseName,
    clientOptions: target.local ? { allowInsecureConnection: true } : {},
    knowledgeSources: target.knowledgeSourceNames.map((name) => ({ name })),
    // Each user sees their tenant's documents only: the filter goes on every knowledge source.
    scope: ({ session }) => ({ tenantId: session?.state.profile?.tenantId as string }),
    citationFields: ['tenantId'],
    maxOutputSizeInTokens: 2000,
  });
  let audit: ContextAudit | undefined;
  let cited: string[] = [];
  const events: AgentEvent[] = [];
  const agent = createAgent({
    client,
    instructions: 'Answer from the knowledge base grounding only, and cite what you use by its [n].',
    contextProviders: [
      knowledge,
      // Last, so it sees everything the model will receive.
      createAuditProvider({
        onAudit: (a, { context }) => {
          audit = a;
          const [message] = context.getMessages({ sources: [knowledge.sourceId] });
          cited = ((message?.metadata?.citations ?? []) as { id: string }[]).map((c) => c.id);
        },
      }),
    ],
    onEvent: (event) => events.push(event),
  });

  const ask = async (question: string): Promise<KnowledgeBaseRun> => {
    const from = events.length;
    cited = [];
    const reply = await agent.run(question, { session: agent.createSession({ state: { profile: { tenantId: 'acme' } } }) });
    const diagnostics = events
      .slice(from)
      .filter((e): e is KnowledgeBaseRun['diagnostics'][number] => e.type === 'provider-diagnostic' && e.code !== 'context-audit');
    const activity = diagnostics.find((d) => d.code === 'azure-search-knowledge-activity')?.data as
      | KnowledgeBaseActivitySummary
      | undefined;
    const run: KnowledgeBaseRun = { question, answer: reply.text, cited, audit: audit!, activity, diagnostics };
    printRun(run, print);
    return run;
  };

  const runs: KnowledgeBaseRun[] = [];
  for (const question of QUESTIONS) runs.push(await ask(question));
  if (target.local) {
    print('\nThe wiki knowledge source fails for the next question (the service answers 206 with what the other source found):');
    target.local.failKnowledgeSource(WIKI_SOURCE, { code: '503', message: 'The wiki index is being rebuilt.' });
    runs.push(await ask(QUESTIONS[0]!));
    target.local.clearFaults();
  }
  return runs;
}

function printRun(run: KnowledgeBaseRun, print: (line: string) => void): void {
  print(`\nQ: ${run.question}\nA: ${run.answer}`);
  print(`Cited: ${run.cited.join(', ') || '(nothing)'}`);
  for (const d of run.diagnostics) if (d.code !== 'azure-search-knowledge-activity') print(`Diagnostic ${d.code}: ${d.message}`);
  print(`What entered the prompt (${run.audit.totalTokens} tokens):`);
  for (const s of run.audit.sources)
    print(`  ${s.sourceId.padEnd(28)} ${String(s.tokens).padStart(4)} tokens  ${s.messages} message(s), ${s.instructions} instruction(s)`);
  const a = run.activity;
  if (!a) return;
  print(`Retrieval activity (${a.status}, ${a.elapsedMs} ms in the service):`);
  for (const record of a.activity) {
    const args = record.searchIndexArguments as { search?: string; filter?: string } | undefined;
    const what = args ? ` "${args.search}"${args.filter ? ` filter ${args.filter}` : ''}` : '';
    const error = record.error ? ` failed: ${(record.error as { message?: string }).message}` : '';
    print(
      `  #${String(record.id)} ${String(record.type)}${record.knowledgeSourceName ? ` ${String(record.knowledgeSourceName)}` : ''}${what}${typeof record.count === 'number' ? `, ${record.count} document(s)` : ''}${error}`,
    );
  }
}
