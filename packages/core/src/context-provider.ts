import type { Agent } from './agent.js';
import type { AgentSession } from './agent-session.js';
import type { JsonObject } from './json.js';
import type { SessionContext } from './session-context.js';

/** What every provider hook receives. */
export interface ProviderRunArgs<TState extends JsonObject = JsonObject> {
  agent: Agent;
  session: AgentSession;
  context: SessionContext;
  /** This provider's own JSON slot, `session.state[sourceId]`, created as `{}` before its first run. Mutate it. */
  state: TState;
  signal: AbortSignal;
  /**
   * Sends a diagnostic to the agent's `onEvent` as a `provider-diagnostic` event attributed to this
   * provider (an audit, a budget report, a background failure). It stays usable after the run ends,
   * for work that finishes later. Never put message text in it.
   */
  report(diagnostic: ProviderDiagnostic): void;
}

/** What a provider reports through `ProviderRunArgs.report`. */
export interface ProviderDiagnostic {
  /** Machine-readable kind, e.g. `context-audit` or `background-write-failed`. */
  code: string;
  message: string;
  data?: JsonObject;
  error?: unknown;
}

/**
 * A step of the context pipeline. Either hooks (`beforeRun` in list order, `afterRun` in reverse)
 * or around advice (`wrap`). Providers are stateless: one instance serves any number of concurrent
 * sessions, and per-session data lives only in `state`.
 */
export interface ContextProvider<TState extends JsonObject = JsonObject> {
  /** Unique within an agent; also the key of the provider's state slot and its attribution. */
  readonly sourceId: string;
  /** Runs before the model call: add messages, instructions or tools to `context`. */
  beforeRun?(args: ProviderRunArgs<TState>): void | Promise<void>;
  /** Runs after the model call (or a failure: see `context.error`), in reverse order. */
  afterRun?(args: ProviderRunArgs<TState>): void | Promise<void>;
  /**
   * Around advice: do work, `await next()` to run the rest of the pipeline and the model, then
   * do more. `next()` never throws: a failure further in is in `context.error`.
   */
  wrap?(args: ProviderRunArgs<TState>, next: () => Promise<void>): Promise<void>;
  /** `'throw'` (default) fails the run; `'skip'` leaves this provider out of the run and emits a diagnostic. */
  readonly onError?: 'throw' | 'skip';
  /** Waits for work the provider does in the background (e.g. memory writes); `agent.flush()` calls it. */
  flush?(): Promise<unknown>;
  /**
   * Checks a restored session's state slot. Throw `SessionStateError` with a path under `path`
   * (e.g. `$.state.memory`) when it is malformed.
   */
  validateState?(state: JsonObject, path: string): void;
}
