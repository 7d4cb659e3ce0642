import { checkSessionId } from '../backend/checks.js';
import { isSessionTime } from '../backend/session-cursor.js';
import { ConfigurationError, SessionStateError } from '../errors.js';
import { generateId } from '../messages/id.js';
import { describeThrown, describeValue, formatPath, isPlainObject, jsonProblem, pathJoin } from '../messages/json.js';
import { Message } from '../messages/message.js';
import type { PendingApproval } from '../contracts/agent-response.js';
import type { JsonObject } from '../contracts/json.js';
import type { SessionView } from '../contracts/run-view.js';
import type { PendingToolCalls, SessionJson, SessionMetadata } from '../contracts/session.js';
import { isoNow } from '../messages/iso-now.js';

/** Fields to start a session with. */
export interface AgentSessionInit {
  /** Default: a new random id. */
  sessionId?: string;
  /** The service's conversation id, for service-managed sessions. */
  serviceSessionId?: string;
  /** Initial provider state, keyed by `sourceId` (e.g. `{ mem0: { userId: 'u1' } }`). */
  state?: Record<string, JsonObject>;
  /** Who the session belongs to (`metadata.userId`): lists, exports and deletes go by it. */
  userId?: string;
  /** A title for lists (`metadata.title`). */
  title?: string;
  /** The app's own fields (`metadata.custom`): a small JSON object. */
  custom?: JsonObject;
}

/** Marks init state the constructor may keep without copying (module-private). */
const adopt = Symbol('adopt');

/** The current session format version. */
export const SESSION_VERSION = 2;

/** The longest `metadata.title`, in characters. */
const MAX_TITLE = 200;
/** The longest `metadata.userId`, in characters. */
const MAX_USER_ID = 512;
/** The largest `metadata.custom`, as JSON text in UTF-8 bytes. */
const MAX_CUSTOM = 8192;

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
  /**
   * Times, owner, title and custom fields. The agent sets `updatedAt` when a run ends; set `title`,
   * `userId` and `custom` as you like (they are checked when the session is saved or restored).
   */
  readonly metadata: SessionMetadata;
  /** The store's version tag when the session was loaded or last saved; not serialized. */
  etag: string | undefined;
  /**
   * Tool calls of the last run waiting for the caller's approval, with the tool messages of the
   * same model response the model has not seen yet; undefined when nothing waits. Serialized. The
   * agent keeps it: answer with `agent.run([], { session, approvals })`; `pending.approvals` lists
   * the calls (as `response.pendingApprovals` did).
   */
  pending: PendingToolCalls | undefined;

  /**
   * Starts a session; `metadata` (all of it, instead of `userId`, `title` and `custom`) is for
   * copies of a session such as forks.
   * @throws ConfigurationError for a bad `userId`, `title`, `custom` or `metadata`, naming the field.
   */
  constructor(init: AgentSessionInit & { [adopt]?: boolean; metadata?: SessionMetadata } = {}) {
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
    if (init.metadata) {
      // Restored metadata was checked as it was read; any other is a caller's (a fork's, say).
      this.metadata = init[adopt] ? init.metadata : structuredClone(checkMetadata(init.metadata, '', ConfigurationError));
    } else {
      const now = isoNow();
      const metadata: SessionMetadata = { createdAt: now, updatedAt: now };
      if (init.userId !== undefined) metadata.userId = init.userId;
      if (init.title !== undefined) metadata.title = init.title;
      if (init.custom !== undefined) metadata.custom = structuredClone(init.custom);
      // The times made here need no check (a run without a session makes one of these every time).
      const given = init.userId !== undefined || init.title !== undefined || init.custom !== undefined;
      this.metadata = given ? checkMetadata(metadata, '', ConfigurationError) : metadata;
    }
    this.etag = undefined;
    this.pending = undefined;
  }

  /** The state slot of `sourceId`, created as `{}` when absent. */
  stateOf(sourceId: string): JsonObject {
    return (this.state[sourceId] ??= {});
  }

  /** The session as JSON (`JSON.stringify(session)` uses this too). */
  toJSON(): SessionJson {
    const json: SessionJson = {
      type: 'ctx.session',
      version: SESSION_VERSION,
      sessionId: this.sessionId,
      metadata: this.metadata,
      state: this.state,
    };
    if (this.serviceSessionId !== undefined) json.serviceSessionId = this.serviceSessionId;
    if (this.pending !== undefined) json.pending = this.pending;
    return json;
  }

  /**
   * Validates session JSON (an object, or a string to parse) and returns the session.
   * @throws SessionStateError naming the offending path, for any malformed or unsupported input.
   */
  static fromJSON(input: unknown): AgentSession {
    const json = parseSessionJson(input);
    // A string was parsed just now, so its state is already a private copy.
    let { state, pending, metadata } = json;
    if (typeof input !== 'string') {
      try {
        state = structuredClone(state);
        pending = structuredClone(pending);
        metadata = structuredClone(metadata);
      } catch (error) {
        // Checked as JSON a moment ago: only a getter or a Proxy that changed its mind gets here.
        throw new SessionStateError('$', `could not be copied (${describeThrown(error)})`, { cause: error });
      }
    }
    const session = new AgentSession({
      sessionId: json.sessionId,
      serviceSessionId: json.serviceSessionId,
      state,
      metadata,
      [adopt]: true,
    });
    session.pending = pending;
    return session;
  }
}

