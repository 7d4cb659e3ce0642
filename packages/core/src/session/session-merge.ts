import { shortId } from '../backend/checks.js';
import { abortable } from '../backend/deadline.js';
import { ConcurrencyError, ConfigurationError, CtxError, describe, isAbortError } from '../errors.js';
import { isPlainObject, jsonEqual, pathJoin } from '../messages/json.js';
import type { JsonObject } from '../contracts/json.js';
import type { ContextProvider } from '../contracts/run-view.js';
import type { SessionStore } from '../contracts/session-store.js';
import type { SessionJson, SessionMetadata } from '../contracts/session.js';
import { type AgentSession, parseSessionJson } from './agent-session.js';

/**
 * How many times a save is tried: the first write, then a reload and merge for each conflict. Every
 * conflicting round lets another writer's save land, so a session that keeps changing still ends.
 */
export const MAX_SAVE_ATTEMPTS = 8;

/**
 * The session JSON each session was loaded from (or last saved as): the base of the three-way merge
 * when a save conflicts. `null`: the session was new when loaded (the store held none). Not part of
 * the session's JSON.
 */
const bases = new WeakMap<AgentSession, SessionJson | null>();

/** Whether every run on a session since its last save stored its turn outside the session. */
const turns = new WeakMap<AgentSession, boolean>();

/** Records what `session` was loaded from the store as (`null`: it was not stored). */
export function setSessionBase(session: AgentSession, base: SessionJson | null): void {
  bases.set(session, base);
}

/**
 * What a save of `session` merges against: the recorded base, `null` for a session that was never
 * stored (no etag), or undefined when the session carries an etag nobody recorded a base for (it
 * cannot be merged).
 */
function baseOf(session: AgentSession): SessionJson | null | undefined {
  if (bases.has(session)) return bases.get(session);
  return session.etag === undefined ? null : undefined;
}

/**
 * Notes that a run on `session` ended, and whether a history provider stored its turn outside the
 * session (`storedOutside`), for the `turnStored` of a failed save.
 */
export function recordTurn(session: AgentSession, storedOutside: boolean): void {
  turns.set(session, (turns.get(session) ?? true) && storedOutside);
}

/** Options of `saveMerging`. */
export interface SaveMergingOptions {
  /** Providers whose `mergeState` merges their slot, by `sourceId`. */
  providers: readonly ContextProvider[];
  /** Aborts the save (between attempts, and each store call). */
  signal?: AbortSignal | undefined;
}

/**
 * Saves `session` to `store` only over what it was loaded from; when the store changed meanwhile,
 * reloads it and merges three ways (`mergeSessionJson`), up to `MAX_SAVE_ATTEMPTS` writes. On
 * success the session holds what was stored (the merge included), its new etag and its new base.
 * @throws ConcurrencyError when both changed something that cannot be merged, the session was
 *   deleted meanwhile (`sessionDeleted: true`), or the store kept changing; `turnStored` says whether the last
 *   run's turn is stored anyway. Nothing of the session is stored then.
 */
export async function saveMerging(store: SessionStore, session: AgentSession, options: SaveMergingOptions): Promise<void> {
  const { signal } = options;
  const signalOption = signal ? { signal } : {};
  let ours = session.toJSON();
  let etag = session.etag;
  const base = baseOf(session);
  for (let attempt = 1; ; attempt++) {
    try {
      const written = await store.set(ours, { ifMatch: etag ?? null, ...signalOption });
      markSaved(session, ours, written);
      turns.delete(session);
      return;
    } catch (error) {
      if (!ConcurrencyError.isInstance(error) || isAbortError(error, signal)) throw error;
      const stop = (message: string, cause: unknown = error, deleted = false): never => {
        throw new ConcurrencyError(session.sessionId, `${message} ${advice(turns.get(session))}`, {
          cause,
          ...(turns.has(session) ? { turnStored: turns.get(session)! } : {}),
          ...(deleted ? { sessionDeleted: true } : {}),
        });
      };
      const id = shortId(session.sessionId);
      if (base === undefined) {
        stop(
          `Session ${id} was saved by another writer since it was loaded, and it cannot be merged: its etag was set by hand, not by agent.getSession.`,
        );
      }
      if (attempt >= MAX_SAVE_ATTEMPTS) {
        stop(`Session ${id} kept changing in the store: ${attempt} saves in a row met a newer version.`);
      }
      signal?.throwIfAborted();
      const stored = await store.get(session.sessionId, signalOption);
      if (!stored) stop(`Session ${id} was deleted from the store since it was loaded; this save would bring it back.`, error, true);
      const merged = mergeSessionJson(base ?? null, session.toJSON(), parseSessionJson(stored!.session), options.providers);
      if (typeof merged === 'string') stop(`Session ${id}: ${merged}`);
      ours = merged as SessionJson;
      etag = stored!.etag;
    }
  }
}

