import { AzureKeyCredential, SearchClient, SearchIndexClient } from '@azure/search-documents';
import {
  AzureAISearchContextProvider,
  createSearchIndex,
  EXAMPLE_INDEX_FIELDS,
  uploadSearchDocuments,
  type SearchDocumentInput,
} from '@ctx/azure-search';
import { startAzureSearchTestServer, type AzureSearchTestServer } from '@ctx/azure-search-test-server';
import { createAgent, createAuditProvider, Message, type AgentEvent, type ChatClient, type ContextAudit } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';

/** The knowledge base the example indexes. */
export const DOCUMENTS: SearchDocumentInput[] = [
  {
    id: 'refunds',
    title: 'Refund policy',
    url: 'https://acme.example/refunds',
    content: 'Acme refunds purchases within 30 days of delivery. Refunds go back to the original payment method within 5 business days.',
  },
  {
    id: 'shipping',
    title: 'Shipping',
    url: 'https://acme.example/shipping',
    content: 'Orders ship within 2 business days. Express shipping arrives the next business day in most cities.',
  },
  {
    id: 'warranty',
    title: 'Warranty',
    url: 'https://acme.example/warranty',
    content: 'Every Acme kettle has a two year warranty. A warranty claim needs the serial number and the receipt.',
  },
  {
    id: 'returns',
    title: 'Returning an item',
    url: 'https://acme.example/returns',
    content: 'To return an item, print the return label from your order page. A refund starts when the item reaches our warehouse.',
  },
];

/** The questions the example asks, one run each. */
export const QUESTIONS = ['How long do refunds take?', 'Is there a warranty on the kettle?'];

/** Where the index lives: the local server (offline), or a real service from the environment. */
export interface SearchTarget {
  endpoint: string;
  apiKey: string;
  /** The local server, when the example started one. */
  local?: AzureSearchTestServer;
  close(): Promise<void>;
}

/** A real service when `AZURE_SEARCH_ENDPOINT` and `AZURE_SEARCH_KEY` are set (an admin key: the example creates its index), else the local server on 127.0.0.1. */
export async function searchTarget(env: NodeJS.ProcessEnv = process.env): Promise<SearchTarget> {
  if (env.AZURE_SEARCH_ENDPOINT && env.AZURE_SEARCH_KEY)
    return { endpoint: env.AZURE_SEARCH_ENDPOINT, apiKey: env.AZURE_SEARCH_KEY, close: async () => {} };
  const local = await startAzureSearchTestServer();
  return { endpoint: local.endpoint, apiKey: local.apiKey, local, close: () => local.close() };
}

/**
 * Offline model: answers with the first sentence of the best retrieved passage and cites it by its
 * `[n]`, as a real model is asked to; without retrieved context it says it does not know.
 */
export function createScriptedModel(): ChatClient {
  return new ScriptedChatClient({
    replies: (messages) => {
      const context = messages.find((m) => Message.source(m)?.sourceId === 'azure-search');
      const passage = context && /\[1\] ([^\n]*)\n(?:Answer: )?([^.\n]*\.)/.exec(Message.text(context));
      return passage ? `${passage[2]} [1] (${passage[1]})` : 'I do not know; the knowledge base had nothing on that.';
    },
  });
}

/** What one run of the example printed and found, for the test. */
export interface RagRun {
  question: string;
  answer: string;
  /** The ids the injected context message cites, in order. */
  cited: string[];
  audit: ContextAudit;
  diagnostics: Extract<AgentEvent, { type: 'provider-diagnostic' }>[];
}

/**
 * Creates the index, loads `DOCUMENTS`, and asks `QUESTIONS` of an agent whose context comes from
 * Azure AI Search (semantic ranking with captions and answers, highlights). Against the local server
 * it then asks once more while the semantic ranker is overloaded, to show the 206 partial answer.
 */
export async function runRag(options: { client: ChatClient; target: SearchTarget; indexName?: string; print?: (line: string) => void }) {
  const { client, target } = options;
  const print = options.print ?? (() => {});
  const indexName = options.indexName ?? 'ctx-rag-example';
  const credential = new AzureKeyCredential(target.apiKey);
  const clientOptions = { allowInsecureConnection: target.endpoint.startsWith('http://') };
  await createSearchIndex(new SearchIndexClient(target.endpoint, credential, clientOptions), { name: indexName });
  await uploadSearchDocuments(new SearchClient<object>(target.endpoint, indexName, credential, clientOptions), DOCUMENTS);
  print(`Indexed ${DOCUMENTS.length} documents into "${indexName}" at ${target.endpoint}.`);

  const knowledge = new AzureAISearchContextProvider({
    endpoint: target.endpoint,
    indexName,
    apiKey: target.apiKey,
    clientOptions,
    fields: EXAMPLE_INDEX_FIELDS,
    queryMode: 'semantic',
    semantic: { captions: true, answers: true },
    highlight: { fields: ['content'] },
    minScore: 1, // on the reranker's scale (0-4); results the ranker could not score are kept and reported
    topK: 3,
  });
  let audit: ContextAudit | undefined;
  let cited: string[] = [];
  const events: AgentEvent[] = [];
  const agent = createAgent({
    client,
    instructions: 'Answer from the retrieved context only, and cite what you use by its [n].',
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

  const ask = async (question: string): Promise<RagRun> => {
    const from = events.length;
    cited = [];
    const reply = await agent.run(question, { session: agent.createSession() });
    const diagnostics = events
      .slice(from)
      .filter((e): e is RagRun['diagnostics'][number] => e.type === 'provider-diagnostic' && e.code !== 'context-audit');
    const run = { question, answer: reply.text, cited, audit: audit!, diagnostics };
    printRun(run, print);
    return run;
  };

  const runs: RagRun[] = [];
  for (const question of QUESTIONS) runs.push(await ask(question));
  if (target.local) {
    print('\nThe semantic ranker is overloaded for the next question (the service answers 206 with base results):');
    target.local.failSemanticRanker({ reason: 'capacityOverloaded', times: 1 });
    runs.push(await ask(QUESTIONS[0]!));
  }
  return runs;
}

function printRun(run: RagRun, print: (line: string) => void): void {
  print(`\nQ: ${run.question}\nA: ${run.answer}`);
  print(`Cited: ${run.cited.join(', ') || '(nothing)'}`);
  for (const d of run.diagnostics) print(`Diagnostic ${d.code}: ${d.message}`);
  print(`What entered the prompt (${run.audit.totalTokens} tokens):`);
  for (const s of run.audit.sources)
    print(
      `  ${s.sourceId.padEnd(13)} ${String(s.tokens).padStart(4)} tokens  ${s.messages} message(s), ${s.instructions} instruction(s), ${s.tools} tool(s)`,
    );
}
