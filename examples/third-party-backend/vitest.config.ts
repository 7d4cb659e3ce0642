import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    // The suites' concurrency tests run hundreds of transactions; the default 5 s is tight on a busy machine.
    testTimeout: 30_000,
  },
});
