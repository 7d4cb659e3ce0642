import { shortId } from '../backend/checks.js';
import { CtxError, describe } from '../errors.js';
import type { AgentEvent } from '../contracts/events.js';
import type { ContextProvider } from '../contracts/run-view.js';
import { waitUntil } from './running-turns.js';

/** Options of `awaitPostReplyWork`. */
export interface PostReplyWorkOptions {
  /** The run's providers; those with `flush` are waited for. */
  providers: readonly ContextProvider[];
  /** The session whose work is waited for. */
  sessionId: string;
  /** The agent's `providerTimeoutMs`, for providers without their own `timeoutMs`. */
  timeoutMs: number | undefined;
  /** The run's signal: aborting it ends the wait with its reason. */
  signal: AbortSignal | undefined;
  /** Where the `post-reply-work-failed` warnings go. */
  emit: ((event: AgentEvent) => void) | undefined;
}

/**
 * Waits, before a hosted run saves its session, for the work its providers do after the reply for
 * that session (`flush({ sessionId, signal })`: a title being written, a memory update), so that
 * what they set on the session lands in the same save. All at once, each bounded by the provider's
 * `timeoutMs` (else the agent's `providerTimeoutMs`, else only by `signal`). A provider whose work
 * fails or overruns is left behind with a `post-reply-work-failed` warning (its flush sees its
 * signal abort; the work itself goes on): the turn is saved without it, never failed by it.
 * @throws the abort reason when `signal` aborts first.
 */
export async function awaitPostReplyWork(options: PostReplyWorkOptions): Promise<void> {
  const { sessionId, signal, emit } = options;
  const flushing = options.providers.filter((p) => typeof p.flush === 'function');
  if (flushing.length === 0) return;
  await Promise.all(
    flushing.map(async (provider) => {
      const own = new AbortController();
      const limit = provider.timeoutMs ?? options.timeoutMs;
      const deadline = limit === undefined ? Number.POSITIVE_INFINITY : performance.now() + limit;
      try {
        const flushSignal = signal ? AbortSignal.any([signal, own.signal]) : own.signal;
        const work = new Promise<unknown>((resolve) => resolve(provider.flush!({ sessionId, signal: flushSignal })));
        await waitUntil(
          work,
          signal,
          deadline,
          () =>
            new CtxError(`Context provider "${provider.sourceId}" did not finish its work after the reply within ${limit} ms (timeoutMs).`),
        );
      } catch (error) {
        own.abort(error);
        if (signal?.aborted) throw signal.reason;
        emit?.({
          type: 'warning',
          sourceId: provider.sourceId,
          code: 'post-reply-work-failed',
          message: `Session ${shortId(sessionId)} was saved without the work provider "${provider.sourceId}" does after the reply (${describe(error)}); it goes on, but what it sets on the session now is not saved (a later run may do it again). Raise the provider's timeoutMs (or the agent's providerTimeoutMs) if it is just slow.`,
        });
      }
    }),
  );
}
