import type { ViteUserConfig } from 'vitest/config';

/** Test settings every package shares: a JSON report per package for the CI summary line. */
export const sharedTestConfig: NonNullable<ViteUserConfig['test']> = {
  reporters: ['default', ['json', { outputFile: 'test-results.json' }]],
};
