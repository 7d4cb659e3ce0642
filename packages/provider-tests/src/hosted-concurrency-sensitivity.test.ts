/**
 * The hosted concurrency suite must fail for backends that break what "a delete wins over a running
 * turn" rests on. The faithful template (`example-backend.test.ts`) passes every test; each broken
 * variant below has one fault and lists the tests that must fail because of it (run as `it.fails`,
 * so a test that wrongly passes turns this file red) while every other test still passes.
 */
// @module-tag seeded-fault
import type { SessionJson, SetSessionOptions } from '@ctx/core';
import { ExampleDatabase, ExampleHistoryProvider, ExampleSessionStore } from './example-backend.js';
import { describeHostedConcurrency } from './index.js';

const deleteWhileRunning = (how: 'deleteSession' | 'deleteUserData') =>
  `${how} on another server while a hosted turn runs wins: the turn fails saying the session was deleted, and nothing of it is left (history, recall vectors, working memory, session, listing)`;
const SAVE_BETWEEN =
  "a turn whose save lands between a delete's first cleanup and the store's delete succeeds, and the delete still leaves nothing of it";
const INDEXED_AFTER =
  'a delete that lands after the save, while the turn is being indexed for recall (onTurnStored): the turn removes what it indexed and fails saying so';

/** A history whose `clearMessages` resolves but leaves the messages stored. */
class KeepingHistory extends ExampleHistoryProvider {
  override async clearMessages(): Promise<void> {}
}

const keeping = new ExampleDatabase();
describeHostedConcurrency('fault: clearMessages leaves the messages', {
  createStore: () => new ExampleSessionStore({ database: keeping }),
  createHistory: (options) => new KeepingHistory({ ...options, database: keeping }),
  requests: [5],
  expectedFailures: [deleteWhileRunning('deleteSession'), deleteWhileRunning('deleteUserData'), SAVE_BETWEEN, INDEXED_AFTER],
});

/** A store whose `set` with the etag of a session deleted since writes the session again. */
class ResurrectingStore extends ExampleSessionStore {
  override async set(session: SessionJson, options: SetSessionOptions = {}): Promise<string> {
    if (typeof options.ifMatch === 'string' && (await this.get(session.sessionId)) === undefined) {
      return super.set(session, { ...options, ifMatch: null });
    }
    return super.set(session, options);
  }
}

const resurrecting = new ExampleDatabase();
describeHostedConcurrency('fault: a save with the etag of a deleted session writes it again', {
  createStore: () => new ResurrectingStore({ database: resurrecting }),
  createHistory: (options) => new ExampleHistoryProvider({ ...options, database: resurrecting }),
  requests: [5],
  expectedFailures: [deleteWhileRunning('deleteSession'), deleteWhileRunning('deleteUserData')],
});

// The template has no turn leases: declaring them makes the double-submit test fail, not skip.
const undeclared = new ExampleDatabase();
describeHostedConcurrency('fault: declares turn leases it does not have', {
  createStore: () => new ExampleSessionStore({ database: undeclared }),
  createHistory: (options) => new ExampleHistoryProvider({ ...options, database: undeclared }),
  requests: [5],
  capabilities: { leases: true },
  expectedFailures: [
    'one message sent to every server at once (a double submit): the model is called once, and every caller gets the stored reply',
  ],
});
