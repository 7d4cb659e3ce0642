import type { ProviderRunArgs, SessionContext } from '../contracts/run-view.js';

/**
 * Decides, once per run before the provider does anything, whether it takes part. A provider that
 * declines costs nothing: none of its hooks run and it adds nothing. A throw counts as the
 * provider failing (its `onError` applies).
 */
export type ProviderGate = (context: SessionContext, args: ProviderRunArgs) => boolean | Promise<boolean>;

/**
 * Remembers each run's gate decision, keyed by the run's `SessionContext`, so `afterRun` follows
 * what `beforeRun` decided without per-session data on the (shared) provider. Internal.
 */
export class RunGate {
  readonly #when: ProviderGate | undefined;
  readonly #decisions = new WeakMap<SessionContext, boolean>();

  constructor(when: ProviderGate | undefined) {
    this.#when = when;
  }

  /** Whether there is a gate at all. */
  get gated(): boolean {
    return this.#when !== undefined;
  }

  /** Evaluates the gate for this run and remembers the answer. */
  async enter(args: ProviderRunArgs): Promise<boolean> {
    if (!this.#when) return true;
    const open = Boolean(await this.#when(args.context, args));
    this.#decisions.set(args.context, open);
    return open;
  }

  /** What `enter` decided for this run (true when there is no gate). */
  isOpen(context: SessionContext): boolean {
    return !this.#when || this.#decisions.get(context) === true;
  }
}
