import { type AgentSession, ConcurrencyError, type SessionStore } from '@ctx/core';
import { describeError, generateId, pause, shortId } from '@ctx/core/backend';

/** The turn key of the lease a middleware call holds on its session (`SessionStore.leaseTurn`): one turn at a time per session. */
export const SESSION_LEASE = 'ai-sdk-turn';

/** The first pause between two looks at a lease another process holds, in ms; doubled up to `MAX_POLL_MS`. */
const FIRST_POLL_MS = 10;
const MAX_POLL_MS = 250;

/** How calls of one middleware take turns on a session: the checked options. */
export interface SessionTurnsOptions {
  /** How long a call waits for another turn on its session, in ms. */
  waitMs: number;
  /** The store lease's length without renewal, in ms (renewed every third of it while held). */
  leaseMs: number;
  /** How long a turn whose step ended in calls of the app's tools keeps the session for its next step, in ms. */
  gapMs: number;
  /** Where warnings go (a lease that could not be renewed or released). */
  warn: (message: string) => void;
}

/** A session's turn in this process: held by one turn from its first step to its last. */
interface Held {
  /** The turn's holder id (the store lease's holder, and the slot's `holder` between steps). */
  holder: string;
  /** A step of the turn runs now. */
  busy: boolean;
  /** Another call is reading the store to see whether the turn moved on (`#movedOn`); the turn's next step does not wait for it. */
  checking?: boolean;
  /** The session as the last step saved it, for the next step (no load between steps). */
  session: AgentSession | undefined;
  /** Whether the store lease is taken (a store with `leaseTurn`). */
  leased: boolean;
  /** When the lease ends unless renewed (`performance.now()` time, reckoned from when the last lease call went out). */
  expires: number;
  /** Renews the lease every third of `leaseMs`. */
  renewal: ReturnType<typeof setTimeout> | undefined;
  /** Ends the hold between steps when no next step came within `gapMs`. */
  gap: ReturnType<typeof setTimeout> | undefined;
}

/** What `enter` hands a call: the session to run on, and how the step ends. */
export interface Step {
  session: AgentSession;
  /** The turn's holder id. */
  holder: string;
  /**
   * Ends the step: `hold` keeps the session for the turn's next step (for `gapMs`), else the turn
   * ends and the session is free (the lease released). `session` is the session as saved.
   */
  leave(hold: boolean, session: AgentSession): void;
}

/**
 * The turns running on sessions through one middleware: a call runs on a session only while no
 * other turn holds it, in this process (a map by session id) and across processes (the store's
 * `leaseTurn` on `SESSION_LEASE`, when it has it). A turn holds its session from its first step
 * until a step ends without calls of the app's tools, or `gapMs` after a step that ended with them
 * when no next step came. A step of the turn that holds the session (its prompt goes on from the
 * turn's last answer) runs at once; any other call waits, up to `waitMs`.
 */
export class SessionTurns {
  readonly #held = new Map<string, Held>();
  /** Calls waiting for a session of this process to change, by session id. */
  readonly #waiting = new Map<string, (() => void)[]>();

  constructor(
    readonly options: SessionTurnsOptions,
    readonly store: SessionStore | undefined,
  ) {}

