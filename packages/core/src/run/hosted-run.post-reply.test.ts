import { describe, expect, it } from 'vitest';
import { Message } from '../messages/message.js';
import { TitleProvider } from '../providers/title-provider.js';
import { InMemorySessionStore } from '../session/in-memory-session-store.js';
import type { AgentEvent } from '../contracts/events.js';
import type { ContextProvider } from '../contracts/run-view.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { createAgent } from './create-agent.js';

const texts = (messages: unknown) => (messages as Message[]).map((m) => `${m.role}:${Message.text(m)}`);

describe("a hosted run saves its providers' work after the reply with the turn", () => {
  it('a title model slower than the reply: 20 conversations x 3 turns, one title call each, every session stored with its title', async () => {
    const conversations = 20;
    /** Resolves once the chat model has answered the first message of a conversation. */
    const answered = new Map<string, () => void>();
    const replied = new Map<string, Promise<void>>();
    for (let c = 0; c < conversations; c++) {
      replied.set(`c${c} turn 0`, new Promise<void>((resolve) => answered.set(`c${c} turn 0`, resolve)));
    }
    const chat = new ScriptedChatClient({
      replies: (messages) => {
        const text = Message.text(messages.at(-1)!);
        answered.get(text)?.();
        return `re: ${text}`;
      },
    });
    // The title of a conversation arrives only after its first reply, and a macrotask later.
    const titles = new ScriptedChatClient({
      replies: async (messages) => {
        const first = Message.text(messages[0]!);
        await replied.get(first);
        await new Promise((resolve) => setImmediate(resolve));
        return `Title of ${first.split(' ')[0]}`;
      },
    });
    const store = new InMemorySessionStore();
    const agent = createAgent({ client: chat, sessionStore: store, contextProviders: [new TitleProvider({ client: titles })] });
    for (let turn = 0; turn < 3; turn++) {
      await Promise.all(
        Array.from({ length: conversations }, (_, c) => agent.run(`c${c} turn ${turn}`, { sessionId: `conv-${c}`, userId: 'ada' })),
      );
      // Between turns every title request has ended: a title that was not saved is asked for again.
      await agent.flush();
    }
    expect(titles.calls).toHaveLength(conversations);
    for (let c = 0; c < conversations; c++) {
      const stored = (await store.get(`conv-${c}`))!.session;
      expect(stored.metadata.title).toBe(`Title of c${c}`);
      expect(texts(stored.state.memory!.messages)).toHaveLength(6);
    }
    const listed = await store.list({ userId: 'ada', limit: 100 });
    expect(listed.sessions.every((s) => s.metadata.title?.startsWith('Title of '))).toBe(true);
  });

  it('a streaming hosted run streams the reply first; its response resolves once the title is saved with the turn', async () => {
    let giveTitle!: () => void;
    const titleGiven = new Promise<void>((resolve) => {
      giveTitle = resolve;
    });
    const titles = new ScriptedChatClient({
      replies: async () => {
        await titleGiven;
        return 'Dinner plans';
      },
    });
    const store = new InMemorySessionStore();
    // What each save stored: the turn is saved once, with its title.
    const saves: { title: string | undefined; messages: number }[] = [];
    const set = store.set.bind(store);
    store.set = (session, options) => {
      saves.push({ title: session.metadata.title, messages: (session.state.memory?.messages as unknown[] | undefined)?.length ?? 0 });
      return set(session, options);
    };
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: ['A table for two at eight.'] }),
      sessionStore: store,
      contextProviders: [new TitleProvider({ client: titles })],
    });
    const stream = agent.runStream('Book dinner', { sessionId: 's1' });
    // The whole reply streams while the title model has not answered (it answers only when given
    // the title below: a stream held back for it would never end).
    let text = '';
    const updates = stream[Symbol.asyncIterator]();
    while (text !== 'A table for two at eight.') {
      const next = await updates.next();
      if (next.done) break;
      for (const c of next.value.contents) if (c.type === 'text') text += c.text;
    }
    expect(text, 'the reply streamed while the title was still being written').toBe('A table for two at eight.');
    // The rest of the stream is read on: a run that did not wait for the title would save now, in
    // this turn of the event loop; the title is given in the next one.
    const rest = (async () => {
      for (let next = await updates.next(); !next.done; next = await updates.next());
    })();
    await new Promise<void>((resolve) => setImmediate(resolve));
    giveTitle();
    await rest;
    await stream.response;
    expect(
      saves.filter((s) => s.messages > 0),
      'not saved before the title',
    ).toEqual([{ title: 'Dinner plans', messages: 2 }]);
    expect((await store.get('s1'))!.session.metadata.title).toBe('Dinner plans');
  });

  it("work that overruns its provider's timeout, or fails, does not fail the run nor lose the turn: a post-reply-work-failed warning", async () => {
    const aborted: string[] = [];
    const hanging: ContextProvider = {
      sourceId: 'hanging',
      timeoutMs: 30,
      flush: ({ signal } = {}) =>
        new Promise((_, reject) =>
          signal?.addEventListener('abort', () => {
            aborted.push('hanging');
            reject(signal.reason);
          }),
        ),
    };
    const failing: ContextProvider = { sourceId: 'failing', flush: () => Promise.reject(new Error('memory service down')) };
    const events: AgentEvent[] = [];
    const store = new InMemorySessionStore();
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: ['Noted.'] }),
      sessionStore: store,
      contextProviders: [hanging, failing],
      onEvent: (e) => events.push(e),
    });
    const response = await agent.run('remember this', { sessionId: 's2' });
    expect(response.text).toBe('Noted.');
    expect(texts((await store.get('s2'))!.session.state.memory!.messages)).toEqual(['user:remember this', 'assistant:Noted.']);
    const warnings = events.filter((e) => e.type === 'warning' && e.code === 'post-reply-work-failed');
    expect(warnings.map((w) => (w.type === 'warning' ? w.sourceId : undefined)).sort()).toEqual(['failing', 'hanging']);
    expect(JSON.stringify(warnings)).toContain('30 ms');
    expect(aborted, "the overrunning provider's flush saw its signal abort").toEqual(['hanging']);
  });

  it("the agent's providerTimeoutMs bounds a provider without its own, and only this session's work is waited for", async () => {
    const asked: (string | undefined)[] = [];
    const slow: ContextProvider = {
      sourceId: 'slow',
      flush: ({ sessionId, signal } = {}) => {
        asked.push(sessionId);
        return new Promise((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason)));
      },
    };
    const events: AgentEvent[] = [];
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: ['ok'] }),
      sessionStore: new InMemorySessionStore(),
      contextProviders: [slow],
      providerTimeoutMs: 20,
      onEvent: (e) => events.push(e),
    });
    await agent.run('hi', { sessionId: 's3' });
    expect(asked).toEqual(['s3']);
    expect(events.some((e) => e.type === 'warning' && e.code === 'post-reply-work-failed' && e.sourceId === 'slow')).toBe(true);
  });

  it("aborting the run while it waits for the providers' work rejects with the reason, and nothing is saved", async () => {
    const controller = new AbortController();
    const waiting: ContextProvider = {
      sourceId: 'waiting',
      flush: ({ signal } = {}) => {
        controller.abort(new Error('client went away'));
        return new Promise((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason)));
      },
    };
    const store = new InMemorySessionStore();
    const agent = createAgent({ client: new ScriptedChatClient({ replies: ['ok'] }), sessionStore: store, contextProviders: [waiting] });
    const error = await agent.run('hi', { sessionId: 's4', signal: controller.signal }).catch((e: unknown) => e);
    expect((error as Error).message).toBe('client went away');
    expect((await store.get('s4'))!.session.state.memory).toBeUndefined();
  });
});
