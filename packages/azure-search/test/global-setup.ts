import { startAzureSearchTestServer } from '@ctx/azure-search-test-server';
import { startOpenAITestServer } from '@ctx/openai-test-server';
import type { TestProject } from 'vitest/node';

/** What the global setup hands to the tests (through vitest `provide` / `inject`). */
export interface AzureSearchTestEnvironment {
  /** The local Azure AI Search endpoint, `http://127.0.0.1:PORT`. */
  searchEndpoint: string;
  searchKey: string;
  /** The OpenAI-protocol server: `/v1` for `OpenAIEmbeddings`, its origin for the index's Azure OpenAI vectorizer. */
  openaiUrl: string;
  openaiOrigin: string;
  openaiKey: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    azureSearch: AzureSearchTestEnvironment;
  }
}

/** Starts both local servers on loopback with free ports; closes them at the end. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const openai = await startOpenAITestServer();
  const search = await startAzureSearchTestServer();
  project.provide('azureSearch', {
    searchEndpoint: search.endpoint,
    searchKey: search.apiKey,
    openaiUrl: openai.url,
    openaiOrigin: openai.origin,
    openaiKey: openai.apiKey,
  });
  return async () => {
    await Promise.all([search.close(), openai.close()]);
  };
}
