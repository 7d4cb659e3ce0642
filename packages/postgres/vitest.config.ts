import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../tooling/vitest.shared.js';

export default defineConfig({
  test: {
    ...sharedTestConfig,
    include: ['src/**/*.test.ts'],
    // Starts a private PostgreSQL server on loopback for the whole run (the embedded tests open PGlite themselves).
    globalSetup: ['./test/global-setup.ts'],
  },
});
