import { type AgentSession, createAgent, defineTool, InMemorySessionStore, Message } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { type FaultProxy, type ProxiedRequest, startFaultProxy } from '@ctx/cosmos-stand-in';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cosmosClient, env, uniqueId } from '../test/helpers.js';
import { CosmosHistoryProvider } from './cosmos-history-provider.js';

// The work of a run must not grow with the stored history, whatever changed the history since the
// last run: a run costs the same at 100 and at 10,000 stored messages. Nothing is timed: every
// request the provider sends goes through a logging proxy in front of the stand-in, which counts the
// requests by kind and the documents and bytes of their answers.

/** The stored sizes compared. */
const SMALL = 100;
const LARGE = 10_000;
/**
 * The larger size without a window, where every run reads the whole conversation: the stand-in
 * runs and sorts the whole query again for every page of 1,000 (about 0.4 s a page at 10,000 on a
 * 2-core machine), so a full read of 10,000 takes seconds. What is checked there (documents read
 * against messages sent) does not depend on the size, and 2,000 still spans several pages.
 */
const MEDIUM = 2_000;
/** The window of a windowed history. */
const WINDOW = 20;

/** What one run cost. */
interface RunCost {
  /** The requests sent, by kind, in order. */
  requests: string[];
  /**
   * Documents the answers carried. A query-plan request is left out: the stand-in answers it by
   * running the query (Cosmos DB answers with a plan), so its documents are those of the query after it.
   */
  documents: number;
  /** Bytes of the answers (query plans left out, as above). */
  bytes: number;
}

/** The cost of a run from the requests it sent. */
function costOf(requests: readonly ProxiedRequest[]): RunCost {
  const counted = requests.filter((r) => r.kind !== 'query-plan');
  return {
    requests: requests.map((r) => r.kind),
    documents: counted.reduce((sum, r) => sum + (r.items ?? 0), 0),
    bytes: counted.reduce((sum, r) => sum + r.responseBytes, 0),
  };
}

/** A conversation of `count` messages, user and assistant in turn, each text of the same length. */
function conversation(from: number, count: number): Message[] {
  return Array.from({ length: count }, (_, j) => {
    const i = from + j;
    const text = `message ${String(i).padStart(6, '0')}`;
    return i % 2 === 0 ? Message.user(text) : Message.assistant(text);
  });
}

const databaseId = uniqueId('work');
/** The client that writes outside the measured runs (seeding, another process's writes), straight to the stand-in. */
const direct = cosmosClient();
let proxy: FaultProxy;
let counted: ReturnType<typeof cosmosClient>;
/** A container per size, each holding one seeded session: every flow runs on it, one after the other. */
const containers = new Map<number, string>();
const SESSION = 'seeded';

beforeAll(async () => {
  proxy = await startFaultProxy(env.endpoint, { countItems: true });
  counted = cosmosClient(proxy.endpoint);
  for (const size of [SMALL, MEDIUM, LARGE]) {
    const containerId = uniqueId(`c${size}`);
    const seeder = new CosmosHistoryProvider({ client: direct, databaseId, containerId, createIfNotExists: true });
    // Bulk write in saves of 1,000 (one patch of the head, then transactional batches of 100).
    for (let i = 0; i < size; i += 1000) await seeder.append(SESSION, conversation(i, Math.min(1000, size - i)));
    containers.set(size, containerId);
  }
});
afterAll(() => proxy?.stop());

/** The cost of `work`: the requests it sent through the proxy. */
async function measure(work: () => Promise<unknown>): Promise<RunCost> {
  proxy.resetLog();
  await work();
  return costOf(proxy.requests);
}

const lookup = defineTool({
  name: 'lookup',
  description: 'Looks something up.',
  parameters: { type: 'object', properties: {} },
  execute: () => 'found 000000',
});

/** One measured run: which flow, what it cost, how many history messages its first model call was sent. */
interface Measured {
  name: string;
  cost: RunCost;
  sent: number;
}

/**
 * Every flow that changes the history between runs, one after the other on the seeded session of
 * `size`; resolves to the measured runs. `check` sees each as soon as it is measured (the run
 * after one that read the whole history would take long on the stand-in: fail first).
 */
