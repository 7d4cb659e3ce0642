import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigurationError } from '../errors.js';
import { Message } from '../messages/message.js';
import { CallScan } from '../messages/settled-calls.js';
import { createAgent } from '../run/create-agent.js';
import type { AgentSession } from '../session/agent-session.js';
import type { JsonObject, JsonValue } from '../contracts/json.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { InMemoryHistoryProvider } from './in-memory-history-provider.js';

/**
 * What a run reads of the stored history, counted rather than timed: every read of an entry of
 * the stored list (`messages[i]`) goes through a Proxy. Reading an entry is what any walk over the
 * history does (an id index rebuilt, each message checked again), so a run whose reads grow with
 * the stored history is caught whatever the walk is for. The loaded messages are read again only
 * to tell whether their calls are settled (`CallScan.add`, counted apart).
 */
class CountingHistory extends InMemoryHistoryProvider {
  reads = 0;

  /** Puts the stored list of `state` behind the counter (as a restore does, before the list is checked). */
  count(state: JsonObject): void {
    const list = state.messages as JsonValue[];
    state.messages = new Proxy(list, {
      get: (target, key, receiver) => {
        if (typeof key === 'string' && key !== 'length' && /^\d+$/.test(key)) this.reads++;
        return Reflect.get(target, key, receiver);
      },
    });
  }

  override validateState(state: JsonObject, path: string): void {
    if (Array.isArray(state.messages)) this.count(state);
    super.validateState(state, path);
  }
}

const WINDOW = 20;

/** `count` messages as runs store them: turns of a question and its answer. */
function conversation(count: number): Message[] {
  const out: Message[] = [];
  for (let i = 0; i < count / 2; i++) {
    out.push({ ...Message.user(`question ${i}`), metadata: { ctx: { sourceId: 'input', sourceType: 'input' } } });
    out.push({ ...Message.assistant(`answer ${i}`), metadata: { ctx: { sourceId: 'response', sourceType: 'response' } } });
  }
  return out;
}

type Flow = 'consecutive runs' | 'a run after a rewind' | 'a run on a session restored from JSON';

afterEach(() => {
  vi.restoreAllMocks();
});

/**
 * Reads of the stored list, messages scanned for settled calls, and objects frozen (each frozen
 * copy of a message freezes at least one: a copy made) by one run (the last of a few), in `flow`,
 * on a session of `stored` messages.
 */
async function readsPerRun(
  flow: Flow,
  stored: number,
  maxMessages: number | undefined,
): Promise<{ reads: number; scanned: number; frozen: number }> {
  const scan = vi.spyOn(CallScan.prototype, 'add');
  const freeze = vi.spyOn(Object, 'freeze');
  const history = new CountingHistory(maxMessages === undefined ? {} : { maxMessages });
  const agent = createAgent({ name: 'counted', client: new ScriptedChatClient({ replies: () => 'ok' }), contextProviders: [history] });
  let session: AgentSession = agent.createSession({ state: { memory: { messages: conversation(stored) as unknown as JsonValue[] } } });
  history.count(session.state.memory!);
  const json = JSON.stringify(agent.serializeSession(session));
  let reads = 0;
  let scanned = 0;
  let frozen = 0;
  for (let run = 0; run < 3; run++) {
    if (flow === 'a run after a rewind') {
      // Back two turns (editing the question before last): the run before this one loaded one of them.
      const messages = await agent.getHistory(session);
      await agent.rewindSession(session, messages[messages.length - 4]!.id);
    } else if (flow === 'a run on a session restored from JSON') {
      session = agent.restoreSession(json);
    }
    history.reads = 0;
    scan.mockClear();
    freeze.mockClear();
    await agent.run('next question', { session });
    reads = history.reads;
    scanned = scan.mock.calls.length;
    frozen = freeze.mock.calls.length;
  }
  return { reads, scanned, frozen };
}

const FLOWS: Flow[] = ['consecutive runs', 'a run after a rewind', 'a run on a session restored from JSON'];