/**
 * Checks that `input` is session JSON (or a string holding it) and returns it typed, in the current
 * version (a version-1 session gets metadata with the time of this call as both times):
 * tool calls waiting for approval (`pending`) well-formed, every state slot a JSON object, every value in it plain JSON (no `NaN`, `Infinity`, `undefined`,
 * function, class instance such as a `Map` or a `Date`, cycle, or nesting deeper than 128 levels).
 * Never throws anything else, whatever the input (a bigint, a Proxy, a getter that throws).
 * @throws SessionStateError naming the offending path and the session: `context.sessionId` (a store
 *   passes the id it read the data under), else the `sessionId` the JSON holds, when it holds one.
 */
export function parseSessionJson(input: unknown, context?: { sessionId?: string | undefined }): SessionJson {
  let value = input;
  if (typeof input === 'string') {
    try {
      value = JSON.parse(input);
    } catch (error) {
      throw new SessionStateError('$', `is not valid JSON (${describeThrown(error)})`, { cause: error, sessionId: context?.sessionId });
    }
  }
  try {
    return checkSession(value);
  } catch (error) {
    const sessionId = context?.sessionId ?? ownSessionId(value);
    if (SessionStateError.isInstance(error)) throw error instanceof SessionStateError ? error.inSession(sessionId) : error;
    throw new SessionStateError('$', `could not be read (${describeThrown(error)})`, { cause: error, sessionId });
  }
}

