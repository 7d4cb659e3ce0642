/**
 * The workload of the concurrent-session rows: many sessions, each running chat turns one after the
 * other, all at once, through `RedisSessionStore` and `RedisHistoryProvider`. A turn is what a hosted
 * chat app does per message: read the session, load the newest 20 messages, store the user message
 * and the reply, save the session (compare-and-set on its etag). Shared by `session-listing.ts`
 * (throughput on a single node and on a cluster) and `cluster-faults.ts` (failover trials).
 */
import { performance } from 'node:perf_hooks';
import { CtxError, Message, type SessionJson } from '@ctx/core';
import type { RedisHistoryProvider, RedisSessionStore } from '@ctx/redis';
import type { Cluster, Redis } from 'ioredis';

const TEXT = 'The quick brown fox jumps over the lazy dog. '.repeat(4);
const state = {};

/** A session as the app saves it after a turn. */
export function sessionAt(sessionId: string, userId: string, turn: number): SessionJson {
  const at = new Date().toISOString();
  return {
    type: 'ctx.session',
    version: 2,
    sessionId,
    metadata: { createdAt: at, updatedAt: at, userId, title: `Conversation ${sessionId}, turn ${turn}` },
    state: { app: { turn } },
  };
}

/** One finished turn. */
export interface TurnRecord {
  session: number;
  turn: number;
  /** ms (performance.now) when it started and ended. */
  start: number;
  end: number;
  /** The error's class name, or undefined when the turn succeeded. */
  error: string | undefined;
  message: string | undefined;
}

/** Runs one turn of `sessionId`; resolves when stored, rejects with what failed. */
export async function turn(
  store: RedisSessionStore,
  history: RedisHistoryProvider,
  sessionId: string,
  userId: string,
  n: number,
  ids: { user: string; reply: string },
): Promise<void> {
  const stored = await store.get(sessionId);
  await history.getMessages(sessionId, { state, limit: 20 });
  await history.saveMessages(
    sessionId,
    [Message.user(`${TEXT} turn ${n}`, { id: ids.user }), Message.assistant(`${TEXT} reply ${n}`, { id: ids.reply })],
    { state },
  );
  await store.set(sessionAt(sessionId, userId, n), stored ? { ifMatch: stored.etag } : { ifMatch: null });
}

/**
 * Runs `sessions` sessions at once, each `turns` turns in a row (or until `until()` says stop), and
 * records every turn. Session `i` is `${prefix}-${i}` of user `user-${i % users}`.
 */
export async function runSessions(options: {
  store: RedisSessionStore;
  history: RedisHistoryProvider;
  sessions: number;
  users: number;
  turns?: number;
  until?: () => boolean;
  name: string;
  /** Pause between a session's turns (ms); default none. */
  thinkMs?: number;
  /** Where to record the turns as they finish (default: a new array), so a caller can read them while they run. */
  records?: TurnRecord[];
}): Promise<TurnRecord[]> {
  const records = options.records ?? [];
  const { store, history, sessions, users, turns = Number.POSITIVE_INFINITY, until = () => false, name, thinkMs = 0 } = options;
  await Promise.all(
    Array.from({ length: sessions }, async (_, i) => {
      const sessionId = `${name}-${i}`;
      for (let n = 0; n < turns && !until(); n++) {
        const start = performance.now();
        let error: string | undefined;
        let message: string | undefined;
        try {
          await turn(store, history, sessionId, `user-${i % users}`, n, { user: `${sessionId}-u${n}`, reply: `${sessionId}-a${n}` });
        } catch (e) {
          error = CtxError.isInstance(e) ? (e as Error).name : `untyped ${(e as Error)?.name}`;
          message = (e as Error)?.message;
        }
        records.push({ session: i, turn: n, start, end: performance.now(), error, message });
        if (thinkMs > 0) await new Promise((r) => setTimeout(r, thinkMs));
      }
    }),
  );
  return records;
}

/** Counts the commands a client sends (each is one request to a node). */
export function countCommands(client: Redis | Cluster): { count(): number; names: Map<string, number> } {
  const names = new Map<string, number>();
  let total = 0;
  const original = client.sendCommand.bind(client) as (...args: unknown[]) => unknown;
  (client as unknown as { sendCommand: (...args: unknown[]) => unknown }).sendCommand = (...args: unknown[]) => {
    const name = String((args[0] as { name: string }).name).toLowerCase();
    names.set(name, (names.get(name) ?? 0) + 1);
    total++;
    return original(...args);
  };
  return { count: () => total, names };
}

/** Script calls (`EVALSHA` + `EVAL`) each master has run, from `INFO commandstats`. */
export async function scriptCalls(masters: (Redis | Cluster)[]): Promise<number[]> {
  return Promise.all(
    masters.map(async (node) => {
      const info = await (node as Redis).info('commandstats');
      let calls = 0;
      for (const command of ['evalsha', 'eval']) calls += Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
      return calls;
    }),
  );
}
