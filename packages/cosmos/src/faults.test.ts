import { AgentSession, BackendUnavailableError, ConcurrencyError, createAgent, Message, ProviderError } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { startFaultProxy, type FaultProxy } from '@ctx/cosmos-stand-in';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { allItems, cosmosClient, env, standInClientOptions, uniqueId } from '../test/helpers.js';
import { CosmosHistoryProvider } from './cosmos-history-provider.js';
import { CosmosSessionStore } from './cosmos-session-store.js';

/** The SDK's 429 policy for these tests: 2 retries, 10 ms apart. */
const retryOptions = { maxRetryAttemptCount: 2, fixedRetryIntervalInMilliseconds: 10, maxWaitTimeInSeconds: 5 };
const state = {};
const databaseId = uniqueId('faults');
const texts = (messages: readonly Message[]) => messages.map((m) => Message.text(m));
const sid = () => `f-${Math.random().toString(36).slice(2)}`;
let proxy: FaultProxy;
let client: ReturnType<typeof cosmosClient>;
let containerId: string;

beforeAll(async () => {
  // The shared stand-in behind a proxy that injects throttling, 5xx, cut connections and outages.
  proxy = await startFaultProxy(env.endpoint);
  client = cosmosClient(proxy.endpoint, { connectionPolicy: { retryOptions } });
  containerId = uniqueId('c');
  await new CosmosHistoryProvider({ client, databaseId, containerId, createIfNotExists: true }).getMessages('warm-up', { state });
  await new CosmosSessionStore({ client, databaseId, containerId: 'sessions', createIfNotExists: true }).get('warm-up');
});
afterEach(() => {
  proxy.clearFaults();
  proxy.up();
});
afterAll(() => proxy.stop());

const history = (options: { retries?: number; timeoutMs?: number; sourceId?: string } = {}) =>
  new CosmosHistoryProvider({ client, databaseId, containerId, ...options });
const direct = new CosmosHistoryProvider({ client: cosmosClient(), databaseId, containerId: 'unused' });
const kinds = (kind: string) => proxy.requests.filter((r) => r.kind === kind);

async function failure(fn: () => Promise<unknown>): Promise<{ error: unknown }> {
  try {
    await fn();
  } catch (error) {
    return { error };
  }
  throw new Error('expected the call to fail');
}

describe('throttling (429): retried by the SDK per its retryOptions, then BackendUnavailableError', () => {
  it('two 429s on the head patch: the SDK waits and retries, the turn is stored once', async () => {
    const provider = history();
    const sessionId = sid();
    proxy.resetLog();
    proxy.inject({ match: (r) => r.kind === 'patch', times: 2, fault: { status: 429, retryAfterMs: 5 } });
    await provider.saveMessages(sessionId, [Message.user('q'), Message.assistant('a')], { state });
    expect(kinds('patch').map((r) => r.status)).toEqual([429, 429, 404]);
    expect(texts(await provider.getMessages(sessionId, { state }))).toEqual(['q', 'a']);
  });

  it('persistent 429: exactly 1 + maxRetryAttemptCount attempts, then a BackendUnavailableError that says throttled', async () => {
    const provider = history();
    const sessionId = sid();
    await provider.saveMessages(sessionId, [Message.user('before')], { state });
    proxy.resetLog();
    proxy.inject({ match: (r) => r.kind === 'batch', times: Infinity, fault: { status: 429, retryAfterMs: 5 } });
    const { error } = await failure(() => provider.saveMessages(sessionId, [Message.user('q')], { state }));
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    expect((error as BackendUnavailableError).backend).toBe('cosmos');
    expect(kinds('batch')).toHaveLength(1 + retryOptions.maxRetryAttemptCount);
    // The provider itself adds no 429 retries on top of the SDK's.
    expect(kinds('patch')).toHaveLength(1);
    proxy.clearFaults();
    proxy.inject({ match: (r) => r.kind === 'query', times: Infinity, fault: { status: 429, retryAfterMs: 5 } });
    const read = await failure(() => provider.getMessages(sessionId, { state }));
    expect((read.error as Error).message).toContain('429');
    expect((read.error as Error).message).toContain('throttling');
  });

  it('an owned client takes retryOptions from clientOptions', async () => {
    const provider = new CosmosHistoryProvider({
      endpoint: proxy.endpoint,
      key: env.key,
      clientOptions: {
        connectionPolicy: {
          ...standInClientOptions.connectionPolicy,
          retryOptions: { maxRetryAttemptCount: 4, fixedRetryIntervalInMilliseconds: 5 },
        },
      },
      databaseId,
      containerId,
    });
    try {
      await provider.getMessages(sid(), { state });
      proxy.resetLog();
      proxy.inject({ match: (r) => r.kind === 'query', times: Infinity, fault: { status: 429 } });
      const { error } = await failure(() => provider.getMessages(sid(), { state }));
      expect(BackendUnavailableError.isInstance(error)).toBe(true);
      expect(kinds('query')).toHaveLength(5);
    } finally {
      await provider.close();
    }
  });
});

