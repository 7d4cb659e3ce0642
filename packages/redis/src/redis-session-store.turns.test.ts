import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type AgentResponse, ConcurrencyError, createAgent, Message, type SessionStore } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { clusterClient, env, singleClient, uniquePrefix } from '../test/helpers.js';
import { RedisHistoryProvider } from './redis-history-provider.js';
import { RedisSessionStore } from './redis-session-store.js';

const packageRoot = fileURLToPath(new URL('..', import.meta.url));
const childScript = join(packageRoot, 'test', 'hosted-turn-child.mjs');
const url = `redis://127.0.0.1:${env.port}`;
const redis = singleClient();
const prefix = uniquePrefix('turns');
const children: ChildProcessWithoutNullStreams[] = [];

afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** A hosted run in another Node process (the built packages), on the same Redis server and prefix. */
function startChild(sessionId: string, userId: string, message: Message, leaseMs: number) {
  if (!existsSync(join(packageRoot, 'dist', 'index.js')))
    throw new Error('Build @ctx/core and @ctx/redis first: the child process runs dist/.');
  const child = spawn(process.execPath, [childScript, url, prefix, sessionId, userId, message.id, Message.text(message), String(leaseMs)], {
    cwd: packageRoot,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
  /** Resolves once the child printed `line` (a prefix); rejects when it exits first or takes 30 s. */
  const printed = (line: string) =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the child never printed ${line}: ${err || out}`)), 30_000);
      const look = () => {
        const found = out.split('\n').find((l) => l.startsWith(line));
        if (found === undefined) return;
        clearTimeout(timer);
        child.stdout.off('data', onData);
        resolve(found);
      };
      const onData = (d: Buffer) => {
        out += d;
        look();
      };
      child.stdout.on('data', onData);
      look();
      void exited.then(() => {
        clearTimeout(timer);
        setImmediate(() => reject(new Error(`the child exited before it printed ${line}: ${err || out}`)));
      });
    });
  return {
    modelCalled: () => printed('model-called'),
    go: () => child.stdin.write('go\n'),
    response: async () => JSON.parse((await printed('response ')).slice('response '.length)) as AgentResponse,
    kill: async () => {
      child.kill('SIGKILL');
      return exited;
    },
  };
}

/** This process's agent, on its own store instance that tells when it finds the turn's lease held by another process. */
function parentAgent(client: ScriptedChatClient, runningTurns: { waitMs?: number } = {}) {
  const store = new RedisSessionStore({ client: redis, prefix });
  let refused = 0;
  let found!: () => void;
  const waiting = new Promise<void>((resolve) => {
    found = resolve;
  });
  const watched: SessionStore = {
    get: store.get.bind(store),
    set: store.set.bind(store),
    delete: store.delete.bind(store),
    releaseTurn: store.releaseTurn.bind(store),
    leaseTurn: async (sessionId, lease) => {
      const taken = await store.leaseTurn(sessionId, lease);
      if (!taken) {
        refused++;
        found();
      }
      return taken;
    },
  };
  const history = new RedisHistoryProvider({ client: redis, prefix });
  const agent = createAgent({ client, sessionStore: watched, contextProviders: [history], runningTurns });
  return { agent, history, waiting, refused: () => refused };
}

/** The turn leases of this file's prefix, with their time to live in ms. */
async function leases(): Promise<{ key: string; pttl: number }[]> {
  const keys = await redis.keys(`${prefix}:turn:*`);
  return Promise.all(keys.map(async (key) => ({ key, pttl: await redis.pttl(key) })));
}

const echo = () => new ScriptedChatClient({ replies: (messages) => `re: ${Message.text(messages.at(-1)!)}` });

describe('RedisSessionStore turn leases: a turn runs once across processes', () => {
  it('the same message in two processes at once: the model is called once, and the second process answers with the reply the first stored', async () => {
    const [sessionId, userId] = ['two-processes', 'ada'];
    const message = Message.user('a table for two at eight', { id: 'tp-m1' });
    const child = startChild(sessionId, userId, message, 15_000);
    await child.modelCalled();
    expect(await leases(), 'the child holds the lease on its turn').toHaveLength(1);
    const client = echo();
    const { agent, history, waiting } = parentAgent(client);
    const here = agent.run(message, { sessionId, userId });
    await waiting;
    child.go();
    const [there, response] = await Promise.all([child.response(), here]);
    expect(client.calls, 'this process never called its model').toHaveLength(0);
    expect(response.text).toBe('re: a table for two at eight');
    expect(response.messages.map((m) => m.id)).toEqual(there.messages.map((m) => m.id));
    const stored = await history.getMessages(sessionId, { state: {} });
    expect(stored.map((m) => m.id)).toEqual([message.id, there.messages[0]!.id]);
    expect(await leases(), 'both released or let go of the lease').toEqual([]);
  });

  it("a crashed holder's lease expires: the waiting process then runs the turn itself, and it is stored once", async () => {
    const [sessionId, userId] = ['crashed-holder', 'ada'];
    const message = Message.user('are you there?', { id: 'ch-m1' });
    const child = startChild(sessionId, userId, message, 1000);
    await child.modelCalled();
    expect(await child.kill()).toBe('SIGKILL');
    const [lease] = await leases();
    expect(lease?.pttl, 'the dead process left its lease, with a time to live').toBeGreaterThan(0);
    expect(lease!.pttl).toBeLessThanOrEqual(1000);
    const client = echo();
    const { agent, history, refused } = parentAgent(client, { waitMs: 30_000 });
    const response = await agent.run(message, { sessionId, userId });
    expect(refused(), 'it found the lease held and waited for it to expire').toBeGreaterThan(0);
    expect(client.calls).toHaveLength(1);
    expect(response.text).toBe('re: are you there?');
    const stored = await history.getMessages(sessionId, { state: {} });
    expect(stored.map((m) => m.id)).toEqual([message.id, response.messages[0]!.id]);
    expect(await leases()).toEqual([]);
  });

  it('a turn held past runningTurns.waitMs in another process: ConcurrencyError with turnRunning, and nothing runs here', async () => {
    const [sessionId, userId] = ['held-too-long', 'ada'];
    const message = Message.user('still busy?', { id: 'hl-m1' });
    const child = startChild(sessionId, userId, message, 60_000);
    await child.modelCalled();
    const client = echo();
    const { agent, history } = parentAgent(client, { waitMs: 300 });
    const error = await agent.run(message, { sessionId, userId }).catch((e: unknown) => e);
    expect(ConcurrencyError.isInstance(error), String(error)).toBe(true);
    expect((error as ConcurrencyError).turnRunning).toBe(true);
    expect(client.calls).toHaveLength(0);
    child.go();
    const there = await child.response();
    const stored = await history.getMessages(sessionId, { state: {} });
    expect(stored.map((m) => m.id)).toEqual([message.id, there.messages[0]!.id]);
  });

  it('leaseTurn is one script call on a key in the slot of its session, released only by its holder', async () => {
    const store = new RedisSessionStore({ client: redis, prefix });
    const turn = 'k'.repeat(43);
    expect(await store.leaseTurn('slot-check', { turn, holder: 'h1', ttlMs: 5000 })).toBe(true);
    const [lease] = await leases();
    expect(lease!.key).toBe(`${prefix}:turn:{slot-check}:${turn}`);
    expect(await redis.get(lease!.key)).toBe('h1');
    const cluster = clusterClient();
    expect(await cluster.cluster('KEYSLOT', lease!.key), 'the lease is in the slot of its session on a cluster').toBe(
      await cluster.cluster('KEYSLOT', store.key('slot-check')),
    );
    expect(await store.releaseTurn('slot-check', { turn, holder: 'h2' })).toBe(false);
    expect(await redis.exists(lease!.key)).toBe(1);
    expect(await store.releaseTurn('slot-check', { turn, holder: 'h1' })).toBe(true);
    expect(await redis.exists(lease!.key)).toBe(0);
  });
});
