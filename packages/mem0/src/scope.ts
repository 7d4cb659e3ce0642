import { ConfigurationError, SessionStateError, type JsonObject } from '@ctx/core';
import { shortId } from '@ctx/core/backend';

/** The mem0 entity ids a memory can carry and a search can filter on. */
export type Mem0ScopeKey = 'userId' | 'agentId' | 'appId' | 'runId';

/** Concrete ids of one scope. Every id present is a valid mem0 id (see `checkMem0Id`). */
export interface Mem0Scope {
  userId?: string;
  agentId?: string;
  appId?: string;
  runId?: string;
}

/**
 * The shape of the provider's per-session state slot (`session.state.mem0` with the default
 * `sourceId`): ids that override the provider's options for one session. Set it with
 * `agent.createSession({ state: { mem0: { userId: 'u-42' } } })`.
 */
export type Mem0SessionState = {
  userId?: string;
  agentId?: string;
  appId?: string;
  runId?: string;
};

/** Every scope key, in the order mem0 documents them. */
export const MEM0_SCOPE_KEYS: readonly Mem0ScopeKey[] = ['userId', 'agentId', 'appId', 'runId'];

/** The longest id accepted, in UTF-16 code units. */
export const MAX_MEM0_ID_LENGTH = 256;

/** The snake_case field of each key, as mem0 stores and filters it. */
export const MEM0_FIELD: Readonly<Record<Mem0ScopeKey, 'user_id' | 'agent_id' | 'app_id' | 'run_id'>> = {
  userId: 'user_id',
  agentId: 'agent_id',
  appId: 'app_id',
  runId: 'run_id',
};

// Whitespace (mem0 OSS trims and refuses it, so "a " and "a" would meet) and control characters.
const FORBIDDEN = /[\s\p{Cc}]/u;
// With the u flag only unpaired surrogates match: they do not survive a JSON round trip intact.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/**
 * Why `value` cannot be a mem0 id, or `undefined` when it can. An id goes into mem0 filters as an
 * equality, so it must be a plain string that no backend reads as more than itself: not `'*'` (and
 * no `*` at all: mem0's wildcard, which matches every user), no objects or arrays (operators such
 * as `{ in: [...] }`), no whitespace or control characters (mem0 OSS trims ids, so `'alice '`
 * would become `'alice'`), no lone surrogates, at most 256 characters.
 */
export function checkMem0Id(value: unknown): string | undefined {
  if (typeof value !== 'string') return `must be a string, got ${value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value}`;
  if (value.length === 0) return 'must not be empty';
  if (value.length > MAX_MEM0_ID_LENGTH) return `must be at most ${MAX_MEM0_ID_LENGTH} characters, got ${value.length}`;
  if (value.includes('*')) return 'must not contain "*" (mem0 reads "*" as a wildcard that matches every id)';
  if (FORBIDDEN.test(value)) return 'must not contain whitespace or control characters';
  if (LONE_SURROGATE.test(value)) return 'must be well-formed Unicode (it has a lone surrogate)';
  return undefined;
}

/** Whether `value` is a valid mem0 id (see `checkMem0Id`). */
export function isValidMem0Id(value: unknown): value is string {
  return checkMem0Id(value) === undefined;
}

/** Shortens an untrusted id for error messages (JSON-quoted, so control characters show): core's `shortId` for strings. */
export function quoteId(value: unknown): string {
  if (typeof value === 'string') return shortId(value, 60);
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length <= 60 ? text : `${text.slice(0, 60)}…(${text.length} chars)`;
}

/**
 * Checks a list of scope keys (a store scope or one search scope).
 * @throws ConfigurationError when it is empty, has an unknown key or a key twice.
 */
export function checkScopeKeys(keys: unknown, what: string): readonly Mem0ScopeKey[] {
  if (!Array.isArray(keys) || keys.length === 0)
    throw new ConfigurationError(`Mem0ContextProvider: ${what} must be a non-empty list of scope keys (${MEM0_SCOPE_KEYS.join(', ')}).`);
  const seen = new Set<string>();
  for (const key of keys) {
    if (!MEM0_SCOPE_KEYS.includes(key as Mem0ScopeKey))
      throw new ConfigurationError(
        `Mem0ContextProvider: ${what} has ${quoteId(key)}, which is not a scope key; use ${MEM0_SCOPE_KEYS.join(', ')}.`,
      );
    if (seen.has(key as string)) throw new ConfigurationError(`Mem0ContextProvider: ${what} names ${key as string} twice.`);
    seen.add(key as string);
  }
  return [...keys] as Mem0ScopeKey[];
}

/**
 * The ids of one session: the state slot's ids over the provider's options. `runId` falls back to
 * the session id (checked only when a scope needs it, see `pickScope`).
 * @throws SessionStateError naming `$.state.<sourceId>.<key>` when the state holds a bad id.
 */
export function resolveIds(defaults: Mem0Scope, state: JsonObject, statePath: string): Mem0Scope {
  const ids: Mem0Scope = { ...defaults };
  for (const key of MEM0_SCOPE_KEYS) {
    if (!Object.hasOwn(state, key) || state[key] === undefined) continue;
    const value = state[key];
    const problem = checkMem0Id(value);
    if (problem) throw new SessionStateError(`${statePath}.${key}`, `${quoteId(value)} ${problem}`);
    ids[key] = value as string;
  }
  return ids;
}

/**
 * The scope made of exactly `keys`, or `undefined` when one of them is unknown for this session.
 * `runId` defaults to `sessionId`.
 * @throws ConfigurationError when the session id is needed as `runId` and is not a valid mem0 id.
 */
export function pickScope(keys: readonly Mem0ScopeKey[], ids: Mem0Scope, sessionId: string): Mem0Scope | undefined {
  const scope: Mem0Scope = {};
  for (const key of keys) {
    let value = ids[key];
    if (value === undefined && key === 'runId') {
      const problem = checkMem0Id(sessionId);
      if (problem)
        throw new ConfigurationError(
          `Mem0ContextProvider: the session id ${quoteId(sessionId)} cannot be the mem0 run_id: it ${problem}. Set state.runId (or the runId option) to a valid id.`,
        );
      value = sessionId;
    }
    if (value === undefined) return undefined;
    scope[key] = value;
  }
  return scope;
}

/** A stable key for a scope (used to order writes of one scope). */
export function scopeKey(scope: Mem0Scope): string {
  return JSON.stringify(MEM0_SCOPE_KEYS.map((k) => scope[k] ?? null));
}
