import { InvalidInputError } from '../errors.js';
import type { Role } from '../contracts/message.js';
import type { IndexedMessage, VectorRange, VectorRecord } from '../contracts/vector-index.js';
import { shortId } from './checks.js';

const ROLES: ReadonlySet<string> = new Set<Role>(['system', 'user', 'assistant', 'tool']);

/** Options of `checkVectorRecord`. */
export interface CheckVectorRecordOptions {
  /** The index, for messages: `'MyVectorIndex'` gives `MyVectorIndex.upsert: record "r1" ...`. */
  owner: string;
  /** The vector length the index holds, when fixed. */
  dimensions?: number | undefined;
  /** The index's name in the service, for the message of a wrong vector length. */
  indexName?: string | undefined;
}

/**
 * Checks record `index` of a `VectorIndex.upsert` batch and returns it without its vector: non-empty
 * string `id`, `sessionId` and `messageId`, a string `text`, a non-empty `userId` when set, a role, a
 * non-negative integer `sequence`, a string `createdAt` when set, `kind` `'archive'` when set, and a
 * non-empty vector of finite numbers of `dimensions` when given. Check the whole batch before storing
 * any of it: the contract refuses a batch with one bad record whole.
 * @throws InvalidInputError naming the record and the problem.
 */
export function checkVectorRecord(record: VectorRecord, index: number, options: CheckVectorRecordOptions): IndexedMessage {
  const { owner, dimensions, indexName } = options;
  const fail = (problem: string) => {
    const which = typeof record?.id === 'string' ? `record ${shortId(record.id)}` : `record [${index}]`;
    return new InvalidInputError(`${owner}.upsert: ${which} ${problem}; nothing of the batch was stored.`);
  };
  if (!record || typeof record !== 'object') throw fail('is not an object');
  if (typeof record.id !== 'string' || !record.id) throw fail('needs a non-empty string id');
  for (const key of ['sessionId', 'messageId'] as const)
    if (typeof record[key] !== 'string' || !record[key]) throw fail(`needs a non-empty string ${key}`);
  if (typeof record.text !== 'string') throw fail('needs a string text');
  if (record.userId !== undefined && (typeof record.userId !== 'string' || !record.userId))
    throw fail('has a userId that is not a non-empty string');
  if (!ROLES.has(record.role)) throw fail(`has role ${JSON.stringify(record.role)}, not one of system, user, assistant, tool`);
  if (!Number.isSafeInteger(record.sequence) || record.sequence < 0)
    throw fail(`has sequence ${String(record.sequence)}, not a non-negative integer`);
  if (record.createdAt !== undefined && typeof record.createdAt !== 'string') throw fail('has a createdAt that is not a string');
  if (record.kind !== undefined && record.kind !== 'archive') throw fail(`has kind ${JSON.stringify(record.kind)}, not 'archive'`);
  if (!Array.isArray(record.vector) || record.vector.length === 0) throw fail('needs a vector of finite numbers');
  for (const x of record.vector) if (!Number.isFinite(x)) throw fail('needs a vector of finite numbers');
  if (dimensions !== undefined && record.vector.length !== dimensions) {
    const where = indexName === undefined ? 'the index has' : `index ${shortId(indexName)} has`;
    throw fail(`has a vector of ${record.vector.length} dimensions where ${where} ${dimensions}`);
  }
  const copy: IndexedMessage = {
    id: record.id,
    text: record.text,
    sessionId: record.sessionId,
    messageId: record.messageId,
    role: record.role,
    sequence: record.sequence,
  };
  if (record.userId !== undefined) copy.userId = record.userId;
  if (record.createdAt !== undefined) copy.createdAt = record.createdAt;
  if (record.kind !== undefined) copy.kind = record.kind;
  return copy;
}

/**
 * Orders indexed records by session id (code unit order), then sequence: the order
 * `VectorIndex.list` returns them in. For `Array.prototype.sort`.
 */
export function compareBySessionAndSequence(a: IndexedMessage, b: IndexedMessage): number {
  return a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : a.sequence - b.sequence;
}

/**
 * Checks the argument of `VectorIndex.getRange`: a non-empty `sessionId`, a `userId` that is a
 * non-empty string when set, and integer bounds. `owner` names the index in messages, e.g.
 * `PgVectorIndex`. Returns the range; an empty one (`toSequence < fromSequence`) is valid.
 * @throws InvalidInputError naming the field that is wrong.
 */
export function checkVectorRange(owner: string, range: VectorRange): VectorRange {
  const { sessionId, userId, fromSequence, toSequence } = range ?? ({} as VectorRange);
  if (typeof sessionId !== 'string' || !sessionId) throw new InvalidInputError(`${owner}.getRange: sessionId must be a non-empty string.`);
  if (userId !== undefined && (typeof userId !== 'string' || !userId))
    throw new InvalidInputError(`${owner}.getRange: userId must be a non-empty string when set.`);
  if (!Number.isSafeInteger(fromSequence) || !Number.isSafeInteger(toSequence))
    throw new InvalidInputError(
      `${owner}.getRange: fromSequence and toSequence must be integers, got ${String(fromSequence)} and ${String(toSequence)}.`,
    );
  return range;
}
