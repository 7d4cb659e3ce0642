import { RunContext, type RunContextInit } from '../run/run-context.js';
import type { SessionContext } from '../contracts/run-view.js';

/** Fields a `SessionContext` is created with by `createSessionContext`. */
export type SessionContextInit = RunContextInit;

/**
 * A `SessionContext` as the agent builds one for a run: for unit tests of a provider's or tool's
 * hooks without an agent. The input is attributed as `input`, the instructions to `agent`.
 */
export function createSessionContext(init: SessionContextInit): SessionContext {
  return new RunContext(init);
}
