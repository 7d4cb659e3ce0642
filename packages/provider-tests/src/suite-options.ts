import { it, type TestContext } from 'vitest';

/** A value, or a promise of it. */
export type MaybePromise<T> = T | Promise<T>;

/**
 * Hooks and settings both conformance suites take. `T` is what the suite's `create` returns (a
 * history provider or a session store).
 */
export interface ConformanceSuiteOptions<T> {
  /**
   * Runs once before the suite (vitest `beforeAll`): start a local server, open a connection pool,
   * create a database. A failure fails every test of the suite.
   */
  setup?: () => MaybePromise<void>;
  /** Runs once after the suite (vitest `afterAll`): stop what `setup` started, flush test data. */
  teardown?: () => MaybePromise<void>;
  /**
   * Runs after each test for every instance that test created, in creation order (vitest
   * `afterEach`): close the instance, delete its keys or its temporary directory.
   */
  cleanup?: (instance: T) => MaybePromise<void>;
  /** Per-test timeout in milliseconds, for slow backends. Default: vitest's (`testTimeout`, 5000 ms). */
  timeout?: number;
  /**
   * Exact titles of tests known to fail for this backend. They run as `it.fails`: the suite stays
   * green while the failure lasts and turns red once the test passes, so the entry gets removed
   * when the bug is fixed. A title that names no test of the suite fails the suite (in `afterAll`).
   */
  expectedFailures?: readonly string[];
}

/** Registers a test, honouring `expectedFailures`; `skip` shows the test as skipped in the report. */
export type RegisterTest = (title: string, body: (context: TestContext) => Promise<void>, skip?: boolean) => void;

/**
 * Creates the test registrar of one suite and a `finish` to run once every test is registered
 * (the suite's `afterAll`): it throws when an `expectedFailures` entry matched no test.
 */
export function createRegistrar(suiteName: string, expectedFailures: readonly string[] = []): { test: RegisterTest; finish: () => void } {
  const expected = new Set(expectedFailures);
  const seen = new Set<string>();
  const test: RegisterTest = (title, body, skip = false) => {
    if (seen.has(title)) throw new Error(`@ctx/provider-tests: duplicate test title "${title}" in ${suiteName}.`);
    seen.add(title);
    if (skip) it.skip(title, body);
    else if (expected.has(title)) it.fails(title, body);
    else it(title, body);
  };
  const finish = () => {
    const unknown = [...expected].filter((title) => !seen.has(title));
    if (unknown.length) {
      throw new Error(
        `@ctx/provider-tests: expectedFailures of ${suiteName} name no test: ${unknown.map((t) => JSON.stringify(t)).join(', ')}. Copy the titles exactly from the test report.`,
      );
    }
  };
  return { test, finish };
}

/** A short random tag, so test data of one run never meets data a previous run left in a backend. */
export function randomTag(): string {
  return Math.random().toString(36).slice(2, 10);
}