/** What the caller of a failed save should do, from whether the turn is stored. */
function advice(turnStored: boolean | undefined): string {
  if (turnStored === true)
    return "This run's turn is stored in its history (outside the session): do not run it again; only the session's own changes were lost.";
  if (turnStored === false)
    return "This run's turn is not stored outside the session (with persistence 'model-call', part of it may be): run it again with the same input message (same id); the turn is stored once.";
  return 'Nothing of this save was stored: reload the session and apply the change again.';
}

/** Makes `session` hold `json` as stored under `etag`, which becomes the base of its next save. */
export function markSaved(session: AgentSession, json: SessionJson, etag: string): void {
  const saved = snapshot(json) as SessionJson;
  if (json.state !== session.state) {
    // A merged version: the session takes it, so the caller sees what was stored. Slots are changed
    // in place, so a provider holding its slot (a run still going on) keeps the live one.
    for (const key of Object.keys(session.state)) if (!(key in json.state)) delete session.state[key];
    for (const [key, slot] of Object.entries(json.state)) {
      const live = session.state[key];
      if (live === slot) continue;
      if (live === undefined) session.state[key] = slot;
      else {
        for (const field of Object.keys(live)) delete live[field];
        Object.assign(live, slot);
      }
    }
    for (const key of Object.keys(session.metadata) as (keyof SessionMetadata)[]) delete session.metadata[key];
    Object.assign(session.metadata, json.metadata);
    session.pending = json.pending;
    session.serviceSessionId = json.serviceSessionId;
  }
  session.etag = etag;
  bases.set(session, saved);
}

/**
 * A copy of JSON that later changes to `value` cannot reach; frozen parts (stored history messages
 * are frozen) are shared rather than copied, so a long conversation costs its array, not its text.
 */
function snapshot(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value;
  if (Array.isArray(value)) return value.map(snapshot);
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) if (item !== undefined) copy[key] = snapshot(item);
  return copy;
}

/**
 * Merges two versions of a session made from one `base` (`null`: both were made without a stored
 * one): `ours` (being saved) and `theirs` (stored since). A state slot only one side changed takes
 * that side's; a slot both changed takes either when they agree, else the merge of its provider's
 * `mergeState`. `metadata.updatedAt` is the later; `title`, `custom`, `userId`, `forkedFrom`,
 * `pending` and `serviceSessionId` are ours when we changed them, else theirs; `createdAt` theirs.
 * Resolves to the merged session JSON, or a sentence saying what conflicts.
 */
