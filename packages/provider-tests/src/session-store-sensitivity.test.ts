/**
 * The session store suite must fail for stores that break the contract. A faithful reference store
 * passes every test; each broken variant below has exactly one fault, and lists the tests that must
 * fail because of it (run as `it.fails`, so a test that wrongly passes turns this file red) while
 * every other test still passes.
 */
import {
  ConfigurationError,
  type GetSessionOptions,
  type ListSessionsOptions,
  type SessionJson,
  type SessionMetadata,
  type SessionPage,
  type SessionStore,
  type SessionSummary,
  type SetSessionOptions,
  type StoredSession,
  type TurnLease,
} from '@ctx/core';
import {
  type CheckedListOptions,
  checkIfMatch,
  checkListOptions,
  checkSessionForWrite,
  checkSessionId,
  checkTurnLease,
  compareSessions,
  decodeSessionCursor,
  encodeSessionCursor,
  isAfterCursor,
  parseSessionJson,
  sessionOfUser,
} from '@ctx/core/backend';
import { describe, expect, test } from 'vitest';
import { describeSessionStore, type SessionStoreCapabilities } from './index.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

type StoreFault =
  | 'ignores-if-match'
  | 'content-etag'
  | 'check-then-write-race'
  | 'live-references'
  | 'delete-always-true'
  | 'case-insensitive-ids'
  | 'plain-error-on-conflict'
  | 'writes-before-check'
  | 'drops-empty-objects'
  | 'drops-forked-from'
  | 'null-when-missing'
  | 'caches-reads'
  | 'accepts-blank-ids'
  | 'stores-non-json'
  | 'validates-after-write'
  | 'list-oldest-first'
  | 'list-ties-ascending'
  | 'list-offset-cursor'
  | 'list-ignores-user'
  | 'list-any-limit'
  | 'list-cursor-any-user'
  | 'list-cursor-on-last-page'
  | 'list-total-all-users'
  | 'list-includes-state'
  | 'list-stale-metadata'
  | 'get-ignores-user'
  | 'get-hides-from-owner'
  | 'lease-never-expires'
  | 'lease-ignores-holder'
  | 'lease-release-any-holder'
  | 'lease-per-turn-only'
  | 'lease-unchecked'
  | 'lease-check-then-write-race'
  | 'etag-per-row-counter'
  | 'declares-missing-list'
  | 'declares-missing-total'
  | 'declares-missing-leases'
  | 'declares-absent-list';

interface Item {
  json: string;
  live: SessionJson;
  etag: string;
  /** The metadata of the first save, which the `list-stale-metadata` fault keeps listing. */
  first: SessionMetadata;
}

/** A session store over a map of JSON text, with async I/O and optional faults. */
class MapSessionStore implements SessionStore {
  readonly #items = new Map<string, Item>();
  readonly #cache = new Map<string, StoredSession>();
  readonly #fault: StoreFault | undefined;
  readonly #leases = new Map<string, { holder: string; expiresAt: number }>();
  #version = 0;

  constructor(fault?: StoreFault) {
    this.#fault = fault;
    // A store that lost a capability it declares: the method is gone from the instance.
    if (fault === 'declares-missing-list') Object.assign(this, { list: undefined });
    if (fault === 'declares-missing-leases') Object.assign(this, { leaseTurn: undefined, releaseTurn: undefined });
  }

