import { expect, it, type TestContext } from 'vitest';

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

/** How a suite learns whether the backend under test has one optional capability. */
export interface CapabilityCheck {
  /** The suite's name, for the messages. */
  suite: string;
  /** The capability's key in the suite's `capabilities` option (`list`, `popMessages`...). */
  capability: string;
  /** What the backend declared: true (it has it), false (it has not), undefined (not declared). */
  declared: boolean | undefined;
  /** Whether the backend has the methods of the capability. */
  present: boolean;
  /** The methods the capability stands for, as the messages name them (`list`, `leaseTurn and releaseTurn`). */
  methods: string;
}

/**
 * Decides whether a test of an optional capability runs. A backend that has the methods is
 * tested, whatever it declared. One without them fails the test when it declared the capability
 * (a regression that dropped it is a failure, not a skip), and has the test skipped when it
 * declared it absent or declared nothing (the suites' behaviour before `capabilities` had the key).
 */
export function checkCapability(context: TestContext, check: CapabilityCheck): void {
  if (check.present) return;
  if (check.declared === true) {
    expect.fail(
      `${check.suite} declares capabilities.${check.capability}: true, but has no ${check.methods}. Implement it, or declare ${check.capability}: false if it was left out on purpose.`,
    );
  }
  context.skip(
    check.declared === false
      ? `${check.suite} declares capabilities.${check.capability}: false`
      : `${check.suite} has no ${check.methods} (declare capabilities.${check.capability} so that a missing one fails)`,
  );
}

/**
 * Fails when a backend declared a capability it lacks, or declared absent one it has (core calls
 * what a backend has, so the suite tests it). An undeclared capability passes either way.
 */
export function expectDeclared(checks: readonly CapabilityCheck[]): void {
  const wrong = checks.flatMap((check) => {
    if (check.declared === undefined || check.declared === check.present) return [];
    return [
      check.declared
        ? `capabilities.${check.capability}: true, but it has no ${check.methods}`
        : `capabilities.${check.capability}: false, but it has ${check.methods} (core calls it, so declare it true and pass its tests)`,
    ];
  });
  expect(wrong, `${checks[0]?.suite ?? 'the backend'} declares what it does not do`).toEqual([]);
}