describe('transient 5xx and cut connections: retried by the provider (the SDK does not retry them for writes in one region)', () => {
  it('503 twice on the batch: the third attempt stores the turn, once', async () => {
    const provider = history();
    const sessionId = sid();
    proxy.resetLog();
    proxy.inject({ match: (r) => r.kind === 'batch', times: 2, fault: { status: 503 } });
    await provider.saveMessages(sessionId, [Message.user('q'), Message.assistant('a')], { state });
    expect(kinds('batch').map((r) => r.status)).toEqual([503, 503, 200]);
    expect(texts(await provider.getMessages(sessionId, { state }))).toEqual(['q', 'a']);
  });

  it.each([500, 502, 503, 504, 408, 449])('persistent %i: 1 + retries attempts, then BackendUnavailableError', async (status) => {
    const provider = history({ retries: 2 });
    const sessionId = sid();
    await provider.saveMessages(sessionId, [Message.user('before')], { state });
    proxy.resetLog();
    proxy.inject({ match: (r) => r.kind === 'patch', times: Infinity, fault: { status } });
    const { error } = await failure(() => provider.saveMessages(sessionId, [Message.user('q')], { state }));
    expect(BackendUnavailableError.isInstance(error), String(error)).toBe(true);
    expect((error as Error).message).toContain('3 attempts');
    expect(kinds('patch')).toHaveLength(3);
    expect(kinds('batch')).toHaveLength(0);
    expect(texts(await provider.getMessages(sessionId, { state }))).toEqual(['before']);
  });

  it('a batch that was applied but whose answer was lost is retried without storing anything twice', async () => {
    const provider = history();
    const sessionId = sid();
    await provider.saveMessages(sessionId, [Message.user('first')], { state });
    proxy.resetLog();
    proxy.inject({ match: (r) => r.kind === 'batch', fault: 'reset-after' });
    await provider.saveMessages(sessionId, [Message.user('q'), Message.assistant('a')], { state });
    // Cut after applying, retried (409: already there), then the ids were checked: nothing left to write.
    const log = proxy.requests.map((r) => `${r.kind}:${r.fault ?? r.status}`);
    expect(log.slice(0, 2)).toEqual(['patch:200', 'batch:reset-after']);
    expect(log.filter((entry) => entry.startsWith('batch:')).length).toBeGreaterThanOrEqual(2);
    expect(texts(await provider.getMessages(sessionId, { state }))).toEqual(['first', 'q', 'a']);
    expect(await provider.countMessages(sessionId)).toBe(3);
  });

  it('a head patch applied twice (answer lost) leaves a gap in the numbering, never a shared position', async () => {
    const provider = history();
    const sessionId = sid();
    await provider.saveMessages(sessionId, [Message.user('first')], { state });
    proxy.inject({ match: (r) => r.kind === 'patch', fault: 'reset-after' });
    await provider.saveMessages(sessionId, [Message.user('q'), Message.assistant('a')], { state });
    await provider.saveMessages(sessionId, [Message.user('last')], { state });
    const items = (await allItems(client.database(databaseId).container(containerId))).filter(
      (i) => i.sessionKey === sessionId && i.kind === 'message',
    );
    const bySeq = items.sort((x, y) => Number(x.seq) - Number(y.seq)).map((i) => `${i.seq}:${Message.text(i.message as Message)}`);
    expect(bySeq).toEqual(['1:first', '4:q', '5:a', '6:last']);
    expect(texts(await provider.getMessages(sessionId, { state }))).toEqual(['first', 'q', 'a', 'last']);
  });

  it('a request that never gets an answer fails within timeoutMs', async () => {
    const provider = history({ timeoutMs: 800 });
    const sessionId = sid();
    await provider.getMessages(sessionId, { state });
    proxy.inject({ match: (r) => r.kind === 'query', fault: 'hang' });
    // The query never gets an answer: the deadline ends the call.
    const { error } = await failure(() => provider.getMessages(sessionId, { state }));
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain('within 800 ms');
  });

  it('a caller abort while a request hangs rejects with the abort reason at once', async () => {
    const provider = history();
    const sessionId = sid();
    await provider.getMessages(sessionId, { state });
    const controller = new AbortController();
    // The abort comes once the patch reached the proxy, which holds it unanswered (timeoutMs is far off).
    proxy.inject({
      match: (r) => {
        if (r.kind !== 'patch') return false;
        controller.abort(new Error('user left'));
        return true;
      },
      fault: 'hang',
    });
    const { error } = await failure(() => provider.saveMessages(sessionId, [Message.user('q')], { state, signal: controller.signal }));
    expect((error as Error).message).toBe('user left');
  });

  it('chaos: 30 concurrent saves under random 429s, 5xx and cut connections, each retried by the app, store every message exactly once and each batch contiguous', async () => {
    const provider = history({ retries: 1 });
    const sessionId = sid();
    let seed = 42;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const dataPlane = (kind: string) => kind !== 'metadata';
    proxy.inject({ match: (r) => dataPlane(r.kind) && random() < 0.1, times: Infinity, fault: { status: 503 } });
    proxy.inject({ match: (r) => dataPlane(r.kind) && random() < 0.1, times: Infinity, fault: 'reset-after' });
    proxy.inject({ match: (r) => dataPlane(r.kind) && random() < 0.05, times: Infinity, fault: 'reset-before' });
    proxy.inject({ match: (r) => dataPlane(r.kind) && random() < 0.1, times: Infinity, fault: { status: 429, retryAfterMs: 2 } });
    const batches = Array.from({ length: 30 }, (_, i) => [0, 1, 2].map((j) => Message.user(`b${i}.${j}`)));
    const failures: unknown[] = [];
    await Promise.all(
      batches.map(async (batch) => {
        for (let attempt = 0; ; attempt++) {
          try {
            await provider.saveMessages(sessionId, batch, { state });
            return;
          } catch (error) {
            failures.push(error);
            if (attempt > 30) throw error;
          }
        }
      }),
    );
    proxy.clearFaults();
    expect(failures.length).toBeGreaterThan(0);
    for (const error of failures) expect(BackendUnavailableError.isInstance(error), String(error)).toBe(true);
    expect(proxy.requests.some((r) => r.fault === 'reset-after' && r.kind === 'batch')).toBe(true);
    const stored = await direct.getMessages(sessionId, { state }).catch(() => provider.getMessages(sessionId, { state }));
    expect(stored).toHaveLength(90);
    expect(new Set(stored.map((m) => m.id)).size).toBe(90);
    for (const batch of batches) {
      const at = stored.findIndex((m) => m.id === batch[0]!.id);
      expect(stored.slice(at, at + 3), Message.text(batch[0]!)).toEqual(batch);
    }
  });
});

