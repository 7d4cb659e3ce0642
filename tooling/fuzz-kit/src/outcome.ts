import { CtxError } from '@ctx/core';

/** Runs per fuzz property: 300 by default (CI); `FUZZ_RUNS` sets it (the nightly run uses 20,000). */
export const FUZZ_RUNS = Number(process.env.FUZZ_RUNS ?? 300);
if (!Number.isInteger(FUZZ_RUNS) || FUZZ_RUNS < 1) throw new Error(`FUZZ_RUNS must be a positive integer, got ${process.env.FUZZ_RUNS}.`);

/** Per property: a minute plus `msPerRun` for each of the `FUZZ_RUNS`, generous for a slow CI machine, so only a real hang fails it. */
export function fuzzTestTimeout(msPerRun: number): number {
  return 60_000 + FUZZ_RUNS * msPerRun;
}

export interface OutcomeOptions {
  /** One call taking longer than this is a hang (default 10,000 ms). */
  callTimeoutMs?: number;
}

const prototypeKeys = () => Reflect.ownKeys(Object.prototype).map(String).sort();
const cleanPrototype = prototypeKeys();

/**
 * Runs `call` and checks its outcome: a value, or a `CtxError` subclass (anything else is thrown
 * again, failing the property); a call that does not settle within `callTimeoutMs` is a hang.
 * Afterwards `Object.prototype` must be exactly what it was.
 */
export async function outcome<T>(
  name: string,
  call: () => Promise<T>,
  { callTimeoutMs = 10_000 }: OutcomeOptions = {},
): Promise<{ value: T } | { error: CtxError }> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${name} did not settle within ${callTimeoutMs} ms`)), callTimeoutMs);
  });
  const result = await Promise.race([call(), hang]).then(
    (value) => ({ value }),
    (error: unknown) => ({ thrown: error }),
  );
  clearTimeout(timer);
  const keys = prototypeKeys();
  if (keys.join() !== cleanPrototype.join() || ({} as Record<string, unknown>).a !== undefined) {
    throw new Error(`${name} polluted Object.prototype: ${keys.join(', ')}`);
  }
  if ('value' in result) return result;
  if (CtxError.isInstance(result.thrown)) return { error: result.thrown };
  throw new Error(`${name} failed with something other than a CtxError: ${String((result.thrown as Error)?.stack ?? result.thrown)}`, {
    cause: result.thrown,
  });
}
