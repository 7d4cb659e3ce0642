import { AzureKeyCredential, SearchClient, SearchIndexClient, type SearchClientOptions } from '@azure/search-documents';
import { startAzureSearchTestServer, type AzureSearchTestServer } from '@ctx/azure-search-test-server';
import { createAgent, Message, type AgentEvent, type ContextProvider } from '@ctx/core';
import { ScriptedChatClient, type ScriptedResponder } from '@ctx/core/testing';
import { OpenAIEmbeddings } from '@ctx/openai';
import { startOpenAITestServer, type OpenAITestServer } from '@ctx/openai-test-server';
import { afterAll, inject } from 'vitest';
import { createSearchIndex, uploadSearchDocuments, type SearchDocumentInput } from '../src/search-index.js';

/** The shared servers started by `test/global-setup.ts`. */
export const env = inject('azureSearch');

/** Vector length used in tests (small, so requests stay small). */
export const DIMS = 256;

/** Client options for the plain-http local server. */
export const insecure = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } } as const;

/** The real `OpenAIEmbeddings` of `@ctx/openai` on the OpenAI-protocol test server (deterministic vectors). */
export function embeddings(url = env.openaiUrl, apiKey = env.openaiKey): OpenAIEmbeddings {
  return new OpenAIEmbeddings({ baseURL: url, apiKey, dimensions: DIMS, maxRetries: 0 });
}

let counter = 0;
/** A fresh index name for each test (the shared server keeps every index for the whole run). */
export function uniqueIndexName(prefix: string): string {
  return `${prefix}-${process.pid}-${++counter}-${Math.random().toString(36).slice(2, 8)}`;
}

/**
 * A small multi-tenant support knowledge base. `price-match` and `price-list` are built so that
 * "and what about its price?" alone finds the price-match guarantee, while the conversation
 * before it (the Aurora kettle) finds the kettle's price list.
 */
export const KNOWLEDGE_BASE: SearchDocumentInput[] = [
  {
    id: 'acme-refunds',
    tenantId: 'acme',
    title: 'Refund policy',
    url: 'https://acme.example/refunds',
    content:
      'Acme refunds purchases within 30 days of delivery. A refund needs the order number and goes back to the original payment method.',
  },
  {
    id: 'acme-shipping',
    tenantId: 'acme',
    title: 'Shipping times',
    url: 'https://acme.example/shipping',
    content: 'Acme ships orders within 2 business days. Standard delivery takes 3 to 5 days and express delivery takes 1 day.',
  },
  {
    id: 'acme-warranty',
    tenantId: 'acme',
    title: 'Warranty',
    url: 'https://acme.example/warranty',
    content: 'Every Acme kettle has a two-year warranty covering defects in materials and workmanship.',
  },
  {
    id: 'acme-price-list',
    tenantId: 'acme',
    title: 'Aurora kettle price list',
    url: 'https://acme.example/aurora/price',
    content: 'The Aurora kettle price is 49 euros. The Aurora Pro kettle costs 79 euros and keeps water warm for an hour.',
  },
  {
    id: 'acme-kettle-specs',
    tenantId: 'acme',
    title: 'Aurora kettle specifications',
    url: 'https://acme.example/aurora',
    content: 'The Aurora kettle holds 1.7 litres, boils water in three minutes and has a stainless steel body.',
  },
  {
    id: 'acme-price-match',
    tenantId: 'acme',
    title: 'Price match guarantee',
    url: 'https://acme.example/price-match',
    content: 'Found a lower price? Acme matches the price of any local store. Send us the price and the store name.',
  },
  {
    id: 'globex-refunds',
    tenantId: 'globex',
    title: 'Refund policy',
    url: 'https://globex.example/refunds',
    content: 'Globex refunds unopened boxes within 14 days. Opened software is never refunded.',
  },
  {
    id: 'globex-merger',
    tenantId: 'globex',
    title: 'Merger plan',
    url: 'https://globex.example/confidential',
    content: 'Confidential: Globex plans to acquire Initech next quarter. Refund obligations move to Globex.',
  },
  {
    id: 'obrien-refunds',
    tenantId: "o'brien",
    title: "O'Brien refund notes",
    url: 'https://obrien.example/refunds',
    content: "O'Brien & Sons refund repairs within 7 days if the repair failed.",
  },
];

/** Creates an index like the README's example (vectors, the test OpenAI server as vectorizer, semantic config) and loads `documents`. */
export async function seedIndex(
  options: {
    name?: string;
    documents?: SearchDocumentInput[];
    endpoint?: string;
    apiKey?: string;
    openaiOrigin?: string;
    openaiUrl?: string;
    openaiKey?: string;
    clientOptions?: SearchClientOptions;
  } = {},
) {
  const name = options.name ?? uniqueIndexName('kb');
  const endpoint = options.endpoint ?? env.searchEndpoint;
  const credential = new AzureKeyCredential(options.apiKey ?? env.searchKey);
  const clientOptions = options.clientOptions ?? insecure;
  const indexClient = new SearchIndexClient(endpoint, credential, clientOptions);
  await createSearchIndex(indexClient, {
    name,
    dimensions: DIMS,
    filterableFields: ['tenantId'],
    vectorizer: {
      resourceUrl: options.openaiOrigin ?? env.openaiOrigin,
      deploymentId: 'text-embedding-3-small',
      apiKey: options.openaiKey ?? env.openaiKey,
    },
  });
  const client = new SearchClient<object>(endpoint, name, credential, clientOptions);
  await uploadSearchDocuments(client, options.documents ?? KNOWLEDGE_BASE, {
    embeddings: embeddings(options.openaiUrl ?? env.openaiUrl, options.openaiKey ?? env.openaiKey),
  });
  return { name, client, indexClient };
}

/** Local servers owned by one test file, for fault injection and request inspection; closed after the file. */
export async function startLocalBackends(): Promise<{ search: AzureSearchTestServer; openai: OpenAITestServer }> {
  const openai = await startOpenAITestServer();
  const search = await startAzureSearchTestServer();
  afterAll(async () => {
    await Promise.all([search.close(), openai.close()]);
  });
  return { search, openai };
}

/**
 * An agent over `providers` with a `ScriptedChatClient` (default: answers with the ids of the
 * citations it was given, so answers are checkable), recording every diagnostic event.
 */
export function agentWith(providers: ContextProvider[], replies?: ScriptedResponder) {
  const events: AgentEvent[] = [];
  const chat = new ScriptedChatClient({ replies: replies ?? citedIds });
  const agent = createAgent({ client: chat, contextProviders: providers, onEvent: (e) => events.push(e) });
  return { agent, chat, events };
}

/** A scripted answer naming the cited documents the model saw, e.g. `Based on acme-refunds, acme-shipping.` */
export const citedIds: ScriptedResponder = (messages) => {
  const ids = contextMessages(messages).flatMap((m) => citations(m).map((c) => c.id));
  return ids.length ? `Based on ${ids.join(', ')}.` : 'I could not find anything.';
};

/** Messages a context provider injected. */
export function contextMessages(messages: readonly Message[], sourceId = 'azure-search'): Message[] {
  return messages.filter((m) => Message.source(m)?.sourceType === 'context' && Message.source(m)?.sourceId === sourceId);
}

/** The citations of an injected message. */
export function citations(
  message: Message,
): { n: number; id: string; title?: string; url?: string; score?: number; metadata?: Record<string, unknown> }[] {
  return (message.metadata?.citations ?? []) as never;
}
