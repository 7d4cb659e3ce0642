import { checkId } from '../backend/checks.js';
import { checkWorkingMemoryEtag, checkWorkingMemoryKey, describeWorkingMemoryKey } from '../backend/working-memory-key.js';
import { InvalidInputError } from '../errors.js';
import { findNonJson } from '../messages/json.js';
import type { JsonValue } from '../contracts/json.js';
import type {
  PutWorkingMemoryOptions,
  StoredWorkingMemory,
  WorkingMemoryCallOptions,
  WorkingMemoryEntry,
  WorkingMemoryKey,
  WorkingMemoryStore,
} from '../contracts/working-memory-store.js';

interface Item {
  key: WorkingMemoryKey;
  json: string;
  etag: string;
  updatedAt: string;
}

/**
 * A `WorkingMemoryStore` in process memory, for tests and single-process apps. Holds serialized
 * copies, so later changes to a record never leak in. Etags are never reused, not even after a
 * delete.
 */
export class InMemoryWorkingMemoryStore implements WorkingMemoryStore {
  readonly specificationVersion = 'v1';
  readonly #items = new Map<string, Item>();
  #version = 0;

  /** The stored record and its etag, or undefined. @throws ConfigurationError for a bad key. */
  async get(key: WorkingMemoryKey, options: WorkingMemoryCallOptions = {}): Promise<StoredWorkingMemory | undefined> {
    options.signal?.throwIfAborted();
    const item = this.#items.get(mapKey(checkWorkingMemoryKey(key)));
    return item && { record: JSON.parse(item.json) as JsonValue, etag: item.etag, updatedAt: item.updatedAt };
  }

  /**
   * Stores a copy of the record and resolves to its new etag.
   * @throws ConfigurationError for a bad key; InvalidInputError for a record that is not plain JSON;
   *   ConcurrencyError when `ifMatch` does not hold (nothing is stored).
   */
  async put(key: WorkingMemoryKey, record: JsonValue, options: PutWorkingMemoryOptions = {}): Promise<string> {
    options.signal?.throwIfAborted();
    const checked = checkWorkingMemoryKey(key);
    const problem = findNonJson(record);
    if (problem !== undefined) {
      throw new InvalidInputError(
        `The working memory of ${describeWorkingMemoryKey(checked)} is not plain JSON at ${problem}; nothing was stored.`,
      );
    }
    const id = mapKey(checked);
    checkWorkingMemoryEtag(checked, this.#items.get(id)?.etag, options.ifMatch);
    const etag = String(++this.#version);
    this.#items.set(id, { key: checked, json: JSON.stringify(record), etag, updatedAt: new Date().toISOString() });
    return etag;
  }

  /** Deletes a record; resolves to whether one was stored. @throws ConfigurationError for a bad key. */
  async delete(key: WorkingMemoryKey, options: WorkingMemoryCallOptions = {}): Promise<boolean> {
    options.signal?.throwIfAborted();
    return this.#items.delete(mapKey(checkWorkingMemoryKey(key)));
  }

  /** Every record of the user: theirs and their sessions'. @throws ConfigurationError for a blank `userId`. */
  async listUser(userId: string, options: WorkingMemoryCallOptions = {}): Promise<WorkingMemoryEntry[]> {
    options.signal?.throwIfAborted();
    checkId(userId, 'userId');
    return [...this.#items.values()]
      .filter((item) => item.key.userId === userId)
      .map((item) => ({
        ...(item.key.sessionId === undefined ? {} : { sessionId: item.key.sessionId }),
        record: JSON.parse(item.json) as JsonValue,
        etag: item.etag,
        updatedAt: item.updatedAt,
      }));
  }

  /** Deletes every record of the user; resolves to how many there were. @throws ConfigurationError for a blank `userId`. */
  async deleteUser(userId: string, options: WorkingMemoryCallOptions = {}): Promise<number> {
    options.signal?.throwIfAborted();
    checkId(userId, 'userId');
    let deleted = 0;
    for (const [id, item] of this.#items) {
      if (item.key.userId === userId && this.#items.delete(id)) deleted++;
    }
    return deleted;
  }
}

function mapKey(key: WorkingMemoryKey): string {
  return JSON.stringify([key.userId ?? null, key.sessionId ?? null]);
}
