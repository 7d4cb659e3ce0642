import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../tooling/vitest.shared.js';

export default defineConfig({
  test: {
    ...sharedTestConfig,
    include: ['src/**/*.test.ts'],
    typecheck: { enabled: true, include: ['src/**/*.test-d.ts'] },
    // Starts the local Azure AI Search REST server (tooling/azure-search-test-server) and the
    // OpenAI-protocol server (tooling/openai-test-server, for embeddings and the index's vectorizer)
    // on loopback with free ports for the whole run; fault tests start their own instances.
    globalSetup: ['./test/global-setup.ts'],
  },
});
