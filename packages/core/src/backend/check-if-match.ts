import { ConcurrencyError, truncate } from '../errors.js';

/**
 * Applies `ifMatch` semantics for store implementations: `undefined` writes unconditionally, `null`
 * only when nothing is stored, an etag only when it is the stored one.
 *
 * It compares an etag the caller read, so it is atomic only where nothing else writes between that
 * read and the write: a store in one process, or behind a lock. In a database, read-then-compare
 * races (two writers both read etag A, both pass, both write, and one save is lost). A database
 * store makes the write itself conditional, in one statement or script: SQL `UPDATE ... WHERE
 * session_id = $1 AND etag = $2` (zero rows updated: the condition failed) and `INSERT ... ON
 * CONFLICT DO NOTHING` for `ifMatch: null`; Redis a Lua script comparing the stored etag; Cosmos DB
 * the `IfMatch` access condition (412) and `create` (409). When the write did not apply, it throws
 * `new ConcurrencyError(sessionId)`, or calls `checkIfMatch` with the etag stored now for the same
 * error and message.
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
