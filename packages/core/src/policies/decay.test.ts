import { describe, expect, it } from 'vitest';
import { ConfigurationError, SessionStateError } from '../errors.js';
import { Message } from '../messages/message.js';
import { createAgent } from '../run/create-agent.js';
import type { JsonObject } from '../contracts/json.js';
import type { ContextProvider } from '../contracts/run-view.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { DecayingList } from './decay.js';

describe('DecayingList', () => {
  it('expires entries by TTL on an injected clock', () => {
    let now = 1_000;
    const state: JsonObject = {};
    const list = new DecayingList<string>(state, 'facts', { ttlMs: 100, now: () => now });
    list.add('old');
    now += 60;
    list.add('new');
    expect(list.values()).toEqual(['old', 'new']);
    now += 40; // 'old' is 100 ms old: expired; 'new' is 40 ms old
    expect(list.values()).toEqual(['new']);
    expect(state.facts).toHaveLength(2); // reading changes nothing
    expect(list.prune().map((e) => e.value)).toEqual(['old']);
    expect(state.facts).toEqual([{ value: 'new', addedAt: 1_060 }]);
    expect(list.ageOf(list.entries()[0]!)).toBe(40);
  });

  it('keeps the newest maxEntries, and a refreshed entry counts as new', () => {
    let now = 0;
    const state: JsonObject = {};
    const list = new DecayingList<string>(state, 'xs', { maxEntries: 2, now: () => now });
    for (const v of ['a', 'b', 'c']) {
      now++;
      list.add(v);
    }
    expect(list.values()).toEqual(['b', 'c']);
    now++;
    expect(list.refresh((v) => v === 'a')).toBe(1);
    expect(list.values()).toEqual(['a', 'c']);
    list.prune();
    expect(list.all().map((e) => e.value)).toEqual(['a', 'c']);
  });

  it('updates and removes by value, and survives a JSON round trip', () => {
    const state: JsonObject = {};
    const list = new DecayingList<{ k: string }>(state, 'xs', { now: () => 5 });
    list.add({ k: 'x' });
    list.add({ k: 'y' });
    list.update(
      (v) => v.k === 'x',
      () => ({ k: 'z' }),
    );
    expect(list.remove((v) => v.k === 'y')).toHaveLength(1);
    const again = new DecayingList<{ k: string }>(JSON.parse(JSON.stringify(state)) as JsonObject, 'xs');
    expect(again.entries()).toEqual([{ value: { k: 'z' }, addedAt: 5 }]);
  });

  it('rejects malformed stored lists with the path, and bad policies', () => {
    expect(() => new DecayingList({ xs: [{ value: 1, addedAt: 'yesterday' }] }, 'xs', { path: '$.state.p.xs' })).toThrow(
      expect.objectContaining({ path: '$.state.p.xs[0].addedAt' }),
    );
    expect(() => new DecayingList({ xs: {} }, 'xs')).toThrow(SessionStateError);
    expect(() =>
      DecayingList.validate([{ value: 1, addedAt: 1 }], '$.x', (v, p) => {
        if (typeof v !== 'string') throw new SessionStateError(p, 'must be a string');
      }),
    ).toThrow(expect.objectContaining({ path: '$.x[0].value' }));
    expect(() => new DecayingList({}, 'xs', { ttlMs: 0 })).toThrow(ConfigurationError);
    expect(() => new DecayingList({}, 'xs', { maxEntries: 1.5 })).toThrow(ConfigurationError);
  });

  it('drops old entries of a provider across runs and a session round trip', async () => {
    let now = Date.UTC(2025, 0, 1);
    const DAY = 86_400_000;
    // Remembers every user input for a day, and tells the model what it remembers.
    const recall: ContextProvider = {
      sourceId: 'recall',
      beforeRun({ context, state }) {
        const list = new DecayingList<string>(state, 'inputs', { ttlMs: DAY, now: () => now });
        list.prune();
        if (list.entries().length) context.extendInstructions('recall', `Earlier: ${list.values().join('; ')}`);
        list.add(Message.text(context.inputMessages[0]!));
      },
    };
    const client = new ScriptedChatClient({ replies: () => 'ok' });
    const agent = createAgent({ client, contextProviders: [recall] });
    let session = agent.createSession();
    await agent.run('I like tea', { session });
    now += DAY / 2;
    await agent.run('I live in Oslo', { session });
    expect(client.calls[1]!.options.instructions).toBe('Earlier: I like tea');
    session = agent.restoreSession(JSON.stringify(session));
    now += DAY / 2 + 1; // tea is now older than a day
    await agent.run('hello', { session });
    expect(client.calls[2]!.options.instructions).toBe('Earlier: I live in Oslo');
    expect((session.state.recall!.inputs as JsonObject[]).map((e) => e.value)).toEqual(['I live in Oslo', 'hello']);
  });
});