/** The `sessionId` a session object names, when it is a non-blank string (read defensively: a getter may throw). */
function ownSessionId(value: unknown): string | undefined {
  try {
    const id = isPlainObject(value) ? value.sessionId : undefined;
    return typeof id === 'string' && id.trim() !== '' ? id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Checks a session a store is about to write: its id as `checkSessionId` does, then everything as
 * `parseSessionJson` does, so a store never writes what it could not read back. Returns it typed.
 * For store authors: call it first in `set`, before touching storage.
 * @throws ConfigurationError when `sessionId` is empty or only whitespace.
 * @throws SessionStateError naming the offending path, for anything else that is not session JSON.
 */
export function checkSessionForWrite(session: unknown): SessionJson {
  if (typeof session === 'string') throw new SessionStateError('$', 'must be a session object, got a string');
  if (isPlainObject(session)) {
    let sessionId: unknown;
    try {
      sessionId = session.sessionId;
    } catch {
      // parseSessionJson names the failure.
    }
    if (typeof sessionId === 'string') checkSessionId(sessionId);
  }
  return parseSessionJson(session);
}

/**
 * The JSON text of a session `checkSessionForWrite` accepted.
 * @throws SessionStateError when a getter or a Proxy in it changed its mind since the check.
 */
export function serializeSessionJson(session: SessionJson): string {
  try {
    return JSON.stringify(session);
  } catch (error) {
    throw new SessionStateError('$', `could not be serialized (${describeThrown(error)})`, { cause: error });
  }
}

/** Levels above a state slot: the session object and its `state`. */
const SLOT_DEPTH = 2;

function checkSession(value: unknown): SessionJson {
  if (!isPlainObject(value)) throw new SessionStateError('$', `must be a session object, got ${describeValue(value)}`);
  if (value.type !== 'ctx.session') throw new SessionStateError('$.type', `must be "ctx.session", got ${describeValue(value.type)}`);
  if (value.version !== SESSION_VERSION && value.version !== 1) {
    throw new SessionStateError(
      '$.version',
      `unsupported session version ${describeValue(value.version)}; this version of @ctx/core reads versions 1 and ${SESSION_VERSION}`,
    );
  }
  const { sessionId, serviceSessionId } = value;
  // No state at all is a session no provider has written to yet (hand-written JSON, say).
  const state = value.state === undefined ? {} : value.state;
  if (typeof sessionId !== 'string' || sessionId.length === 0) throw new SessionStateError('$.sessionId', 'must be a non-empty string');
  if (serviceSessionId !== undefined && serviceSessionId !== null && typeof serviceSessionId !== 'string') {
    throw new SessionStateError('$.serviceSessionId', `must be a string when present, got ${describeValue(serviceSessionId)}`);
  }
  if (!isPlainObject(state)) throw new SessionStateError('$.state', `must be an object, got ${describeValue(state)}`);
  for (const sourceId of Object.keys(state)) {
    const slot = state[sourceId];
    if (!isPlainObject(slot)) {
      throw new SessionStateError(
        pathJoin('$.state', sourceId),
        `must be an object (each provider state slot is a JSON object), got ${describeValue(slot)}`,
      );
    }
    const problem = jsonProblem(slot, SLOT_DEPTH);
    if (problem) throw new SessionStateError(formatPath('$.state', [sourceId, ...problem[0]]), problem[1]);
  }
  const metadata = value.version === 1 ? migratedMetadata() : checkMetadata(value.metadata, '$.metadata', SessionStateError);
  const json: SessionJson = {
    type: 'ctx.session',
    version: SESSION_VERSION,
    sessionId,
    metadata,
    state: state as Record<string, JsonObject>,
  };
  if (typeof serviceSessionId === 'string') json.serviceSessionId = serviceSessionId;
  const pending = checkPending(value.pending);
  if (pending) json.pending = pending;
  return json;
}

/** Checks `$.pending` (absent or null: nothing waits) and returns it without unknown fields. */
function checkPending(value: unknown): PendingToolCalls | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isPlainObject(value)) throw new SessionStateError('$.pending', `must be an object, got ${describeValue(value)}`);
  const { approvals, messages } = value;
  if (!Array.isArray(approvals) || approvals.length === 0) {
    throw new SessionStateError('$.pending.approvals', `must be a non-empty array of tool calls, got ${describeValue(approvals)}`);
  }
  const ids = new Set<string>();
  const checked = approvals.map((entry: unknown, i): PendingApproval => {
    const path = formatPath('$.pending.approvals', [i]);
    if (!isPlainObject(entry)) throw new SessionStateError(path, `must be an object, got ${describeValue(entry)}`);
    const { callId, toolName, arguments: args } = entry;
    if (typeof callId !== 'string' || callId.length === 0) throw new SessionStateError(`${path}.callId`, 'must be a non-empty string');
    if (ids.has(callId)) throw new SessionStateError(`${path}.callId`, `repeats call id ${JSON.stringify(callId)}`);
    ids.add(callId);
    if (typeof toolName !== 'string') throw new SessionStateError(`${path}.toolName`, `must be a string, got ${describeValue(toolName)}`);
    if (typeof args !== 'string') throw new SessionStateError(`${path}.arguments`, `must be a string, got ${describeValue(args)}`);
    return { callId, toolName, arguments: args };
  });
  if (!Array.isArray(messages))
    throw new SessionStateError('$.pending.messages', `must be an array of messages, got ${describeValue(messages)}`);
  const kept = messages.map((m: unknown, i) => Message.parse(m, formatPath('$.pending.messages', [i])));
  return { approvals: checked, messages: kept };
}