export function mergeSessionJson(
  base: SessionJson | null,
  ours: SessionJson,
  theirs: SessionJson,
  providers: readonly ContextProvider[],
): SessionJson | string {
  const baseState = base?.state ?? {};
  const state: Record<string, JsonObject> = Object.create(null);
  const conflicts: string[] = [];
  const slots = new Set([...Object.keys(baseState), ...Object.keys(ours.state), ...Object.keys(theirs.state)]);
  for (const sourceId of slots) {
    const b = baseState[sourceId];
    const o = ours.state[sourceId];
    const t = theirs.state[sourceId];
    let slot: JsonObject | undefined;
    if (jsonEqual(b, o)) slot = t;
    else if (jsonEqual(b, t) || jsonEqual(o, t)) slot = o;
    else {
      const merged = mergeSlot(sourceId, b, o, t, ours.sessionId, providers);
      if (typeof merged === 'string') {
        conflicts.push(merged);
        continue;
      }
      slot = merged;
    }
    if (slot !== undefined) state[sourceId] = slot;
  }
  const baseMeta = base?.metadata;
  if (base === null && ours.metadata.userId !== theirs.metadata.userId) {
    conflicts.push(
      `it was created by two writers at once for different users (${describeUser(theirs.metadata.userId)} and ${describeUser(ours.metadata.userId)})`,
    );
  }
  const serviceSessionId = pick(base?.serviceSessionId, ours.serviceSessionId, theirs.serviceSessionId);
  if (
    !jsonEqual(base?.serviceSessionId, ours.serviceSessionId) &&
    !jsonEqual(base?.serviceSessionId, theirs.serviceSessionId) &&
    ours.serviceSessionId !== theirs.serviceSessionId
  ) {
    conflicts.push('both continued the conversation the service keeps (serviceSessionId), which cannot fork');
  }
  if (conflicts.length > 0) {
    return `this save and another one made since the session was loaded conflict: ${conflicts.join('; ')}. Nothing of this save was stored.`;
  }
  const metadata: SessionMetadata = {
    createdAt: theirs.metadata.createdAt,
    updatedAt:
      Date.parse(ours.metadata.updatedAt) >= Date.parse(theirs.metadata.updatedAt) ? ours.metadata.updatedAt : theirs.metadata.updatedAt,
  };
  for (const field of ['title', 'userId', 'custom', 'forkedFrom'] as const) {
    const value = pick(baseMeta?.[field], ours.metadata[field], theirs.metadata[field]);
    if (value !== undefined) (metadata as unknown as Record<string, unknown>)[field] = value;
  }
  const json: SessionJson = { type: 'ctx.session', version: 2, sessionId: ours.sessionId, metadata, state };
  if (serviceSessionId !== undefined) json.serviceSessionId = serviceSessionId;
  const pending = pick(base?.pending, ours.pending, theirs.pending);
  if (pending !== undefined) json.pending = pending;
  return json;
}

/** Ours when we changed it from `base`, else theirs. */
function pick<T>(base: T | undefined, ours: T | undefined, theirs: T | undefined): T | undefined {
  return jsonEqual(base, ours) ? theirs : ours;
}

function describeUser(userId: string | undefined): string {
  return userId === undefined ? 'no user' : shortId(userId);
}

/** A slot both sides changed differently, merged by its provider, or a phrase saying why it cannot be. */
function mergeSlot(
  sourceId: string,
  base: JsonObject | undefined,
  ours: JsonObject | undefined,
  theirs: JsonObject | undefined,
  sessionId: string,
  providers: readonly ContextProvider[],
): JsonObject | string {
  const path = pathJoin('$.state', sourceId);
  const provider = providers.find((p) => p.sourceId === sourceId);
  if (!provider?.mergeState) {
    return `both changed the state slot ${path}, and ${provider ? `provider ${shortId(sourceId)} cannot merge it (it has no mergeState)` : 'no provider of the agent owns it'}`;
  }
  let merged: JsonObject | undefined;
  try {
    merged = provider.mergeState({ base: base ?? {}, ours: ours ?? {}, theirs: theirs ?? {}, path, sessionId });
  } catch (error) {
    if (CtxError.isInstance(error) && !ConfigurationError.isInstance(error)) throw error;
    return `both changed the state slot ${path}, and provider ${shortId(sourceId)} failed to merge it (${describe(error)})`;
  }
  if (merged === undefined) return `both changed the state slot ${path}, and provider ${shortId(sourceId)} cannot merge the two`;
  if (!isPlainObject(merged)) {
    return `both changed the state slot ${path}, and provider ${shortId(sourceId)} merged it into something that is not a JSON object`;
  }
  return merged;
}

/** Runs saves of one session one after another (`saveQueue`). */
export type SaveQueue = <T>(sessionId: string, signal: AbortSignal | undefined, save: () => Promise<T>) => Promise<T>;

/**
 * A queue per session id: saves of one session through it run one at a time, in order, so runs of
 * one process on one session never conflict with each other (other processes still merge). A
 * caller whose `signal` aborts while it waits leaves the queue with the abort reason.
 */
export function saveQueue(): SaveQueue {
  const tails = new Map<string, Promise<void>>();
  return async (sessionId, signal, save) => {
    const previous = tails.get(sessionId) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => mine);
    tails.set(sessionId, tail);
    try {
      await abortable(previous, signal);
      return await save();
    } finally {
      release();
      if (tails.get(sessionId) === tail) tails.delete(sessionId);
    }
  };
}