describe('Cosmos DB goes away in the middle of a conversation and comes back', () => {
  it('runs and store calls during the outage fail fast with BackendUnavailableError; afterwards nothing is lost or duplicated', async () => {
    const provider = history({ timeoutMs: 1500 });
    const store = new CosmosSessionStore({ client, databaseId, containerId: 'sessions', timeoutMs: 1500 });
    const chat = new ScriptedChatClient({ replies: (messages) => `re: ${Message.text(messages.at(-1)!)}` });
    const agent = createAgent({ client: chat, contextProviders: [provider], sessionStore: store });
    const session = agent.createSession({ sessionId: sid() });
    for (const text of ['turn 1', 'turn 2', 'turn 3']) {
      await agent.run(text, { session });
      await agent.saveSession(session);
    }
    const etagBefore = session.etag;

    proxy.down();
    for (const attempt of [
      () => agent.run('turn 4', { session }),
      () => provider.getMessages(session.sessionId, { state }),
      () => provider.saveMessages(session.sessionId, [Message.user('lost?')], { state }),
      () => store.get(session.sessionId),
      () => agent.saveSession(session),
    ]) {
      const { error } = await failure(attempt);
      const cause = ProviderError.isInstance(error) ? error.cause : error;
      expect(BackendUnavailableError.isInstance(cause), String(cause)).toBe(true);
      expect((cause as BackendUnavailableError).backend).toBe('cosmos');
      // Ended by the deadline (timeoutMs) or by the provider running out of attempts within it: no hang.
      expect((cause as Error).message).toMatch(/did not answer within 1500 ms|is unavailable for .+ \(\d+ attempts\)/);
    }

    proxy.up();
    const res = await agent.run('turn 5', { session });
    expect(res.text).toBe('re: turn 5');
    const seen = chat.calls.at(-1)!.messages.map((m) => Message.text(m));
    expect(seen).toEqual(['turn 1', 're: turn 1', 'turn 2', 're: turn 2', 'turn 3', 're: turn 3', 'turn 5']);
    const stored = await provider.getMessages(session.sessionId, { state });
    expect(texts(stored)).toEqual([...seen, 're: turn 5']);
    expect(new Set(stored.map((m) => m.id)).size).toBe(stored.length);
    expect((await store.get(session.sessionId))?.etag).toBe(etagBefore);
    await agent.saveSession(session);
  });
});

