import { SessionStateError } from '../errors.js';
import { shortId } from '../backend/checks.js';
import { jsonEqual } from '../messages/json.js';
import type { ProviderDiagnostic } from '../contracts/run-view.js';

/**
 * Whether two messages say the same thing: same role, same contents (compared as JSON, key order
 * free) and same `authorName`. Their `createdAt` and `metadata` are not compared: a retried save
 * may stamp them differently. A history backend that finds a message stored under the id of one it
 * is asked to save uses this to tell a retry (the same message: skip it) from a conflict (another
 * message under a reused id: refuse the batch, see `messageIdConflict`). Reads stored entries
 * defensively (anything that is not a message object is never the same).
 */
export function sameMessageContent(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  const x = a as { role?: unknown; contents?: unknown; authorName?: unknown };
  const y = b as { role?: unknown; contents?: unknown; authorName?: unknown };
  return x.role === y.role && x.authorName === y.authorName && jsonEqual(x.contents, y.contents);
}

/** What `messageIdConflict` needs to name the conflict. */
export interface MessageIdConflict {
  /** The `sourceId` of the history provider refusing the batch. */
  sourceId: string;
  /** The session whose history holds the message. */
  sessionId: string;
  /** The message id stored with other content. */
  messageId: string;
  /** The index of the message in the refused batch. */
  index: number;
  /** How many messages the refused batch held. */
  batchSize: number;
  /** The run's diagnostic channel (`SaveHistoryArgs.report`), when there is one. */
  report?: ((diagnostic: ProviderDiagnostic) => void) | undefined;
}

/**
 * The error a history backend throws when a batch to save holds a message whose id is already
 * stored with different content (`sameMessageContent` is false): the whole batch is refused and
 * nothing of it written, so no reply is ever dropped as "already stored". Reports a
 * `message-id-conflict` diagnostic first (ids and counts only, never text) through `report`.
 * Returns the error for the backend to throw.
 */
export function messageIdConflict({ sourceId, sessionId, messageId, index, batchSize, report }: MessageIdConflict): SessionStateError {
  const id = shortId(messageId);
  report?.({
    code: 'message-id-conflict',
    message: `History provider "${sourceId}" refused a batch of ${batchSize} message(s) for session ${shortId(sessionId)}: message id ${id} is already stored with different content. Nothing of the batch was stored.`,
    data: { sourceId, sessionId, messageId, index, messages: batchSize },
  });
  return new SessionStateError(
    `$.messages[${index}].id`,
    `message id ${id} is already stored in session ${shortId(sessionId)} of history provider "${sourceId}" with different content (role, contents or authorName); nothing of the batch was stored. Two messages never share an id: give every message a fresh id (generateId()) and keep a service's own id in metadata.`,
  );
}
