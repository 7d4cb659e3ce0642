import { join } from 'node:path';
import { type AgentSession, createAgent, InMemorySessionStore, Message } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { type RedisServer, startRedisServer } from '@ctx/redis-test-server';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { env, uniquePrefix } from '../test/helpers.js';
import { RedisHistoryProvider } from './redis-history-provider.js';

// The work of a run must not grow with the stored history, whatever changed the history since the
// last run: a run costs the same at 100 and at 10,000 stored messages. Nothing is timed: a run's
// cost is counted from both ends of the connection. The client side counts the commands sent and
// the entries and bytes of their replies; the server side (MONITOR on a server of this file's own)
// lists every command executed for the session, those the scripts run included, and how many
// entries the range reads among them covered, so a script that walked the whole list fails too.

/** The stored sizes compared. */
const SMALL = 100;
const LARGE = 10_000;
/** The window of a windowed history. */
const WINDOW = 20;

/** What one run cost. */
interface RunCost {
  /** Commands the client sent, by name, in order. */
  commands: string[];
  /** Entries (strings, numbers) in the replies the client got. */
  replyEntries: number;
  /** Bytes of the replies' string entries. */
  replyBytes: number;
  /** Every command the server executed for the session (sent, or run by a script), by name, in order. */
  serverCommands: string[];
  /** Entries the index range reads executed on the server covered (LRANGE, ZRANGE, LINDEX), scripts' included. */
  rangeEntries: number;
}

/** Entries and string bytes of a reply (nested arrays counted entry by entry). */
function sizeOf(reply: unknown): { entries: number; bytes: number } {
  if (Array.isArray(reply)) {
    let entries = 0;
    let bytes = 0;
    for (const item of reply) {
      const size = sizeOf(item);
      entries += size.entries;
      bytes += size.bytes;
    }
    return { entries, bytes };
  }
  if (reply === null || reply === undefined) return { entries: 0, bytes: 0 };
  if (typeof reply === 'string') return { entries: 1, bytes: Buffer.byteLength(reply) };
  if (Buffer.isBuffer(reply)) return { entries: 1, bytes: reply.length };
  return { entries: 1, bytes: 0 };
}

/** How many entries of a list or sorted set of `length` entries an index range `start..stop` covers. */
function covered(start: number, stop: number, length: number): number {
  const from = Math.max(0, start < 0 ? length + start : start);
  const to = Math.min(length - 1, stop < 0 ? length + stop : stop);
  return Math.max(0, to - from + 1);
}

/** Counts what the work given to `measure` costs on `client` (a connection of its own) and on its server (`monitor`). */
class Meter {
  readonly #client: Redis;
  readonly #replies: { name: string; entries: number; bytes: number }[] = [];
  readonly #executed: string[][] = [];
  #marks = 0;

  constructor(client: Redis, monitor: Redis) {
    this.#client = client;
    const send = client.sendCommand.bind(client) as (...args: unknown[]) => Promise<unknown>;
    (client as unknown as { sendCommand: (...args: unknown[]) => unknown }).sendCommand = (...args: unknown[]) => {
      const entry = { name: String((args[0] as { name: string }).name).toLowerCase(), entries: 0, bytes: 0 };
      this.#replies.push(entry);
      const reply = send(...args);
      reply.then(
        (value) => Object.assign(entry, sizeOf(value)),
        () => undefined,
      );
      return reply;
    };
    monitor.on('monitor', (_time: string, args: string[]) => this.#executed.push(args));
  }

  /** The cost of `work` on the session whose message list is `listKey`. */
  async measure(listKey: string, work: () => Promise<unknown>): Promise<RunCost> {
    const before = await this.#client.llen(listKey);
    const start = await this.#mark();
    this.#replies.length = 0;
    await work();
    const replies = this.#replies.splice(0);
    const end = await this.#mark();
    const executed = this.#executed.slice(
      this.#executed.findIndex((a) => a[1] === start) + 1,
      this.#executed.findIndex((a) => a[1] === end),
    );
    let rangeEntries = 0;
    for (const [name, , ...rest] of executed) {
      const command = name!.toLowerCase();
      // A run reads before it writes: the ranges are those of the list as it was before the run.
      if (command === 'lrange' || command === 'zrange') rangeEntries += covered(Number(rest[0]), Number(rest[1]), before);
      if (command === 'lindex') rangeEntries += 1;
    }
    return {
      commands: replies.map((r) => r.name),
      replyEntries: replies.reduce((sum, r) => sum + r.entries, 0),
      replyBytes: replies.reduce((sum, r) => sum + r.bytes, 0),
      serverCommands: executed.map(([name]) => name!.toLowerCase()),
      rangeEntries,
    };
  }

