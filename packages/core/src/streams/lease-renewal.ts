/**
 * Calls `renew` every `intervalMs` until the returned function is called, one call at a time (a
 * renewal still running skips the next tick). The timer never keeps the process alive. A renewal
 * that fails is retried at the next tick; if the lease runs out meanwhile, the writer's next append
 * or close reports it, so nothing is lost silently.
 */
export function startRenewal(intervalMs: number, renew: () => Promise<unknown>): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    renew()
      .catch(() => {})
      .finally(() => {
        running = false;
      });
  }, intervalMs);
  timer.unref?.();
  return () => clearInterval(timer);
}
