import type { StoredSession } from '../contracts/session-store.js';
import { checkId } from './checks.js';

/**
 * What `SessionStore.get` returns for `userId`: `stored` when no `userId` is given or the session
 * belongs to that user (`metadata.userId`), else undefined, as if nothing were stored (a session of
 * another user, or of none). For store authors: `return sessionOfUser(await read(), options.userId)`.
 * @throws ConfigurationError for a `userId` that is not a non-blank string (whatever is stored).
 */
export function sessionOfUser(stored: StoredSession | undefined, userId: string | undefined): StoredSession | undefined {
  if (userId === undefined) return stored;
  checkId(userId, 'userId of a session read');
  return stored?.session.metadata.userId === userId ? stored : undefined;
}