  /** Sends an ECHO the monitor will see, and resolves to its text once the monitor saw it. */
  async #mark(): Promise<string> {
    const text = `mark-${++this.#marks}`;
    await this.#client.echo(text);
    for (let i = 0; i < 500 && !this.#executed.some((a) => a[0]?.toLowerCase() === 'echo' && a[1] === text); i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    if (!this.#executed.some((a) => a[1] === text)) throw new Error(`MONITOR did not report ${text} within 5 s`);
    return text;
  }
}

/** A conversation of `count` messages, user and assistant in turn, each text of the same length. */
function conversation(from: number, count: number): Message[] {
  return Array.from({ length: count }, (_, j) => {
    const i = from + j;
    const text = `message ${String(i).padStart(6, '0')}`;
    return i % 2 === 0 ? Message.user(text) : Message.assistant(text);
  });
}

let server: RedisServer;
let client: Redis;
let monitor: Redis;
let meter: Meter;
const prefix = uniquePrefix('work');
/** The seeded sessions by size: each flow forks its own copy (one script call on the server). */
const seeded = new Map<number, string>();

beforeAll(async () => {
  server = await startRedisServer({ dir: join(env.tmpDir, `work-${Math.random().toString(36).slice(2, 8)}`) });
  client = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 1, commandTimeout: 5000 });
  monitor = await new Redis({ host: '127.0.0.1', port: server.port }).monitor();
  meter = new Meter(client, monitor);
  const seeder = new RedisHistoryProvider({ client, prefix });
  for (const size of [SMALL, LARGE]) {
    const sessionId = `seed-${size}`;
    // Bulk write in saves of 2,000 (one script call each).
    for (let i = 0; i < size; i += 2000) await seeder.append(sessionId, conversation(i, Math.min(2000, size - i)));
    seeded.set(size, sessionId);
  }
});

afterAll(async () => {
  await other?.close();
  monitor?.disconnect();
  client?.disconnect();
  await server?.stop();
});

let other: RedisHistoryProvider | undefined;
/** A provider on a connection of its own (not counted), as another process has. */
function elsewhere(): RedisHistoryProvider {
  other ??= new RedisHistoryProvider({ url: `redis://127.0.0.1:${server.port}`, prefix });
  return other;
}

/** An agent with a Redis history (a window of `WINDOW`, or none) that answers every run with the same text. */
function setup(window: number | undefined) {
  const chat = new ScriptedChatClient({ replies: () => 'reply 000000' });
  const history = new RedisHistoryProvider({ client, prefix, ...(window === undefined ? {} : { maxMessages: window }) });
  const agent = createAgent({ client: chat, contextProviders: [history] });
  const hosted = createAgent({ client: chat, contextProviders: [history], sessionStore: new InMemorySessionStore() });
  /** A new session holding the seeded conversation of `size` messages. */
  const session = async (size: number, name: string): Promise<AgentSession> => {
    const sessionId = `${name}-${size}-${Math.random().toString(36).slice(2, 8)}`;
    await history.forkMessages(seeded.get(size)!, sessionId, { fromState: {}, toState: {} });
    return agent.getSessionById(sessionId);
  };
  /** How many history messages the last model call was sent (all it was sent but the run's input). */
  const sent = () => chat.calls.at(-1)!.messages.length - 1;
  const listKey = (s: AgentSession | string) => history.keys(typeof s === 'string' ? s : s.sessionId).messages;
  return { agent, hosted, history, session, sent, listKey };
}

/** The cost of the same flow at each size, and what the model was sent in each measured run. */
type Flow = (size: number) => Promise<{ costs: RunCost[]; sent: number[] }>;

