import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../tooling/vitest.shared.js';

export default defineConfig({
  test: {
    ...sharedTestConfig,
    include: ['src/**/*.test.ts'],
    // Starts the Cosmos DB stand-in (@vercel/cosmosdb-server) on 127.0.0.1, port 0, for the whole run.
    globalSetup: ['./test/global-setup.ts'],
  },
});
