import { ConfigurationError } from '../errors.js';
import type { TurnLease } from '../contracts/session-store.js';
import { checkSessionId } from './checks.js';

/** What a turn key and a holder id are made of: safe in a Redis key, a Cosmos DB item id and a file name. */
const LEASE_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The longest lease a store grants, in milliseconds: an hour (a lease is renewed while its run goes on). */
export const MAX_TURN_LEASE_MS = 3_600_000;

/**
 * Checks the arguments of `SessionStore.leaseTurn` (with `ttl: false`, of `releaseTurn`): a session
 * id, a `turn` and a `holder` of 1 to 64 characters of `A-Z`, `a-z`, `0-9`, `_` and `-`, and a
 * `ttlMs` that is an integer from 1 to `MAX_TURN_LEASE_MS`. A store calls it first, before any I/O.
 * @throws ConfigurationError naming `owner` and what is wrong.
 */
export function checkTurnLease(owner: string, sessionId: unknown, lease: Partial<TurnLease> | undefined, ttl = true): void {
  checkSessionId(sessionId);
  if (typeof lease !== 'object' || lease === null) {
    throw new ConfigurationError(`${owner}: a turn lease must be an object { turn, holder${ttl ? ', ttlMs' : ''} }.`);
  }
  for (const name of ['turn', 'holder'] as const) {
    const value = lease[name];
    if (typeof value !== 'string' || !LEASE_ID.test(value)) {
      throw new ConfigurationError(
        `${owner}: the lease's ${name} must be 1 to 64 characters of A-Z, a-z, 0-9, _ and -, got ${typeof value === 'string' ? JSON.stringify(value.slice(0, 80)) : typeof value}.`,
      );
    }
  }
  if (!ttl) return;
  const { ttlMs } = lease;
  if (typeof ttlMs !== 'number' || !Number.isInteger(ttlMs) || ttlMs < 1 || ttlMs > MAX_TURN_LEASE_MS) {
    throw new ConfigurationError(
      `${owner}: the lease's ttlMs must be an integer from 1 to ${MAX_TURN_LEASE_MS} (milliseconds), got ${typeof ttlMs === 'number' ? ttlMs : typeof ttlMs}.`,
    );
  }
}