/** The flows that changed the history between runs: consecutive runs, a rewind, a session restored from JSON. */
function flows(window: number | undefined): [string, Flow][] {
  // Made on first use: the server starts after the tests are collected.
  let made: ReturnType<typeof setup> | undefined;
  const t = new Proxy({} as ReturnType<typeof setup>, { get: (_, key) => (made ??= setup(window))[key as keyof typeof made] });
  const run = async (session: AgentSession, text: string) => {
    const cost = await meter.measure(t.listKey(session), () => t.agent.run(text, { session }));
    return { cost, sent: t.sent() };
  };
  return [
    [
      'consecutive runs on one session',
      async (size) => {
        const session = await t.session(size, 'consecutive');
        await t.agent.run('first', { session });
        const second = await run(session, 'second');
        const third = await run(session, 'third');
        return { costs: [second.cost, third.cost], sent: [second.sent, third.sent] };
      },
    ],
    [
      'a run after agent.rewindSession',
      async (size) => {
        const session = await t.session(size, 'rewind');
        await t.agent.run('to be taken back', { session });
        const [question] = await t.agent.getHistory(session, { limit: 2 });
        await t.agent.rewindSession(session, question!.id);
        const after = await run(session, 'after the rewind');
        // Rewound twice more: into the seeded conversation (the list is cut outside any run).
        const [older] = await t.agent.getHistory(session, { limit: 5 });
        await t.agent.rewindSession(session, older!.id);
        const again = await run(session, 'after another rewind');
        return { costs: [after.cost, again.cost], sent: [after.sent, again.sent] };
      },
    ],
    [
      'a run after another process wrote to the session',
      async (size) => {
        const session = await t.session(size, 'other-writer');
        await t.agent.run('first', { session });
        const costs: RunCost[] = [];
        const sent: number[] = [];
        for (const text of ['after a turn written elsewhere', 'after another']) {
          // Another process's provider, on a connection of its own, appends a turn.
          await elsewhere().append(session.sessionId, conversation(0, 2));
          const measured = await run(session, text);
          costs.push(measured.cost);
          sent.push(measured.sent);
        }
        return { costs, sent };
      },
    ],
    [
      'a run on a session restored from JSON for each request',
      async (size) => {
        const first = await t.session(size, 'restored');
        const costs: RunCost[] = [];
        const sent: number[] = [];
        let json = JSON.stringify(t.agent.serializeSession(first));
        for (const text of ['request one', 'request two']) {
          const session = t.agent.restoreSession(JSON.parse(json));
          const measured = await run(session, text);
          costs.push(measured.cost);
          sent.push(measured.sent);
          json = JSON.stringify(t.agent.serializeSession(session));
        }
        return { costs, sent };
      },
    ],
    [
      'a hosted run, the session loaded from a session store for each request',
      async (size) => {
        const { sessionId } = await t.session(size, 'hosted');
        const costs: RunCost[] = [];
        const sent: number[] = [];
        for (const text of ['request one', 'request two']) {
          costs.push(await meter.measure(t.listKey(sessionId), () => t.hosted.run(text, { sessionId })));
          sent.push(t.sent());
        }
        return { costs, sent };
      },
    ],
  ];
}

describe(`a run with a window (maxMessages: ${WINDOW}) costs the same at ${SMALL} and at ${LARGE} stored messages`, () => {
  for (const [name, flow] of flows(WINDOW)) {
    it(name, async () => {
      const small = await flow(SMALL);
      const large = await flow(LARGE);
      for (const [i, cost] of large.costs.entries()) {
        // One LRANGE of the window and one call of the save script, nothing else.
        expect(cost.commands).toEqual(['lrange', 'evalsha']);
        expect(cost.commands).toEqual(small.costs[i]!.commands);
        expect(cost.serverCommands).toEqual(small.costs[i]!.serverCommands);
        // The window's entries and the script's reply: the same count; message texts and ids of one length, so the same bytes within a little.
        expect(cost.replyEntries).toBe(WINDOW + 1);
        expect(cost.replyEntries).toBe(small.costs[i]!.replyEntries);
        expect(Math.abs(cost.replyBytes - small.costs[i]!.replyBytes)).toBeLessThanOrEqual(64);
        // On the server: the window, and the script's look at the newest sequence number.
        expect(cost.rangeEntries).toBe(small.costs[i]!.rangeEntries);
        expect(cost.rangeEntries).toBeLessThanOrEqual(WINDOW + 2);
        expect(large.sent[i]).toBe(WINDOW);
      }
    });
  }
});

// Without a window a run must send the model the whole conversation, so it must read it: what it
// may read grows with what it sends (one entry per message sent, plus the save script's reply and
// the script's look at one sequence number), and nothing else grows.
describe(`a run without a window reads only what it sends the model, at ${SMALL} and at ${LARGE} stored messages`, () => {
  for (const [name, flow] of flows(undefined)) {
    it(name, async () => {
      const small = await flow(SMALL);
      const large = await flow(LARGE);
      for (const [i, cost] of large.costs.entries()) {
        expect(cost.commands).toEqual(['lrange', 'evalsha']);
        expect(cost.serverCommands).toEqual(small.costs[i]!.serverCommands);
        expect(large.sent[i]).toBeGreaterThanOrEqual(LARGE - 10);
        for (const [at, measured] of [small, large].entries()) {
          const run = measured.costs[i]!;
          expect(run.replyEntries, `${[SMALL, LARGE][at]} stored`).toBe(measured.sent[i]! + 1);
          expect(run.rangeEntries, `${[SMALL, LARGE][at]} stored`).toBeLessThanOrEqual(measured.sent[i]! + 1);
        }
      }
    });
  }
});