  /**
   * Waits until this call may run on session `sessionId`, and takes it. `load` loads the session
   * (from the store, or the fixed one); `continues` says whether the call's prompt goes on from
   * the newest message of the session (then it may take over the turn whose holder the slot names).
   * @throws ConcurrencyError with `turnRunning: true` when another turn held the session for longer
   *   than `waitMs`; nothing of the call ran or was stored.
   * @throws the abort reason when `signal` aborts while waiting.
   */
  async enter(
    sessionId: string,
    signal: AbortSignal | undefined,
    load: () => Promise<AgentSession>,
    continues: (session: AgentSession) => { continues: boolean; holder: string | undefined },
  ): Promise<Step> {
    const { waitMs } = this.options;
    const deadline = performance.now() + waitMs;
    const late = () =>
      new ConcurrencyError(
        sessionId,
        `Session ${shortId(sessionId)}: another turn (a call of ctxMiddleware in this or another process, or the steps of its tool loop) held the session for longer than ${waitMs} ms (runningTurns.waitMs). Nothing of this call ran or was stored: send it again once that turn has ended.`,
        { turnRunning: true, turnStored: false },
      );
    for (let attempt = 0; ; attempt++) {
      const held = this.#held.get(sessionId);
      if (held?.busy) {
        await this.#changed(sessionId, signal, deadline, late);
        continue;
      }
      if (held) {
        // Held here between two steps: only the turn's next step runs now.
        const session = held.session!;
        const seen = continues(session);
        if (seen.continues && seen.holder === held.holder) {
          held.busy = true;
          clearTimeout(held.gap);
          held.gap = undefined;
          if (held.leased && held.expires - performance.now() < (this.options.leaseMs * 2) / 3) this.#renewNow(sessionId, held);
          this.#renew(sessionId, held);
          return this.#step(sessionId, held, session);
        }
        if (!held.checking && this.#leases() && (await this.#movedOn(sessionId, held, load, continues))) continue;
        await this.#changed(sessionId, signal, deadline, late, FIRST_POLL_MS * 2 ** Math.min(attempt, 5));
        continue;
      }
      // Free here: claim it before the first await, so calls of this process queue behind this one.
      const claim: Held = { holder: '', busy: true, session: undefined, leased: false, expires: 0, renewal: undefined, gap: undefined };
      this.#held.set(sessionId, claim);
      let session: AgentSession;
      try {
        // The load and the lease (for a new turn) go out together: one round trip of waiting, not two.
        const fresh = generateId();
        const sent = performance.now();
        const [loaded, leased] = await Promise.allSettled([load(), this.#lease(sessionId, fresh, signal)]);
        if (leased.status === 'fulfilled' && leased.value) {
          claim.holder = fresh;
          claim.leased = true;
          claim.expires = sent + this.options.leaseMs;
        }
        if (loaded.status === 'rejected') throw loaded.reason;
        if (leased.status === 'rejected') throw leased.reason;
        session = loaded.value;
        const seen = continues(session);
        if (claim.leased) {
          // a new turn, or one whose holder's lease has ended: it goes on under the new holder
        } else if (seen.continues && seen.holder) {
          // A step of a turn held between its steps (in another process, or before this one's lease ended): it goes on under that turn's holder.
          claim.holder = seen.holder;
          const again = performance.now();
          claim.leased = await this.#lease(sessionId, seen.holder, signal);
          claim.expires = again + this.options.leaseMs;
        } else claim.holder = fresh;
      } catch (error) {
        this.#free(sessionId, claim);
        this.#release(sessionId, claim);
        throw error;
      }
      if (claim.leased || !this.#leases()) {
        this.#renew(sessionId, claim);
        return this.#step(sessionId, claim, session);
      }
      // Another process holds the session: look again after a pause.
      this.#free(sessionId, claim);
      const left = deadline - performance.now();
      if (left <= 0) throw late();
      await pause(Math.min(left, FIRST_POLL_MS * 2 ** Math.min(attempt, 5), MAX_POLL_MS), signal);
    }
  }

  #step(sessionId: string, held: Held, session: AgentSession): Step {
    let left = false;
    return {
      session,
      holder: held.holder,
      leave: (hold, saved) => {
        if (left) return;
        left = true;
        held.busy = false;
        if (!hold) return this.#end(sessionId, held);
        held.session = saved;
        // No renewals between steps: the lease lasts the gap (extended once if it would end sooner),
        // then lapses by itself, so a turn another process took over is never held again from here.
        clearTimeout(held.renewal);
        held.renewal = undefined;
        const { gapMs } = this.options;
        const now = performance.now();
        if (held.leased && now + gapMs > held.expires) {
          held.expires = now + gapMs;
          this.store!.leaseTurn!(sessionId, { turn: SESSION_LEASE, holder: held.holder, ttlMs: Math.max(1, gapMs) }).catch(
            (error: unknown) =>
              this.options.warn(
                `The lease on session ${shortId(sessionId)} could not be extended for the next step: ${describeError(error)}.`,
              ),
          );
        }
        held.gap = setTimeout(() => {
          held.gap = undefined;
          if (!held.busy) this.#free(sessionId, held);
        }, gapMs);
        (held.gap as { unref?: () => void }).unref?.();
        this.#wake(sessionId);
      },
    };
  }

  /**
   * Whether the turn held here between its steps went on in another process (its next step, sent
   * there: an app's own tool loop across requests) and ended or moved on there: the session as
   * stored no longer names its holder. Then the hold here ends (the lease is that process's to end).
   */
  async #movedOn(
    sessionId: string,
    held: Held,
    load: () => Promise<AgentSession>,
    continues: (session: AgentSession) => { holder: string | undefined },
  ): Promise<boolean> {
    held.checking = true; // no other call here looks meanwhile; the turn's next step may still take the session
    let holder: string | undefined;
    try {
      holder = continues(await load()).holder;
    } finally {
      held.checking = false;
    }
    if (this.#held.get(sessionId) !== held) return true; // the gap or the turn ended while the store was read
    if (held.busy || holder === held.holder) return false; // its next step came meanwhile, or the turn is still held here
    clearTimeout(held.gap);
    held.gap = undefined;
    held.leased = false;
    this.#free(sessionId, held);
    return true;
  }

  /** Ends a turn: frees the session here and releases the lease. */
  #end(sessionId: string, held: Held): void {
    if (held.busy) return; // a step of it runs again
    clearTimeout(held.gap);
    held.gap = undefined;
    this.#free(sessionId, held);
    this.#release(sessionId, held);
  }

  /** Releases the turn's lease, if it holds one; a failure is a warning (the lease expires by itself). */
  #release(sessionId: string, held: Held): void {
    if (!held.leased) return;
    held.leased = false;
    this.store!.releaseTurn!(sessionId, { turn: SESSION_LEASE, holder: held.holder }).catch((error: unknown) =>
      this.options.warn(
        `The lease on session ${shortId(sessionId)} could not be released (it expires within ${this.options.leaseMs} ms): ${describeError(error)}.`,
      ),
    );
  }

