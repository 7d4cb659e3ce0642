import { SessionStateError } from '../errors.js';
import { generateId } from '../messages/id.js';
import { findNonJson, isPlainObject, pathJoin } from '../messages/json.js';
import type { JsonObject } from '../spec/json.js';
import type { SessionView } from '../spec/run-view.js';
import type { SessionJson } from '../spec/session.js';

/** Fields to start a session with. */
export interface AgentSessionInit {
  /** Default: a new random id. */
  sessionId?: string;
  /** The service's conversation id, for service-managed sessions. */
  serviceSessionId?: string;
  /** Initial provider state, keyed by `sourceId` (e.g. `{ mem0: { userId: 'u1' } }`). */
  state?: Record<string, JsonObject>;
}

/** Marks init state the constructor may keep without copying (module-private). */
const adopt = Symbol('adopt');

/** The current session format version. */
export const SESSION_VERSION = 1;

/**
 * One conversation: its id, the service's conversation id, and a JSON state slot per provider.
 * Providers keep all per-session data here, so a session is plain JSON that can live anywhere
 * between requests.
 */
export class AgentSession implements SessionView {
  readonly sessionId: string;
  /** Set when the service keeps the conversation; updated by the agent after each run. */
  serviceSessionId: string | undefined;
  /** Provider state, keyed by `sourceId`. Must stay plain JSON. */
  readonly state: Record<string, JsonObject>;
  /** The store's version tag when the session was loaded or last saved; not serialized. */
  etag: string | undefined;

  constructor(init: AgentSessionInit & { [adopt]?: boolean } = {}) {
    this.sessionId = init.sessionId ?? generateId();
    if (typeof this.sessionId !== 'string' || this.sessionId.length === 0) {
      throw new SessionStateError('$.sessionId', 'must be a non-empty string');
    }
    if (init.serviceSessionId !== undefined && typeof init.serviceSessionId !== 'string') {
      throw new SessionStateError('$.serviceSessionId', 'must be a string when present');
    }
    this.serviceSessionId = init.serviceSessionId;
    // A null prototype keeps any key, even "__proto__", an ordinary own property.
    this.state = Object.assign(
      Object.create(null) as Record<string, JsonObject>,
      init.state && (init[adopt] ? init.state : structuredClone(init.state)),
    );
    this.etag = undefined;
  }

  /** The state slot of `sourceId`, created as `{}` when absent. */
  stateOf(sourceId: string): JsonObject {
    return (this.state[sourceId] ??= {});
  }

  /** The session as JSON (`JSON.stringify(session)` uses this too). */
  toJSON(): SessionJson {
    const json: SessionJson = { type: 'ctx.session', version: SESSION_VERSION, sessionId: this.sessionId, state: this.state };
    if (this.serviceSessionId !== undefined) json.serviceSessionId = this.serviceSessionId;
    return json;
  }

  /**
   * Validates session JSON (an object, or a string to parse) and returns the session.
   * @throws SessionStateError naming the offending path, for any malformed or unsupported input.
   */
  static fromJSON(input: unknown): AgentSession {
    const json = parseSessionJson(input);
    // A string was parsed just now, so its state is already a private copy.
    return new AgentSession({
      sessionId: json.sessionId,
      serviceSessionId: json.serviceSessionId,
      state: json.state,
      [adopt]: typeof input === 'string',
    });
  }
}

/**
 * Checks that `input` is version-1 session JSON (or a string holding it) and returns it typed.
 * @throws SessionStateError naming the offending path.
 */
export function parseSessionJson(input: unknown): SessionJson {
  let value = input;
  if (typeof input === 'string') {
    try {
      value = JSON.parse(input);
    } catch (error) {
      throw new SessionStateError('$', `is not valid JSON (${(error as Error).message})`, { cause: error });
    }
  }
  if (!isPlainObject(value))
    throw new SessionStateError(
      '$',
      `must be a session object, got ${value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value}`,
    );
  if (value.type !== 'ctx.session')
    throw new SessionStateError('$.type', `must be "ctx.session", got ${JSON.stringify(value.type) ?? 'undefined'}`);
  if (value.version !== SESSION_VERSION) {
    throw new SessionStateError(
      '$.version',
      `unsupported session version ${JSON.stringify(value.version) ?? 'undefined'}; this version of @ctx/core reads version ${SESSION_VERSION}`,
    );
  }
  if (typeof value.sessionId !== 'string' || value.sessionId.length === 0)
    throw new SessionStateError('$.sessionId', 'must be a non-empty string');
  if (value.serviceSessionId !== undefined && value.serviceSessionId !== null && typeof value.serviceSessionId !== 'string') {
    throw new SessionStateError('$.serviceSessionId', 'must be a string when present');
  }
  if (!isPlainObject(value.state)) throw new SessionStateError('$.state', 'must be an object');
  for (const [sourceId, slot] of Object.entries(value.state)) {
    const path = pathJoin('$.state', sourceId);
    if (!isPlainObject(slot)) throw new SessionStateError(path, 'must be an object (each provider state slot is a JSON object)');
    const bad = findNonJson(slot, path);
    if (bad) throw new SessionStateError(bad, 'is not JSON');
  }
  const json: SessionJson = {
    type: 'ctx.session',
    version: SESSION_VERSION,
    sessionId: value.sessionId,
    state: value.state as Record<string, JsonObject>,
  };
  if (typeof value.serviceSessionId === 'string') json.serviceSessionId = value.serviceSessionId;
  return json;
}