describe('a run reads of the stored history only what it sends, whatever changed it since the last run', () => {
  it.each(FLOWS)('with a window: %s read as much at 10,000 stored messages as at 100', async (flow) => {
    const small = await readsPerRun(flow, 100, WINDOW);
    const large = await readsPerRun(flow, 10_000, WINDOW);
    expect(small.reads).toBeGreaterThan(0);
    expect(small.reads).toBeLessThanOrEqual(4 * WINDOW);
    // Ids are found through a hash table, whose probes may read an entry whose hash bits match by chance.
    expect(large.scanned).toBe(small.scanned);
    expect(large.reads).toBeLessThanOrEqual(small.reads + 4);
  });

  it.each(FLOWS)('without a window: %s read each message a bounded number of times', async (flow) => {
    for (const stored of [100, 10_000]) {
      const { reads, scanned } = await readsPerRun(flow, stored, undefined);
      // Each message sent is read once to be sent (and frozen, the first time); nothing else walks the history.
      expect(reads, `${stored} stored messages`).toBeLessThanOrEqual(stored + 40);
      // Whether calls are settled is read once per message a run has not seen: after a rewind, only
      // the turn before the cut; after a restore, none (the restore read them).
      expect(scanned, `${stored} stored messages`).toBeLessThanOrEqual(40);
    }
  });

  it.each(FLOWS)('%s copies no stored message: as many objects frozen at 10,000 stored messages as at 100', async (flow) => {
    for (const maxMessages of [WINDOW, undefined]) {
      const small = await readsPerRun(flow, 100, maxMessages);
      const large = await readsPerRun(flow, 10_000, maxMessages);
      // What a run freezes is its own: the input, the reply, the context messages and their attributed forms.
      expect(small.frozen, `window ${maxMessages}`).toBeGreaterThan(0);
      expect(small.frozen, `window ${maxMessages}`).toBeLessThanOrEqual(12);
      expect(large.frozen, `window ${maxMessages}`).toBe(small.frozen);
    }
  });
});

describe('a rewind reads the history back to the message, not the whole of it', () => {
  /** Reads of the stored list by `agent.rewindSession` back `turns` turns, on a session of `stored` messages. */
  async function readsOfRewind(stored: number, turns: number): Promise<number> {
    const history = new CountingHistory();
    const agent = createAgent({ name: 'counted', client: new ScriptedChatClient({ replies: () => 'ok' }), contextProviders: [history] });
    const session = agent.createSession({ state: { memory: { messages: conversation(stored) as unknown as JsonValue[] } } });
    history.count(session.state.memory!);
    await agent.run('a question', { session });
    const to = (session.state.memory!.messages as unknown as Message[]).at(-2 * turns)!.id;
    history.reads = 0;
    const removed = await agent.rewindSession(session, to);
    const reads = history.reads;
    expect(removed).toHaveLength(2 * turns);
    expect(await agent.getHistory(session)).toHaveLength(stored + 2 - 2 * turns);
    return reads;
  }

  it('as many reads at 10,000 stored messages as at 100 back one turn, and a few per message removed back 40 or 400', async () => {
    const small = await readsOfRewind(100, 1);
    expect(small).toBeGreaterThan(0);
    expect(await readsOfRewind(10_000, 1)).toBe(small);
    for (const turns of [40, 400]) {
      // Windows growing 4-fold from 64 until one holds the message: less than 6 reads per message removed, and its pop.
      expect(await readsOfRewind(10_000, turns), `${turns} turns`).toBeLessThanOrEqual(64 + 8 * 2 * turns);
    }
  });
});

describe('a history method called without its state slot', () => {
  const history = new InMemoryHistoryProvider();
  const calls: [string, () => Promise<unknown>][] = [
    ['popMessages', () => history.popMessages('s', { state: undefined as never })],
    ['getMessages', () => history.getMessages('s', { state: undefined as never })],
    ['saveMessages', () => history.saveMessages('s', [Message.user('hi')], { state: null as never })],
    ['clearMessages', () => history.clearMessages('s', { state: undefined as never })],
    ['forkMessages', () => history.forkMessages('s', 't', { fromState: {}, toState: undefined as never })],
  ];
  it.each(calls)('%s is a ConfigurationError saying what to pass', async (_, call) => {
    const error = await call().catch((e: unknown) => e);
    expect(ConfigurationError.isInstance(error), String(error)).toBe(true);
    expect((error as Error).message).toContain("session.stateOf('memory')");
  });
});