  #free(sessionId: string, held: Held): void {
    clearTimeout(held.renewal);
    held.renewal = undefined;
    if (this.#held.get(sessionId) === held) this.#held.delete(sessionId);
    this.#wake(sessionId);
  }

  #leases(): boolean {
    return typeof this.store?.leaseTurn === 'function' && typeof this.store.releaseTurn === 'function';
  }

  async #lease(sessionId: string, holder: string, signal: AbortSignal | undefined): Promise<boolean> {
    if (!this.#leases()) return false;
    return this.store!.leaseTurn!(sessionId, { turn: SESSION_LEASE, holder, ttlMs: this.options.leaseMs, ...(signal ? { signal } : {}) });
  }

  /** Renews the lease at once (the next step of a turn whose lease would end within two thirds of `leaseMs`). */
  #renewNow(sessionId: string, held: Held): void {
    const { leaseMs, warn } = this.options;
    held.expires = performance.now() + leaseMs;
    this.store!.leaseTurn!(sessionId, { turn: SESSION_LEASE, holder: held.holder, ttlMs: leaseMs }).then(
      (still) => {
        if (!still)
          warn(
            `The lease on session ${shortId(sessionId)} ended between two steps of a turn and another process took it; it may run a turn on the session meanwhile.`,
          );
      },
      (error: unknown) => warn(`The lease on session ${shortId(sessionId)} could not be renewed: ${describeError(error)}.`),
    );
  }

  /** Renews the lease every third of `leaseMs` while a step of the turn runs. */
  #renew(sessionId: string, held: Held): void {
    if (!held.leased) return;
    const { leaseMs, warn } = this.options;
    clearTimeout(held.renewal);
    held.renewal = setTimeout(
      () => {
        held.expires = performance.now() + leaseMs;
        this.store!.leaseTurn!(sessionId, { turn: SESSION_LEASE, holder: held.holder, ttlMs: leaseMs }).then(
          (still) => {
            if (!still) {
              warn(
                `The lease on session ${shortId(sessionId)} expired while a turn held it (the process was too busy to renew it within ${leaseMs} ms, runningTurns.leaseMs); another process may run a turn on it meanwhile.`,
              );
            }
            if (this.#held.get(sessionId) === held && held.busy) this.#renew(sessionId, held);
          },
          (error: unknown) => {
            warn(`The lease on session ${shortId(sessionId)} could not be renewed: ${describeError(error)}.`);
            if (this.#held.get(sessionId) === held && held.busy) this.#renew(sessionId, held);
          },
        );
      },
      Math.max(1, Math.floor(leaseMs / 3)),
    );
    (held.renewal as { unref?: () => void }).unref?.();
  }

  /**
   * Waits until the session's state here changes (a step ended, a turn ended), `pollMs` passed
   * (when given: to look at the store again), the deadline (then rejects with `late()`), or the signal.
   */
  #changed(sessionId: string, signal: AbortSignal | undefined, deadline: number, late: () => Error, pollMs?: number): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const list = this.#waiting.get(sessionId) ?? [];
      this.#waiting.set(sessionId, list);
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const at = list.indexOf(wake);
        if (at >= 0) list.splice(at, 1);
        if (list.length === 0 && this.#waiting.get(sessionId) === list) this.#waiting.delete(sessionId);
      };
      const wake = () => {
        done();
        resolve();
      };
      const onAbort = () => {
        done();
        reject(signal!.reason);
      };
      const left = deadline - performance.now();
      const timer = setTimeout(
        () => {
          done();
          if (performance.now() >= deadline) reject(late());
          else resolve();
        },
        Math.max(0, pollMs === undefined ? left : Math.min(left, pollMs)),
      );
      signal?.addEventListener('abort', onAbort, { once: true });
      list.push(wake);
    });
  }

  /** Wakes the calls waiting on the session (each looks again, in the order they came). */
  #wake(sessionId: string): void {
    const list = this.#waiting.get(sessionId);
    if (list) for (const wake of [...list]) wake();
  }
}
