import { ConcurrencyError, truncate } from '../errors.js';

/**
 * Applies `ifMatch` semantics for store implementations.
 * @throws ConcurrencyError when `ifMatch` does not hold for the current etag.
 */
export function checkIfMatch(sessionId: string, currentEtag: string | undefined, ifMatch: string | null | undefined): void {
  if (ifMatch === undefined) return;
  if (ifMatch === null ? currentEtag !== undefined : currentEtag !== ifMatch) {
    throw new ConcurrencyError(
      sessionId,
      ifMatch === null ? `Session "${truncate(sessionId)}" already exists in the store; load it before saving over it.` : undefined,
    );
  }
}