/** The metadata of a version-1 session, which kept none: both times are now. */
function migratedMetadata(): SessionMetadata {
  const now = isoNow();
  return { createdAt: now, updatedAt: now };
}

/**
 * Checks session metadata and returns it without unknown fields. Stored input (`Err` is
 * `SessionStateError`, the default) fails naming the JSON path under `path`; a caller's fields
 * (`ConfigurationError`, from `createSession`) fail naming the field as the caller passed it.
 * @throws `Err` naming what is wrong.
 */
export function checkMetadata(
  value: unknown,
  path: string,
  Err: typeof SessionStateError | typeof ConfigurationError = SessionStateError,
): SessionMetadata {
  const fail = (at: readonly (string | number)[], problem: string): never => {
    if (Err === SessionStateError) throw new SessionStateError(formatPath(path, at), problem);
    throw new ConfigurationError(
      `Session metadata: ${formatPath('', at).replace(/^\./, '')} ${problem}. Fix the value passed to createSession (or new AgentSession).`,
    );
  };
  if (!isPlainObject(value)) return fail([], `must be an object, got ${describeValue(value)}`);
  const { createdAt, updatedAt, title, userId, custom, forkedFrom } = value;
  const time = (v: unknown, field: string): string => {
    if (!isSessionTime(v)) {
      return fail(
        [field],
        `must be an ISO 8601 UTC time with milliseconds, as Date.toISOString gives it (like "2026-01-31T12:00:00.000Z"), got ${describeValue(v)}`,
      );
    }
    return v;
  };
  const metadata: SessionMetadata = { createdAt: time(createdAt, 'createdAt'), updatedAt: time(updatedAt, 'updatedAt') };
  if (title !== undefined && title !== null) {
    if (typeof title !== 'string' || title.length > MAX_TITLE) {
      fail(['title'], `must be a string of at most ${MAX_TITLE} characters, got ${describeValue(title)}`);
    }
    metadata.title = title as string;
  }
  if (userId !== undefined && userId !== null) {
    if (typeof userId !== 'string' || userId.trim().length === 0 || userId.length > MAX_USER_ID) {
      fail(['userId'], `must be a non-blank string of at most ${MAX_USER_ID} characters, got ${describeValue(userId)}`);
    }
    metadata.userId = userId as string;
  }
  if (custom !== undefined && custom !== null) {
    if (!isPlainObject(custom)) fail(['custom'], `must be a JSON object, got ${describeValue(custom)}`);
    const problem = jsonProblem(custom, SLOT_DEPTH);
    if (problem) fail(['custom', ...problem[0]], problem[1]);
    const bytes = new TextEncoder().encode(JSON.stringify(custom)).length;
    if (bytes > MAX_CUSTOM) fail(['custom'], `must be at most ${MAX_CUSTOM} bytes as JSON (UTF-8), got ${bytes}`);
    metadata.custom = custom as JsonObject;
  }
  if (forkedFrom !== undefined && forkedFrom !== null) {
    const from = isPlainObject(forkedFrom) ? forkedFrom : {};
    const nonEmpty = (v: unknown) => typeof v === 'string' && v.length > 0;
    if (!nonEmpty(from.sessionId) || (from.messageId !== undefined && !nonEmpty(from.messageId))) {
      fail(['forkedFrom'], `must be { sessionId: string, messageId?: string } with non-empty ids, got ${describeValue(forkedFrom)}`);
    }
    const sessionId = from.sessionId as string;
    metadata.forkedFrom = from.messageId === undefined ? { sessionId } : { sessionId, messageId: from.messageId as string };
  }
  return metadata;
}
