import type { PendingApproval } from './agent-response.js';
import type { JsonObject } from './json.js';
import type { Message } from './message.js';

/**
 * What a session says about itself: times, owner, title and the app's own fields. Stores index it
 * (listing by user, newest first); providers never need it.
 */
export interface SessionMetadata {
  /** When the session was created: ISO 8601 in UTC with milliseconds (`2026-11-24T09:30:00.000Z`). */
  createdAt: string;
  /** When a run last succeeded on it (or it was created), same format. Listing orders by it, newest first. */
  updatedAt: string;
  /** A short title for lists (at most 200 characters); set it yourself or with `TitleProvider`. */
  title?: string;
  /** Who the session belongs to (a user, tenant or resource id): lists, exports and deletes go by it. */
  userId?: string;
  /** The app's own fields: a small JSON object (at most 8 KiB as JSON). */
  custom?: JsonObject;
  /** Set on a session made by `agent.forkSession`: the session (and message) it was copied from. */
  forkedFrom?: { sessionId: string; messageId?: string };
}

/**
 * The serialized form of a session. Version 2 added `metadata`; a version-1 session is migrated on
 * restore (its times are the time of the migration, as version 1 kept none).
 */
export interface SessionJson {
  /** Always `ctx.session`. */
  type: 'ctx.session';
  /** The format version. */
  version: 2;
  /** The session's id. */
  sessionId: string;
  /** Times, owner, title and custom fields. */
  metadata: SessionMetadata;
  /** The service conversation id, when the service keeps the conversation. */
  serviceSessionId?: string;
  /** Each provider's JSON slot, keyed by `sourceId`. */
  state: Record<string, JsonObject>;
  /** Tool calls waiting for approval, when a run ended with some. */
  pending?: PendingToolCalls;
}

/**
 * What a session keeps while tool calls wait for approval: the calls, and the tool messages with
 * the results of the other calls of the same model response (run, denied, or answered so far),
 * which go to the model with the last answer.
 */
export interface PendingToolCalls {
  /** The calls waiting, in the order the model made them. Never empty. */
  approvals: PendingApproval[];
  /** Tool messages the model has not been sent yet, oldest first. */
  messages: Message[];
}