async function flows(
  size: number,
  window: number | undefined,
  check: (run: Measured, index: number) => void = () => {},
): Promise<Measured[]> {
  const containerId = containers.get(size)!;
  const options = { databaseId, containerId, ...(window === undefined ? {} : { maxMessages: window }) };
  const history = new CosmosHistoryProvider({ client: counted, ...options });
  const elsewhere = new CosmosHistoryProvider({ client: direct, ...options });
  // An input that asks to look something up gets a call of the tool; anything else, the answer.
  const chat = new ScriptedChatClient({
    replies: (messages) => {
      const last = messages.at(-1);
      return last?.role === 'user' && Message.text(last).startsWith('look up') ? { toolCalls: [{ name: 'lookup' }] } : 'reply 000000';
    },
  });
  const agent = createAgent({ client: chat, contextProviders: [history] });
  const hosted = createAgent({ client: chat, contextProviders: [history], sessionStore: new InMemorySessionStore() });
  const tooling = createAgent({ client: chat, contextProviders: [history], tools: [lookup], persistence: 'model-call' });
  const out: Measured[] = [];
  /** Measures `work`, a run, and checks it. */
  const record = async (name: string, work: () => Promise<unknown>) => {
    const calls = chat.calls.length;
    const cost = await measure(work);
    out.push({ name, cost, sent: chat.calls[calls]!.messages.length - 1 });
    check(out.at(-1)!, out.length - 1);
  };
  const session = agent.getSessionById(SESSION);
  const run = (s: AgentSession, text: string) => () => agent.run(text, { session: s });

  // Consecutive runs on one session (the first one warms up the client: container metadata).
  await agent.run('first', { session });
  await record('consecutive run', run(session, 'second'));
  await record('consecutive run', run(session, 'third'));

  // A run after agent.rewindSession, back over the last turn into the seeded conversation (once:
  // the rewind itself reads the whole history, seconds at 10,000 on the stand-in).
  const [to] = await agent.getHistory(session, { limit: 5 });
  await agent.rewindSession(session, to!.id);
  await record('run after a rewind', run(session, 'after a rewind'));

  // A run after another process (its own provider and client) appended a turn.
  await elsewhere.append(SESSION, conversation(0, 2));
  await record('run after another writer', run(session, 'after another writer'));

  // A run on a session restored from JSON, for each request.
  let json = JSON.stringify(agent.serializeSession(session));
  for (const text of ['restored one', 'restored two']) {
    const restored = agent.restoreSession(JSON.parse(json));
    await record('run on a restored session', run(restored, text));
    json = JSON.stringify(agent.serializeSession(restored));
  }

  // A hosted run: the session loaded from a session store for each request.
  for (const text of ['hosted one', 'hosted two']) await record('hosted run', () => hosted.run(text, { sessionId: SESSION }));

  // A run with a tool call, stored after each model call (persistence: 'model-call').
  for (const text of ['look up one', 'look up two']) await record('run stored per model call', () => tooling.run(text, { session }));
  return out;
}

/**
 * At most how many documents the saves of one run read beyond the window: the head each save
 * patches, the messages each batch stored, and with a save per model call the turn stored so far
 * (its input, call and result).
 */
const TURN_READS = 20;

/** The requests after a run's load (its query-plan request and the query's pages): those of the saves. */
const saves = (cost: RunCost) => cost.requests.slice(cost.requests.indexOf('patch'));

describe(`a run costs the same at ${SMALL} and at ${LARGE} stored messages`, () => {
  it(`with a window (maxMessages: ${WINDOW}): the same requests, documents and bytes, in every flow`, async () => {
    const small = await flows(SMALL, WINDOW);
    const large = await flows(LARGE, WINDOW, ({ name, cost, sent }, i) => {
      const before = small[i]!;
      // The window (a query: its plan, then the query), then the saves (a patch of the head, one batch; more with a save per model call).
      expect(cost.requests, name).toEqual(before.cost.requests);
      expect(cost.requests.slice(0, 4), name).toEqual(['query-plan', 'query', 'patch', 'batch']);
      // The window's documents and what the saves return: the same count; texts and ids of one
      // length, so the same bytes within a little.
      expect(cost.documents, name).toBe(before.cost.documents);
      expect(cost.documents, name).toBeLessThanOrEqual(WINDOW + TURN_READS);
      expect(Math.abs(cost.bytes - before.cost.bytes), name).toBeLessThanOrEqual(256);
      expect([sent, before.sent], name).toEqual([WINDOW, WINDOW]);
    });
    expect(large.map((r) => r.name)).toEqual(small.map((r) => r.name));
  });

  // Without a window a run must send the model the whole conversation, so it must read it: the
  // documents read may grow only by the messages sent (one per message), and the requests only by
  // the query's pages (1,000 messages a page). What a run reads beyond the messages sent (what the
  // saves return and look at) is the same at both sizes.
  it(`without a window: only what it sends the model, in every flow (at ${SMALL} and ${MEDIUM})`, async () => {
    const small = await flows(SMALL, undefined);
    const large = await flows(MEDIUM, undefined, ({ name, cost, sent }, i) => {
      const before = small[i]!;
      expect(sent, name).toBeGreaterThanOrEqual(MEDIUM - 10);
      const pages = Math.ceil(sent / 1000);
      expect(cost.requests, name).toEqual(['query-plan', ...Array<string>(pages).fill('query'), ...saves(before.cost)]);
      expect(before.cost.requests.slice(0, 3), name).toEqual(['query-plan', 'query', 'patch']);
      expect(cost.documents - sent, name).toBe(before.cost.documents - before.sent);
      expect(cost.documents - sent, name).toBeLessThanOrEqual(TURN_READS);
    });
    expect(large.map((r) => r.name)).toEqual(small.map((r) => r.name));
  });
});
