import { ConcurrencyError, ConfigurationError } from '../errors.js';
import type { WorkingMemoryKey } from '../contracts/working-memory-store.js';
import { checkId, shortId } from './checks.js';

/**
 * Checks a working-memory key handed to a store: an object with a `userId`, a `sessionId` or both,
 * each a string with a non-whitespace character. Resolves to a copy holding only those two fields.
 * @throws ConfigurationError otherwise.
 */
export function checkWorkingMemoryKey(key: unknown): WorkingMemoryKey {
  if (typeof key !== 'object' || key === null) {
    throw new ConfigurationError(
      `A working-memory key must be an object { userId?, sessionId? }; got ${key === null ? 'null' : typeof key}.`,
    );
  }
  const { userId, sessionId } = key as WorkingMemoryKey;
  if (userId === undefined && sessionId === undefined) {
    throw new ConfigurationError(
      "A working-memory key needs a userId (a user's record) or a sessionId (a session's record); it has neither.",
    );
  }
  const checked: WorkingMemoryKey = {};
  if (userId !== undefined) checked.userId = checkId(userId, 'userId of a working-memory key');
  if (sessionId !== undefined) checked.sessionId = checkId(sessionId, 'sessionId of a working-memory key');
  return checked;
}

/** A working-memory key for error messages: `user "u1"`, `session "s1"` or `session "s1" of user "u1"`. Ids only. */
export function describeWorkingMemoryKey(key: WorkingMemoryKey): string {
  if (key.sessionId === undefined) return `user ${shortId(key.userId ?? '')}`;
  return key.userId === undefined
    ? `session ${shortId(key.sessionId)}`
    : `session ${shortId(key.sessionId)} of user ${shortId(key.userId)}`;
}

/**
 * Applies `ifMatch` to a working-memory record, for store implementations: `current` is the stored
 * etag (undefined when nothing is stored).
 * @throws ConcurrencyError (its `sessionId` is the key's session, else its user) when it does not hold.
 */
export function checkWorkingMemoryEtag(key: WorkingMemoryKey, current: string | undefined, ifMatch: string | null | undefined): void {
  if (ifMatch === undefined) return;
  if (ifMatch === null ? current === undefined : current === ifMatch) return;
  const what = `The working memory of ${describeWorkingMemoryKey(key)}`;
  throw new ConcurrencyError(
    key.sessionId ?? key.userId ?? '',
    ifMatch === null
      ? `${what} already exists; read it before writing over it.`
      : current === undefined
        ? `${what} was deleted since it was read; read it again and retry.`
        : `${what} was changed by another writer since it was read; read it again and retry.`,
  );
}
