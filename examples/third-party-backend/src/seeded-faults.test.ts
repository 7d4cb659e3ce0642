// The suites catch a backend that is wrong: the same backend with one fault seeded on purpose.
// Each variant runs the suite with the tests it must fail as `expectedFailures` (they run as
// `it.fails`): the file is green only while exactly those tests fail and every other passes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Message, SaveHistoryArgs, SessionJson, SetSessionOptions } from '@ctx/core/backend';
import { describeHistoryProvider, describeSessionStore } from '@ctx/provider-tests';
import { SqliteHistoryProvider, SqliteSessionStore } from './sqlite-backend.js';

const directory = mkdtempSync(join(tmpdir(), 'ctx-sqlite-faults-'));
const database = join(directory, 'ctx.db');

/**
 * Fault 1, a batch that is not atomic: stored in one transaction per message, each saving the
 * batch's prefix up to that message (the stored prefix is skipped as a retry). When every write
 * succeeds and nothing runs beside it, the result is the same as one transaction.
 */
class TransactionPerMessage extends SqliteHistoryProvider {
  override async saveMessages(sessionId: string, messages: readonly Message[], args: SaveHistoryArgs): Promise<void> {
    for (let end = 1; end <= messages.length; end++) await super.saveMessages(sessionId, messages.slice(0, end), args);
  }
}

/** Fault 2, the etag ignored: every `set` writes unconditionally. */
class IfMatchIgnored extends SqliteSessionStore {
  override set(session: SessionJson, options: SetSessionOptions = {}): Promise<string> {
    const { ifMatch: _ignored, ...rest } = options;
    return super.set(session, rest);
  }
}

describeHistoryProvider('SqliteHistoryProvider with a transaction per message', {
  create: (options) => new TransactionPerMessage({ ...options, database }),
  cleanup: (provider) => provider.close(),
  // A refused batch leaves its valid prefix; concurrent batches interleave; a reader sees part of a
  // batch; an abandoned save can leave part of its batch; a retried turn is torn apart.
  expectedFailures: [
    'a reader racing a multi-message saveMessages sees the batch whole or not at all, in full reads and in windows',
    'saveMessages of a message with a non-JSON value in metadata or a function result throws SessionStateError and stores nothing',
    'saveMessages of a message nested deeper than 128 levels throws SessionStateError and stores nothing',
    '50 concurrent runs on one session store every message once, each turn contiguous',
    '50 concurrent saveMessages calls on one session store every message once, each batch contiguous',
    'a save abandoned when its signal aborts leaves the batch whole or absent, and its retry stores it once',
    'a message whose id is stored with other content refuses the whole batch with SessionStateError naming the id, reports message-id-conflict, and stores nothing',
    'a client that gives every reply the same id fails the next turn loudly instead of dropping its reply',
    'a retried turn that is not the newest is replaced in place, and the retry is sent every other turn but not its earlier attempt',
    'a retried turn that is not the newest is stored in its place, in one piece, batch after batch',
  ],
});
describeSessionStore('SqliteSessionStore ignoring ifMatch', {
  create: () => new IfMatchIgnored({ database }),
  cleanup: (store) => store.close(),
  // Stale etags, creates over a stored session and concurrent writers all win; the agent's merge
  // of a session saved since it was loaded never happens.
  expectedFailures: [
    'ifMatch with a stale etag throws ConcurrencyError and writes nothing',
    'ifMatch null creates a session only when none is stored',
    'ifMatch with an etag on a missing session throws ConcurrencyError and creates nothing',
    'an etag a deleted session had never matches again: after a delete and a re-create, a set with any pre-delete etag throws ConcurrencyError',
    '20 concurrent sets with the same ifMatch: exactly one wins, the others get ConcurrencyError',
    '20 concurrent creates with ifMatch null: exactly one wins, the others get ConcurrencyError',
    'saveSession merges a save made since the session was loaded: both turns are kept, each slot takes the side that changed it',
    'saveSession throws ConcurrencyError when both saves changed a slot its provider cannot merge, and stores nothing of its own',
    'two agents starting the same new session: both saves land, with both turns',
  ],
  teardown: () => rmSync(directory, { recursive: true, force: true }),
});
