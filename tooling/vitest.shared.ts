import type { ViteUserConfig } from 'vitest/config';

/**
 * Test settings every package shares: a JSON report per package for the CI summary line, and
 * timeouts with room for a 2-core machine running several packages' tests at once.
 */
export const sharedTestConfig: NonNullable<ViteUserConfig['test']> = {
  reporters: ['default', ['json', { outputFile: 'test-results.json' }]],
  testTimeout: 30_000,
  hookTimeout: 60_000,
};
