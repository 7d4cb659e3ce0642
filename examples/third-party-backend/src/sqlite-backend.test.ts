// The conformance suites the guide "Publish your own backend" names, against SQLite in a file of a
// temporary directory. Every provider and store opens its own connection to that file (as the
// servers of an app would), and closes it after its test.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeHistoryProvider, describeHostedConcurrency, describeSessionStore } from '@ctx/provider-tests';
import { SqliteHistoryProvider, SqliteSessionStore } from './sqlite-backend.js';

const directory = mkdtempSync(join(tmpdir(), 'ctx-sqlite-'));
const database = join(directory, 'ctx.db');
const teardown = () => rmSync(directory, { recursive: true, force: true });

// Each suite is told what the backend has, so that losing it fails the suite instead of skipping tests.
describeHistoryProvider('SqliteHistoryProvider', {
  create: (options) => new SqliteHistoryProvider({ ...options, database }),
  cleanup: (provider) => provider.close(),
  capabilities: { popMessages: true, clearMessages: true },
});
describeSessionStore('SqliteSessionStore', {
  create: () => new SqliteSessionStore({ database }),
  cleanup: (store) => store.close(),
  capabilities: { list: true, total: true, leases: false },
});
describeHostedConcurrency('SqliteSessionStore with SqliteHistoryProvider', {
  createStore: () => new SqliteSessionStore({ database }),
  createHistory: (options) => new SqliteHistoryProvider({ ...options, database }),
  capabilities: { leases: false },
  cleanup: (store) => (store instanceof SqliteSessionStore ? store.close() : undefined),
  teardown,
});
