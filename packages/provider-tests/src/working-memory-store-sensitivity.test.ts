/**
 * The working-memory store suite must fail for stores that break the contract. Each broken variant
 * of `InMemoryWorkingMemoryStore` below has one fault and lists the tests that must fail because of
 * it (run as `it.fails`, so a test that wrongly passes turns this file red) while every other test
 * still passes.
 */
// @module-tag seeded-fault
import {
  InMemoryWorkingMemoryStore,
  type JsonValue,
  type PutWorkingMemoryOptions,
  type WorkingMemoryCallOptions,
  type WorkingMemoryEntry,
  type WorkingMemoryKey,
} from '@ctx/core';
import { describeWorkingMemoryStore } from './index.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Writes whatever `ifMatch` says. */
class IgnoresIfMatch extends InMemoryWorkingMemoryStore {
  override put(key: WorkingMemoryKey, record: JsonValue, options: PutWorkingMemoryOptions = {}): Promise<string> {
    const { ifMatch: _ignored, ...rest } = options;
    return super.put(key, record, rest);
  }
}

/** Reads the etag, waits, then writes unconditionally if it matched: two writers both win. */
class CheckThenWrite extends InMemoryWorkingMemoryStore {
  override async put(key: WorkingMemoryKey, record: JsonValue, options: PutWorkingMemoryOptions = {}): Promise<string> {
    const { ifMatch, ...rest } = options;
    if (ifMatch !== undefined) {
      const current = await this.get(key);
      await tick();
      if (ifMatch === null ? current !== undefined : current?.etag !== ifMatch) return super.put(key, record, options);
    }
    return super.put(key, record, rest);
  }
}

/** Keys records by session id alone when there is one: a user's session record and an anonymous one meet. */
class SessionIdOnly extends InMemoryWorkingMemoryStore {
  #strip = (key: WorkingMemoryKey): WorkingMemoryKey =>
    key?.sessionId !== undefined && key.userId !== undefined ? { sessionId: key.sessionId } : key;
  override get(key: WorkingMemoryKey, options?: WorkingMemoryCallOptions) {
    return super.get(this.#strip(key), options);
  }
  override put(key: WorkingMemoryKey, record: JsonValue, options?: PutWorkingMemoryOptions) {
    return super.put(this.#strip(key), record, options);
  }
  override delete(key: WorkingMemoryKey, options?: WorkingMemoryCallOptions) {
    return super.delete(this.#strip(key), options);
  }
}

/** Lists only the user's own record, not their sessions'. */
class ListsUserRecordOnly extends InMemoryWorkingMemoryStore {
  override async listUser(userId: string, options?: WorkingMemoryCallOptions): Promise<WorkingMemoryEntry[]> {
    return (await super.listUser(userId, options)).filter((e) => e.sessionId === undefined);
  }
}

/** Hands out the stored object itself: a caller's change reaches the store. */
class LiveReferences extends InMemoryWorkingMemoryStore {
  readonly #live = new Map<string, JsonValue>();
  override async put(key: WorkingMemoryKey, record: JsonValue, options?: PutWorkingMemoryOptions): Promise<string> {
    const etag = await super.put(key, record, options);
    this.#live.set(JSON.stringify(key), record);
    return etag;
  }
  override async get(key: WorkingMemoryKey, options?: WorkingMemoryCallOptions) {
    const stored = await super.get(key, options);
    const live = this.#live.get(JSON.stringify(key));
    return stored && live !== undefined ? { ...stored, record: live } : stored;
  }
}

describeWorkingMemoryStore('fault: ignores ifMatch', {
  create: () => new IgnoresIfMatch(),
  expectedFailures: [
    'ifMatch: the current etag writes; a stale one, or null over a stored record, throws ConcurrencyError and writes nothing',
    'ifMatch with an etag on a deleted record throws ConcurrencyError and creates nothing',
    '20 conditional writers on one record at once: exactly one wins, the others get ConcurrencyError',
  ],
});

describeWorkingMemoryStore('fault: checks the etag, then writes later', {
  create: () => new CheckThenWrite(),
  expectedFailures: ['20 conditional writers on one record at once: exactly one wins, the others get ConcurrencyError'],
});

describeWorkingMemoryStore('fault: keys a session record by its session id alone', {
  create: () => new SessionIdOnly(),
  expectedFailures: [
    'a user’s record, a session’s record and the same session with the user are three records',
    'listUser lists the user’s record and their sessions’ records, and nobody else’s; deleteUser deletes exactly those',
    'hostile user and session ids are stored and listed apart, each under its own key',
  ],
});

describeWorkingMemoryStore('fault: listUser leaves out the sessions’ records', {
  create: () => new ListsUserRecordOnly(),
  expectedFailures: [
    'listUser lists the user’s record and their sessions’ records, and nobody else’s; deleteUser deletes exactly those',
    'hostile user and session ids are stored and listed apart, each under its own key',
  ],
});

describeWorkingMemoryStore('fault: hands out live references', {
  create: () => new LiveReferences(),
  expectedFailures: ['the store holds copies: changing a record after put or after get changes nothing stored'],
});
