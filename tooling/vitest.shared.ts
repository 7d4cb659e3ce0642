import { fileURLToPath } from 'node:url';
import type { ViteUserConfig } from 'vitest/config';

/**
 * Test settings every package shares: a JSON report per package for the CI summary line (which
 * counts independent tests, seeded-fault checks and expected failures apart: the setup file marks
 * each `it.fails`, and a test that runs against a backend broken on purpose carries the
 * `seeded-fault` tag), and timeouts with room for a 2-core machine running several packages' tests
 * at once.
 *
 * `CTX_SKIP_SEEDED_FAULTS=1` leaves out the `seeded-fault` tests (`tagsFilter`): .ci/run sets it
 * for the passes on Node 22 and 24, which rerun what depends on the Node version. A seeded fault is
 * a backend broken on purpose in plain TypeScript; whether a suite catches it depends on the
 * suite's assertions, not on the Node running them, and the Node 20 pass runs every one.
 */
export const sharedTestConfig: NonNullable<ViteUserConfig['test']> = {
  reporters: ['default', ['json', { outputFile: 'test-results.json' }]],
  setupFiles: [fileURLToPath(new URL('./vitest-test-kinds.ts', import.meta.url))],
  tags: [
    {
      name: 'seeded-fault',
      description: 'runs a suite against a backend broken on purpose, to check that the suite catches the fault',
    },
  ],
  ...(process.env.CTX_SKIP_SEEDED_FAULTS === '1' ? { tagsFilter: ['!seeded-fault'] } : {}),
  testTimeout: 30_000,
  hookTimeout: 60_000,
};
