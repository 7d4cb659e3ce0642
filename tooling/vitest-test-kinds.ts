/**
 * Setup file of every package's tests (tooling/vitest.shared.ts): marks each expected failure
 * (`it.fails`) in its report entry (`meta.expectedFailure`), so that tooling/test-summary.mjs
 * counts it apart from the tests that pass.
 */
import { beforeEach } from 'vitest';

declare module 'vitest' {
  interface TaskMeta {
    /** The test runs as `it.fails`: it passes when its body fails. */
    expectedFailure?: boolean;
  }
}

beforeEach(({ task }) => {
  if (task.fails) task.meta.expectedFailure = true;
});