describe('session store writes whose answer was lost', () => {
  const store = () => new CosmosSessionStore({ client, databaseId, containerId: 'sessions' });

  it('an ifMatch replace applied but unanswered is recognised on retry: success, not a ConcurrencyError', async () => {
    const s = store();
    const json = new AgentSession({ sessionId: sid() }).toJSON();
    const first = await s.set(json);
    proxy.resetLog();
    proxy.inject({ match: (r) => r.kind === 'replace', fault: 'reset-after' });
    const next = { ...json, state: { memory: { n: 2 } } };
    const etag = await s.set(next, { ifMatch: first });
    // The write landed but its answer was lost; what the store does next (a retry that meets 412, a
    // read) depends on timing, so only the outcome is asserted: success with the etag now stored.
    expect(proxy.requests[0]).toMatchObject({ kind: 'replace', fault: 'reset-after' });
    expect(await s.get(json.sessionId)).toEqual({ session: next, etag });
    // A real conflict is still one.
    await expect(s.set(json, { ifMatch: first })).rejects.toSatisfy(ConcurrencyError.isInstance);
  });

  it('a create (ifMatch: null) applied but unanswered is recognised on retry too', async () => {
    const s = store();
    const json = new AgentSession({ sessionId: sid() }).toJSON();
    proxy.inject({ match: (r) => r.kind === 'create', fault: 'reset-after' });
    const etag = await s.set(json, { ifMatch: null });
    expect((await s.get(json.sessionId))?.etag).toBe(etag);
    await expect(s.set(json, { ifMatch: null })).rejects.toSatisfy(ConcurrencyError.isInstance);
  });

  it('503 on get and delete is retried; persistent failure is a BackendUnavailableError', async () => {
    const s = new CosmosSessionStore({ client, databaseId, containerId: 'sessions', retries: 1 });
    const json = new AgentSession({ sessionId: sid() }).toJSON();
    await s.set(json);
    proxy.inject({ match: (r) => r.kind === 'read', times: 1, fault: { status: 503 } });
    expect((await s.get(json.sessionId))?.session).toEqual(json);
    proxy.inject({ match: (r) => r.kind === 'delete', times: Infinity, fault: { status: 503 } });
    await expect(s.delete(json.sessionId)).rejects.toSatisfy(BackendUnavailableError.isInstance);
    proxy.clearFaults();
    expect(await s.delete(json.sessionId)).toBe(true);
  });
});
