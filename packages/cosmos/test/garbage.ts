import type { CtxError } from '@ctx/core';
import { fuzzTestTimeout, outcome as checkedOutcome } from '@ctx/fuzz-kit';

/** Per property: generous for a slow CI machine, so only a real hang fails it. */
export const FUZZ_TEST_TIMEOUT = fuzzTestTimeout(100);

/** `outcome` from `@ctx/fuzz-kit` with a call taking longer than 20 s as a hang. */
export function outcome<T>(name: string, call: () => Promise<T>): Promise<{ value: T } | { error: CtxError }> {
  return checkedOutcome(name, call, { callTimeoutMs: 20_000 });
}
