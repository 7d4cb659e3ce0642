import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConcurrencyError, FileSessionStore, type SessionJson } from '@ctx/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeHostedConcurrency, describeSessionStore } from './index.js';

/** Fails when a lock or temporary file outlived the writes that made it. */
async function expectOnlySessionFiles(directory: string): Promise<void> {
  const leftovers = (await readdir(directory)).filter((name) => !name.endsWith('.json'));
  expect(leftovers, `leftovers in ${directory}`).toEqual([]);
}

describeSessionStore('FileSessionStore (a directory per test)', {
  create: async () => new FileSessionStore({ directory: await mkdtemp(join(tmpdir(), 'ctx-provider-tests-')) }),
  cleanup: async (store) => {
    try {
      await expectOnlySessionFiles(store.directory);
    } finally {
      await rm(store.directory, { recursive: true, force: true });
    }
  },
  capabilities: { list: true, total: true, leases: true },
});

// Like two processes: every test's stores are separate instances over one shared directory.
let shared = '';
describeSessionStore('FileSessionStore (one directory shared by every instance)', {
  setup: async () => {
    shared = await mkdtemp(join(tmpdir(), 'ctx-provider-tests-shared-'));
  },
  teardown: async () => {
    await rm(shared, { recursive: true, force: true });
  },
  create: () => new FileSessionStore({ directory: shared }),
  cleanup: (store) => expectOnlySessionFiles(store.directory),
  capabilities: { list: true, total: true, leases: true },
});

// Each simulated server has its own store instance over one directory, as separate processes would.
let hosted = '';
describeHostedConcurrency('FileSessionStore with the default in-memory history', {
  setup: async () => {
    hosted = await mkdtemp(join(tmpdir(), 'ctx-provider-tests-hosted-'));
  },
  teardown: async () => {
    await rm(hosted, { recursive: true, force: true });
  },
  createStore: () => new FileSessionStore({ directory: hosted }),
  cleanup: (store) => expectOnlySessionFiles((store as FileSessionStore).directory),
  timeout: 60_000,
  capabilities: { leases: true },
});

describe('FileSessionStore across instances', () => {
  let directory = '';
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'ctx-provider-tests-race-'));
  });
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('two instances over one directory: of 20 writers with the same ifMatch, exactly one wins', async () => {
    const stores = [new FileSessionStore({ directory }), new FileSessionStore({ directory })];
    const session = (marker: string): SessionJson => ({
      type: 'ctx.session',
      version: 2,
      sessionId: 'shared',
      metadata: { createdAt: '2026-01-31T12:00:00.000Z', updatedAt: '2026-01-31T12:00:00.000Z' },
      state: { app: { marker } },
    });
    const base = await stores[0]!.set(session('base'));
    const outcomes = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => stores[i % 2]!.set(session(`writer ${i}`), { ifMatch: base })),
    );
    const winners = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [{ i, etag: o.value }] : []));
    expect(winners).toHaveLength(1);
    for (const o of outcomes) if (o.status === 'rejected') expect(ConcurrencyError.isInstance(o.reason)).toBe(true);
    for (const store of stores)
      expect(await store.get('shared')).toEqual({ session: session(`writer ${winners[0]!.i}`), etag: winners[0]!.etag });
    await expectOnlySessionFiles(directory);
  });
});
