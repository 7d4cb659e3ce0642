import { join } from 'node:path';
import { type AgentSession, createAgent, defineTool, InMemorySessionStore, Message } from '@ctx/core';
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

  /** The cost of `work` on the session whose message list is `listKey` (the LLEN before and after it not counted). */
  async measure(listKey: string, work: () => Promise<unknown>): Promise<RunCost> {
    const before = await this.#client.llen(listKey);
    const start = await this.#mark();
    this.#replies.length = 0;
    await work();
    const replies = this.#replies.splice(0);
    const end = await this.#mark();
    // Ranges are normalised against the longer of the list before and after the work: an upper
    // bound of what each covered, whether it ran before or after the work's writes.
    const length = Math.max(before, await this.#client.llen(listKey));
    const executed = this.#executed.slice(
      this.#executed.findIndex((a) => a[1] === start) + 1,
      this.#executed.findIndex((a) => a[1] === end),
    );
    let rangeEntries = 0;
    for (const [name, , ...rest] of executed) {
      const command = name!.toLowerCase();
      if (command === 'lrange' || command === 'zrange') rangeEntries += covered(Number(rest[0]), Number(rest[1]), length);
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

const lookup = defineTool({
  name: 'lookup',
  description: 'Looks something up.',
  parameters: { type: 'object', properties: {} },
  execute: () => 'found 000000',
});

/**
 * Agents with a Redis history (a window of `WINDOW`, or none): one that answers every run with the
 * same text, one hosted by a session store, and one whose model calls a tool once a run and whose
 * history is stored after every model call (`persistence: 'model-call'`).
 */
function setup(window: number | undefined) {
  // An input that asks to look something up gets a call of the tool; anything else, the answer.
  const chat = new ScriptedChatClient({
    replies: (messages) => {
      const last = messages.at(-1);
      return last?.role === 'user' && Message.text(last).startsWith('look up') ? { toolCalls: [{ name: 'lookup' }] } : 'reply 000000';
    },
  });
  const history = new RedisHistoryProvider({ client, prefix, ...(window === undefined ? {} : { maxMessages: window }) });
  const agent = createAgent({ client: chat, contextProviders: [history] });
  const hosted = createAgent({ client: chat, contextProviders: [history], sessionStore: new InMemorySessionStore() });
  const tooling = createAgent({ client: chat, contextProviders: [history], tools: [lookup], persistence: 'model-call' });
  /** A new session holding the seeded conversation of `size` messages. */
  const session = async (size: number, name: string): Promise<AgentSession> => {
    const sessionId = `${name}-${size}-${Math.random().toString(36).slice(2, 8)}`;
    await history.forkMessages(seeded.get(size)!, sessionId, { fromState: {}, toState: {} });
    return agent.getSessionById(sessionId);
  };
  /** The cost of `work`, a run on `sessionId`, and how many history messages its first model call was sent (all but the input). */
  const measure = async (sessionId: string, work: () => Promise<unknown>): Promise<Measured> => {
    const calls = chat.calls.length;
    const cost = await meter.measure(history.keys(sessionId).messages, work);
    return { cost, sent: chat.calls[calls]!.messages.length - 1 };
  };
  return { agent, hosted, tooling, session, measure };
}

/** One measured run: what it cost, and how many history messages its first model call was sent. */
interface Measured {
  cost: RunCost;
  sent: number;
}

/** A flow: its measured runs on a session seeded with `size` messages. */
type Flow = (size: number) => Promise<Measured[]>;

/** The flows that change the history between runs, or store it more than once a run. */
function flows(window: number | undefined): [string, Flow][] {
  // Made on first use: the server starts after the tests are collected.
  let made: ReturnType<typeof setup> | undefined;
  const t = () => (made ??= setup(window));
  const run = (session: AgentSession, text: string) => t().measure(session.sessionId, () => t().agent.run(text, { session }));
  return [
    [
      'consecutive runs on one session',
      async (size) => {
        const session = await t().session(size, 'consecutive');
        await t().agent.run('first', { session });
        return [await run(session, 'second'), await run(session, 'third')];
      },
    ],
    [
      'a run after agent.rewindSession',
      async (size) => {
        const { agent, session: seed } = t();
        const session = await seed(size, 'rewind');
        await agent.run('to be taken back', { session });
        const [question] = await agent.getHistory(session, { limit: 2 });
        await agent.rewindSession(session, question!.id);
        const after = await run(session, 'after the rewind');
        // Rewound again, into the seeded conversation (the list is cut outside any run).
        const [older] = await agent.getHistory(session, { limit: 5 });
        await agent.rewindSession(session, older!.id);
        return [after, await run(session, 'after another rewind')];
      },
    ],
    [
      'a run after another process wrote to the session',
      async (size) => {
        const session = await t().session(size, 'other-writer');
        await t().agent.run('first', { session });
        const measured: Measured[] = [];
        for (const text of ['after a turn written elsewhere', 'after another']) {
          // Another process's provider, on a connection of its own, appends a turn.
          await elsewhere().append(session.sessionId, conversation(0, 2));
          measured.push(await run(session, text));
        }
        return measured;
      },
    ],
    [
      'a run on a session restored from JSON for each request',
      async (size) => {
        const { agent, session: seed } = t();
        let json = JSON.stringify(agent.serializeSession(await seed(size, 'restored')));
        const measured: Measured[] = [];
        for (const text of ['request one', 'request two']) {
          const session = agent.restoreSession(JSON.parse(json));
          measured.push(await run(session, text));
          json = JSON.stringify(agent.serializeSession(session));
        }
        return measured;
      },
    ],
    [
      'a hosted run, the session loaded from a session store for each request',
      async (size) => {
        const { hosted, session: seed, measure } = t();
        const { sessionId } = await seed(size, 'hosted');
        const measured: Measured[] = [];
        for (const text of ['request one', 'request two']) measured.push(await measure(sessionId, () => hosted.run(text, { sessionId })));
        return measured;
      },
    ],
    [
      "a run with a tool call, stored after each model call (persistence: 'model-call')",
      async (size) => {
        const { tooling, session: seed, measure } = t();
        const session = await seed(size, 'model-call');
        const measured: Measured[] = [];
        for (const text of ['look up one', 'look up two']) {
          measured.push(await measure(session.sessionId, () => tooling.run(text, { session })));
        }
        return measured;
      },
    ],
  ];
}

/**
 * At most how many entries the save scripts of one run read on the server: the newest sequence
 * number per save, and with a save per model call the turn stored so far (input, call, result).
 */
const TURN_READS = 20;

/** How many save-script calls a run made. */
const saves = (cost: RunCost) => cost.commands.filter((c) => c === 'evalsha').length;

describe(`a run with a window (maxMessages: ${WINDOW}) costs the same at ${SMALL} and at ${LARGE} stored messages`, () => {
  for (const [name, flow] of flows(WINDOW)) {
    it(name, async () => {
      const small = await flow(SMALL);
      const large = await flow(LARGE);
      expect(large.length).toBe(small.length);
      for (const [i, { cost, sent }] of large.entries()) {
        const before = small[i]!.cost;
        // One LRANGE of the window, then calls of the save script (one a write), nothing else.
        expect(cost.commands).toEqual(before.commands);
        expect(cost.commands[0]).toBe('lrange');
        expect(cost.commands.slice(1).every((c) => c === 'evalsha')).toBe(true);
        expect(cost.serverCommands).toEqual(before.serverCommands);
        // The window's entries and one reply per save: the same count; message texts and ids of one
        // length, so the same bytes within a little.
        expect(cost.replyEntries).toBe(WINDOW + saves(cost));
        expect(cost.replyEntries).toBe(before.replyEntries);
        expect(Math.abs(cost.replyBytes - before.replyBytes)).toBeLessThanOrEqual(64);
        // On the server: the window, and what the scripts look at around the turn they store (the
        // newest sequence number; with a save per model call, the turn stored so far).
        expect(cost.rangeEntries).toBe(before.rangeEntries);
        expect(cost.rangeEntries).toBeLessThanOrEqual(WINDOW + TURN_READS);
        expect([sent, small[i]!.sent]).toEqual([WINDOW, WINDOW]);
      }
    });
  }
});

// Without a window a run must send the model the whole conversation, so it must read it: what it
// reads may grow with what it sends (one entry per message sent), and nothing else may grow. What
// a run reads beyond the messages sent (the save script's replies, what the scripts look at around
// the turn they store) is the same at both sizes.
describe(`a run without a window reads only what it sends the model, at ${SMALL} and at ${LARGE} stored messages`, () => {
  for (const [name, flow] of flows(undefined)) {
    it(name, async () => {
      const small = await flow(SMALL);
      const large = await flow(LARGE);
      expect(large.length).toBe(small.length);
      for (const [i, { cost, sent }] of large.entries()) {
        const before = small[i]!;
        expect(cost.commands).toEqual(before.cost.commands);
        expect(cost.serverCommands).toEqual(before.cost.serverCommands);
        expect(sent).toBeGreaterThanOrEqual(LARGE - 10);
        expect(cost.replyEntries - sent).toBe(saves(cost));
        expect(before.cost.replyEntries - before.sent).toBe(saves(cost));
        expect(cost.rangeEntries - sent).toBe(before.cost.rangeEntries - before.sent);
        expect(cost.rangeEntries - sent).toBeLessThanOrEqual(TURN_READS);
      }
    });
  }
});