  #key(sessionId: string): string {
    return this.#fault === 'case-insensitive-ids' ? sessionId.toLowerCase() : sessionId;
  }

  async get(sessionId: string, options: GetSessionOptions = {}): Promise<StoredSession | undefined> {
    const stored = await this.#get(sessionId);
    if (this.#fault === 'get-ignores-user') return stored;
    if (this.#fault === 'get-hides-from-owner' && options.userId !== undefined) return undefined;
    return sessionOfUser(stored, options.userId);
  }

  async #get(sessionId: string): Promise<StoredSession | undefined> {
    if (this.#fault !== 'accepts-blank-ids') checkSessionId(sessionId);
    await tick();
    const cached = this.#fault === 'caches-reads' ? this.#cache.get(sessionId) : undefined;
    if (cached) return structuredClone(cached);
    const item = this.#items.get(this.#key(sessionId));
    if (!item) return this.#fault === 'null-when-missing' ? (null as unknown as undefined) : undefined;
    const stored = { session: this.#fault === 'live-references' ? item.live : (JSON.parse(item.json) as SessionJson), etag: item.etag };
    this.#cache.set(sessionId, structuredClone(stored));
    return stored;
  }

  async set(session: SessionJson, options: SetSessionOptions = {}): Promise<string> {
    if (this.#fault === 'accepts-blank-ids') parseSessionJson(session);
    else if (this.#fault === 'stores-non-json' || this.#fault === 'validates-after-write') checkSessionId(session.sessionId);
    else checkSessionForWrite(session);
    await tick();
    const key = this.#key(session.sessionId);
    const current = this.#items.get(key);
    if (this.#fault === 'check-then-write-race') await tick();
    const json =
      this.#fault === 'drops-empty-objects'
        ? JSON.stringify(session, (_, v: unknown) => (isEmptyObject(v) ? undefined : v))
        : this.#fault === 'drops-forked-from'
          ? JSON.stringify(session, (k, v: unknown) => (k === 'forkedFrom' ? undefined : v))
          : JSON.stringify(session);
    const etag =
      this.#fault === 'content-etag'
        ? String(hash(json))
        : this.#fault === 'etag-per-row-counter'
          ? String(Number(current?.etag ?? 0) + 1) // a version column that starts again with the row
          : String(++this.#version);
    const item = (): Item => ({ json, live: session, etag, first: current?.first ?? structuredClone(session.metadata) });
    if (this.#fault === 'writes-before-check') this.#items.set(key, item());
    if (this.#fault !== 'ignores-if-match') {
      if (this.#fault === 'plain-error-on-conflict') {
        if (options.ifMatch !== undefined && (options.ifMatch === null ? current !== undefined : current?.etag !== options.ifMatch))
          throw new Error('conflict');
      } else {
        checkIfMatch(session.sessionId, current?.etag, options.ifMatch);
      }
    }
    this.#items.set(key, item());
    if (this.#fault === 'validates-after-write') checkSessionForWrite(session);
    return etag;
  }

  async delete(sessionId: string): Promise<boolean> {
    if (this.#fault !== 'accepts-blank-ids') checkSessionId(sessionId);
    await tick();
    const existed = this.#items.delete(this.#key(sessionId));
    return this.#fault === 'delete-always-true' ? true : existed;
  }

  async leaseTurn(sessionId: string, lease: TurnLease): Promise<boolean> {
    if (this.#fault !== 'lease-unchecked') checkTurnLease('MapSessionStore.leaseTurn', sessionId, lease);
    await tick();
    const key = this.#leaseKey(sessionId, lease.turn);
    const held = this.#leases.get(key);
    if (this.#fault === 'lease-check-then-write-race') await tick();
    const live = held && (this.#fault === 'lease-never-expires' || held.expiresAt > Date.now());
    if (live && held.holder !== lease.holder && this.#fault !== 'lease-ignores-holder') return false;
    this.#leases.set(key, { holder: lease.holder, expiresAt: Date.now() + lease.ttlMs });
    return true;
  }

  async releaseTurn(sessionId: string, lease: Omit<TurnLease, 'ttlMs'>): Promise<boolean> {
    if (this.#fault !== 'lease-unchecked') checkTurnLease('MapSessionStore.releaseTurn', sessionId, lease, false);
    await tick();
    const key = this.#leaseKey(sessionId, lease.turn);
    const held = this.#leases.get(key);
    if (!held || (held.holder !== lease.holder && this.#fault !== 'lease-release-any-holder')) return false;
    this.#leases.delete(key);
    return held.expiresAt > Date.now();
  }

  #leaseKey(sessionId: string, turn: string): string {
    return this.#fault === 'lease-per-turn-only' ? turn : JSON.stringify([sessionId, turn]);
  }

  async list(options: ListSessionsOptions = {}): Promise<SessionPage> {
    const fault = this.#fault;
    const { checked, offset } = this.#checkList(options);
    await tick();
    const all = Array.from(this.#items.values(), (item) => this.#summary(item));
    const listed =
      checked.userId === undefined || fault === 'list-ignores-user' ? all : all.filter((e) => e.metadata.userId === checked.userId);
    listed.sort(
      fault === 'list-oldest-first' ? (a, b) => compareSessions(b, a) : fault === 'list-ties-ascending' ? tiesAscending : compareSessions,
    );
    const { cursor } = checked;
    const rest = offset !== undefined ? listed.slice(offset) : cursor ? listed.filter((e) => isAfterCursor(e, cursor)) : listed;
    const sessions = rest.slice(0, checked.limit);
    const page: SessionPage = { sessions };
    if (fault !== 'declares-missing-total') page.total = fault === 'list-total-all-users' ? all.length : listed.length;
    if (rest.length > checked.limit || (fault === 'list-cursor-on-last-page' && sessions.length > 0)) {
      page.nextCursor =
        fault === 'list-offset-cursor'
          ? encodeOffset((offset ?? 0) + sessions.length, checked.userId)
          : encodeSessionCursor(sessions[sessions.length - 1]!, checked.userId);
    }
    return page;
  }

  /** The checked list options, each fault bending its own check; `offset` for the offset-cursor fault. */
  #checkList(options: ListSessionsOptions): { checked: CheckedListOptions; offset?: number } {
    const { limit, cursor, ...rest } = options;
    switch (this.#fault) {
      case 'list-any-limit':
        return { checked: { ...checkListOptions({ ...rest, ...(cursor === undefined ? {} : { cursor }) }), limit: limit ?? 20 } };
      case 'list-cursor-any-user': {
        const checked = checkListOptions({ ...rest, ...(limit === undefined ? {} : { limit }) });
        return { checked: { ...checked, cursor: cursor === undefined ? undefined : decodeSessionCursor(cursor, userOfCursor(cursor)) } };
      }
      case 'list-offset-cursor': {
        const checked = checkListOptions({ ...rest, ...(limit === undefined ? {} : { limit }) });
        return { checked, offset: cursor === undefined ? undefined : decodeOffset(cursor, checked.userId) };
      }
      default:
        return { checked: checkListOptions(options) };
    }
  }

  #summary(item: Item): SessionSummary {
    const session = JSON.parse(item.json) as SessionJson;
    const summary: SessionSummary = {
      sessionId: session.sessionId,
      metadata: this.#fault === 'list-stale-metadata' ? structuredClone(item.first) : session.metadata,
    };
    return this.#fault === 'list-includes-state' ? ({ ...summary, state: session.state } as SessionSummary) : summary;
  }
}

function tiesAscending(a: SessionSummary, b: SessionSummary): number {
  const byTime = Date.parse(b.metadata.updatedAt) - Date.parse(a.metadata.updatedAt);
  return byTime !== 0 ? byTime : a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : 0;
}

/** The user a cursor of `encodeSessionCursor` names, read without checking it (the cursor-any-user fault). */
function userOfCursor(cursor: string): string | undefined {
  try {
    const { u } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { u?: unknown };
    return typeof u === 'string' ? u : undefined;
  } catch {
    return undefined;
  }
}

function encodeOffset(offset: number, userId: string | undefined): string {
  return Buffer.from(JSON.stringify({ o: offset, u: userId ?? null })).toString('base64url');
}

function decodeOffset(cursor: string, userId: string | undefined): number {
  let value: { o?: unknown; u?: unknown } | undefined;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as typeof value;
  } catch {
    // refused below
  }
  if (typeof value?.o !== 'number' || (value.u ?? undefined) !== userId)
    throw new ConfigurationError('list: not a cursor of this listing.');
  return value.o;
}

function isEmptyObject(v: unknown): boolean {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0;
}

function hash(text: string): number {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (Math.imul(31, h) + text.charCodeAt(i)) | 0;
  return h;
}

const store = {
  unknown: 'get of an unknown id resolves to undefined',
  roundTrip: 'set then get returns the same session, deep-equal, with the etag set returned',
  noService: 'a session without a serviceSessionId comes back without one',
  metadata: 'metadata round-trips exactly: times, a 200-character title, userId, custom JSON, forkedFrom; absent fields stay absent',
  copies: 'the store holds copies: changing a session after set or after get changes nothing stored',
  etag: 'the etag changes on every set, even of identical content',
  delete: 'delete resolves to whether a session was stored',
  current: 'ifMatch with the current etag writes and returns a new etag',
  stale: 'ifMatch with a stale etag throws ConcurrencyError and writes nothing',
  createOnly: 'ifMatch null creates a session only when none is stored',
  missing: 'ifMatch with an etag on a missing session throws ConcurrencyError and creates nothing',
  raceIfMatch: '20 concurrent sets with the same ifMatch: exactly one wins, the others get ConcurrencyError',
  raceCreate: '20 concurrent creates with ifMatch null: exactly one wins, the others get ConcurrencyError',
  raceBlind: '20 concurrent unconditional sets leave one whole session with the etag its writer got',
  hostile: 'keeps every hostile session id apart and round-trips it',
  agents: 'continues a conversation across two agent instances',
  getUser: "get with userId gives a session to its owner only: another user's, or one with no user, reads as not stored",
  agentUser: "agent.getSession with userId resolves to undefined for another user's session, and to the session for its owner",
  agentMerge: 'saveSession merges a save made since the session was loaded: both turns are kept, each slot takes the side that changed it',
  agentConflict:
    'saveSession throws ConcurrencyError when both saves changed a slot its provider cannot merge, and stores nothing of its own',
  agentNew: 'two agents starting the same new session: both saves land, with both turns',
  blankIds: 'get, set and delete refuse empty and whitespace-only session ids with ConfigurationError and touch nothing',
  nonJson: 'set of a session holding NaN, a Map, a Date or an array state slot throws SessionStateError and writes nothing',
  badMetadata: 'set of a session with malformed metadata throws SessionStateError naming the path and writes nothing',
  tooDeep: 'set of a session nested deeper than 128 levels or holding a cycle throws SessionStateError and writes nothing',
  listOrder:
    "list gives a user's sessions newest first by metadata.updatedAt, ties by sessionId descending, each as { sessionId, metadata }",
  listPaging:
    'paging with every limit from 1 to 100 visits every session exactly once, in order; full pages until the last, which has no cursor',
  listChanges:
    'paging stays exact while sessions are saved again or deleted between pages: none is listed twice or skipped unless it moved',
  listUsers: "list with userId gives only that user's sessions, follows a session to its new user, and without userId lists every user's",
  listLimits: 'list pages 20 by default and refuses a limit of 0, 101, 1.5, -1 or NaN with ConfigurationError',
  listCursors: "list refuses a cursor of another listing (another userId, or every user's) and garbage with InvalidInputError",
  listTotal: 'total, when the store gives it, counts every session of the listing on every page',
  listHostile: 'lists hostile session ids, each once and under its own id',
  listAgent: 'a session saved through an agent is listed for its user, with updatedAt set when its last run ended',
  leaseOne: 'leaseTurn: one holder at a time; the holder renews it; only the holder releases it',
  leaseRace: 'twenty holders asking at once: exactly one takes the lease',
  leaseExpiry: 'a lease whose holder never renews or releases it expires by itself',
  leaseApart: 'leases are per session and per turn, and never show in get or list',
  leaseChecks: 'refuses a blank session id and malformed leases with ConfigurationError, before any I/O',
  leaseAgents: 'a double submit through two agents sharing the store: the model is called once and both callers get the stored reply',
  etagAfterDelete:
    'an etag a deleted session had never matches again: after a delete and a re-create, a set with any pre-delete etag throws ConcurrencyError',
  declared: 'declares its optional capabilities (list, total, turn leases) as it has them',
} as const;

const listTests = [
  store.listOrder,
  store.listPaging,
  store.listChanges,
  store.listUsers,
  store.listLimits,
  store.listCursors,
  store.listTotal,
  store.listHostile,
  store.listAgent,
] as const;

/** What the reference store has, as a first-party backend declares it. */
const HAS_EVERYTHING = { list: true, total: true, leases: true } as const;

/** What a fault variant declares instead, where that is the fault. */
const declaredBy: Partial<Record<StoreFault, SessionStoreCapabilities>> = {
  'declares-absent-list': { list: false },
};

const ifMatchTests = [
  store.stale,
  store.createOnly,
  store.missing,
  store.etagAfterDelete,
  store.raceIfMatch,
  store.raceCreate,
  store.agentMerge,
  store.agentConflict,
  store.agentNew,
] as const;

describeSessionStore('MapSessionStore (reference store)', { create: () => new MapSessionStore(), capabilities: HAS_EVERYTHING });

const storeFaults: Record<StoreFault, readonly string[]> = {
  'ignores-if-match': ifMatchTests,
  'content-etag': [store.etag],
  'check-then-write-race': [store.raceIfMatch, store.raceCreate],
  'live-references': [store.copies],
  'delete-always-true': [store.delete, store.leaseApart],
  'case-insensitive-ids': [store.hostile, store.listHostile],
  'plain-error-on-conflict': ifMatchTests,
  'writes-before-check': ifMatchTests,
  'drops-empty-objects': [
    store.roundTrip,
    store.noService,
    store.metadata,
    store.copies,
    store.etag,
    store.current,
    store.stale,
    store.createOnly,
    store.missing,
    store.etagAfterDelete,
    store.raceIfMatch,
    store.raceCreate,
    store.raceBlind,
    store.hostile,
    store.blankIds,
    store.nonJson,
    store.badMetadata,
    store.tooDeep,
    store.getUser,
    store.leaseApart,
  ],
  'drops-forked-from': [store.metadata],
  'null-when-missing': [store.unknown, store.delete, store.missing, store.hostile, store.nonJson, store.badMetadata, store.leaseApart],
  'caches-reads': [store.hostile, store.agents, store.agentMerge, store.agentConflict, store.agentNew, store.leaseAgents],
  'accepts-blank-ids': [store.blankIds],
  'stores-non-json': [store.nonJson, store.badMetadata, store.tooDeep],
  'validates-after-write': [store.nonJson, store.badMetadata, store.tooDeep],
  'list-oldest-first': [
    store.listOrder,
    store.listPaging,
    store.listChanges,
    store.listUsers,
    store.listLimits,
    store.listCursors,
    store.listTotal,
    store.listHostile,
  ],
  'list-ties-ascending': [store.listOrder, store.listPaging],
  'list-offset-cursor': [store.listChanges],
  'list-ignores-user': [store.listUsers, store.listCursors, store.listTotal, store.listAgent],
  'list-any-limit': [store.listLimits],
  'list-cursor-any-user': [store.listCursors],
  'list-cursor-on-last-page': [store.listOrder, store.listPaging, store.listChanges, store.listTotal, store.listHostile],
  'list-total-all-users': [store.listUsers, store.listTotal],
  'list-includes-state': [store.listOrder, store.listChanges, store.listAgent],
  'list-stale-metadata': [store.listChanges, store.listUsers, store.listAgent],
  'get-ignores-user': [store.getUser],
  'get-hides-from-owner': [store.getUser, store.agentUser, store.listAgent, store.leaseAgents],
  'lease-never-expires': [store.leaseExpiry],
  'lease-ignores-holder': [store.leaseOne, store.leaseRace, store.leaseExpiry, store.leaseAgents],
  'lease-release-any-holder': [store.leaseOne, store.leaseExpiry],
  'lease-per-turn-only': [store.leaseApart],
  'lease-unchecked': [store.leaseChecks],
  'lease-check-then-write-race': [store.leaseRace],
  'etag-per-row-counter': [store.etagAfterDelete],
  'declares-missing-list': [...listTests, store.declared],
  'declares-missing-total': [store.listPaging, store.listChanges, store.listUsers, store.listTotal, store.declared],
  'declares-missing-leases': [
    store.leaseOne,
    store.leaseRace,
    store.leaseExpiry,
    store.leaseApart,
    store.leaseChecks,
    store.leaseAgents,
    store.declared,
  ],
  'declares-absent-list': [store.declared],
};

describe('seeded faults', { tags: ['seeded-fault'] }, () => {
  for (const [fault, expectedFailures] of Object.entries(storeFaults)) {
    describeSessionStore(`broken store: ${fault}`, {
      create: () => new MapSessionStore(fault as StoreFault),
      capabilities: { ...HAS_EVERYTHING, ...declaredBy[fault as StoreFault] },
      expectedFailures,
    });
  }
});

test('every test of the session store suite fails for at least one fault', () => {
  const caught = new Set(Object.values(storeFaults).flat());
  expect(Object.values(store).filter((title) => !caught.has(title))).toEqual([]);
});
