import { SessionStateError } from '../errors.js';
import { messageIdConflict, sameMessageContent } from '../history/message-conflict.js';
import { formatBytes, jsonByteLength } from '../messages/json-bytes.js';
import { describeValue, formatPath } from '../messages/json.js';
import { Message } from '../messages/message.js';
import type { ProviderDiagnostic } from '../contracts/run-view.js';
import { checkInteger, checkSessionId, shortId } from './checks.js';

/** What `checkHistoryBatch` needs besides the batch. */
export interface CheckHistoryBatchOptions {
  /** The `sourceId` of the history provider saving the batch (named in a conflict). */
  sourceId: string;
  /** The run's diagnostic channel (`SaveHistoryArgs.report`): a conflict reports `message-id-conflict` through it. */
  report?: ((diagnostic: ProviderDiagnostic) => void) | undefined;
  /**
   * The most UTF-8 bytes of JSON one message may take in this backend (an item or value size
   * limit, less what the backend adds around it). Default: no limit.
   */
  maxMessageBytes?: number | undefined;
  /** Who sets `maxMessageBytes`, named in the error (`"Cosmos DB"`, `"Redis"`). Default `"this backend"`. */
  backend?: string | undefined;
}

/** The batch `checkHistoryBatch` accepted. */
export interface CheckedHistoryBatch {
  /** The messages to store, in order, each id once (the first of a repeated id wins). */
  readonly messages: readonly Message[];
  /** For each of `messages`, its index in the batch as given (to name it in a later error). */
  readonly indexes: readonly number[];
}

/**
 * Checks a batch a history provider is about to save, before anything is written, as the built-in
 * histories do: the session id (`checkSessionId`), every message as a later read would check it
 * (`Message.parse`: plain JSON all through, so what is stored reads back as what was saved), no
 * empty message id (ids de-duplicate stored history), each message within `maxMessageBytes`, and no
 * id twice in the batch with other content (the same message twice is kept once). Call it first in
 * `saveMessages` and `replaceMessages`; what it does not check is the stored history (an id stored
 * with other content: `sameMessageContent`, `messageIdConflict`).
 * @throws ConfigurationError for a blank session id.
 * @throws SessionStateError naming `$.messages[i]...` and the session: a malformed message, an empty
 *   id, a message over `maxMessageBytes` (with its size and the limit), or (from `messageIdConflict`,
 *   with its `message-id-conflict` diagnostic) an id repeated with other content. Nothing is stored.
 */
export function checkHistoryBatch(sessionId: string, messages: readonly Message[], options: CheckHistoryBatchOptions): CheckedHistoryBatch {
  checkSessionId(sessionId);
  const { sourceId, report, maxMessageBytes, backend = 'this backend' } = options;
  if (maxMessageBytes !== undefined) checkInteger('checkHistoryBatch', 'maxMessageBytes', maxMessageBytes);
  if (!Array.isArray(messages)) {
    throw new SessionStateError('$.messages', `must be an array of messages, got ${describeValue(messages)}`, { sessionId });
  }
  const seen = new Map<string, Message>();
  const kept: Message[] = [];
  const indexes: number[] = [];
  for (let i = 0; i < messages.length; i++) {
    // Paths are only built for a message that fails: this check runs on every message a backend saves.
    const value: unknown = messages[i];
    const m = Message.isMessage(value) ? value : Message.parse(value, formatPath('$.messages', [i]), { sessionId });
    if (m.id === '')
      throw new SessionStateError(`${formatPath('$.messages', [i])}.id`, 'must not be empty: message ids de-duplicate stored history', {
        sessionId,
      });
    if (maxMessageBytes !== undefined) {
      const bytes = jsonByteLength(m, maxMessageBytes);
      if (bytes > maxMessageBytes) {
        throw new SessionStateError(
          formatPath('$.messages', [i]),
          `message ${shortId(m.id)} takes more than ${maxMessageBytes} bytes of JSON (${formatBytes(maxMessageBytes)}), the most ${backend} stores per message; nothing of the batch was stored. Store large content elsewhere and keep a reference to it in the message`,
          { sessionId },
        );
      }
    }
    const earlier = seen.get(m.id);
    if (earlier !== undefined) {
      if (!sameMessageContent(earlier, m))
        throw messageIdConflict({ sourceId, sessionId, messageId: m.id, index: i, batchSize: messages.length, report });
      continue;
    }
    seen.set(m.id, m);
    kept.push(m);
    indexes.push(i);
  }
  return { messages: kept, indexes };
}
