import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../tooling/vitest.shared.js';

export default defineConfig({
  test: {
    ...sharedTestConfig,
    include: ['src/**/*.test.ts'],
    // Starts a redis-server and the local OpenAI-protocol server on loopback for the runnable blocks.
    globalSetup: ['./test/global-setup.ts'],
  },
});
