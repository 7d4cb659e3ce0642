import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../errors.js';
import { Message } from '../messages/message.js';
import { createAgent } from '../run/create-agent.js';
import type { AgentEvent } from '../contracts/events.js';
import { ScriptedChatClient, type ScriptedReply } from '../testing/scripted-chat-client.js';
import { cleanTitle, TitleProvider } from './title-provider.js';

/** An agent answering `reply` (after `delayMs`) to everything, titled by `titles`, with its events. */
function setup(titles: ScriptedChatClient, options: { reply?: ScriptedReply; maxChars?: number; timeoutMs?: number } = {}) {
  const events: AgentEvent[] = [];
  const provider = new TitleProvider({
    client: titles,
    ...(options.maxChars ? { maxChars: options.maxChars } : {}),
    ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
  });
  const model = new ScriptedChatClient({ replies: () => options.reply ?? 'Sure.', chunkSize: 4 });
  const agent = createAgent({ client: model, contextProviders: [provider], onEvent: (e) => events.push(e) });
  const diagnostics = () => events.flatMap((e) => (e.type === 'provider-diagnostic' && e.sourceId === 'title' ? [e.code] : []));
  return { agent, provider, model, diagnostics };
}

describe('TitleProvider', () => {
  it('titles an untitled session from its first user message, cleaned, and never asks again once it has a title', async () => {
    const titles = new ScriptedChatClient({ replies: ['"Weekend trip to Lisbon."'] });
    const { agent } = setup(titles);
    const session = agent.createSession();
    await agent.run('Plan a weekend in Lisbon for two, please', { session });
    expect(session.metadata.title).toBe('Weekend trip to Lisbon');
    expect(titles.calls).toHaveLength(1);
    expect(Message.text(titles.calls[0]!.messages[0]!)).toBe('Plan a weekend in Lisbon for two, please');
    expect(titles.calls[0]!.options).toMatchObject({ store: false, instructions: expect.stringMatching(/at most 60 characters/) });

    await agent.run('And a restaurant?', { session });
    expect(titles.calls).toHaveLength(1);
  });

  it('never asks for a session that has a title', async () => {
    const titles = new ScriptedChatClient({ replies: [] });
    const { agent, diagnostics } = setup(titles);
    const session = agent.createSession({ title: 'Mine' });
    await agent.run('hello', { session });
    expect(titles.calls).toHaveLength(0);
    expect(session.metadata.title).toBe('Mine');
    expect(diagnostics()).toEqual([]);
  });

  it('does not hold the reply back for a slow title: the run ends first, the title lands on the session later, and flush waits for it', async () => {
    const title = deferred<string>();
    const titles = new ScriptedChatClient({ replies: () => title.promise });
    const { agent, provider } = setup(titles);
    const session = agent.createSession();
    // The title model has not answered (and answers only when told below): a run that waited for it would never end.
    await agent.run('hello', { session });
    expect(titles.calls).toHaveLength(1);
    expect(session.metadata.title).toBeUndefined();

    // A run on the same session while the request is in flight sends no second one.
    await agent.run('again', { session });
    expect(titles.calls).toHaveLength(1);

    // flush waits for the answer, given a turn of the event loop after flush has started: when
    // flush settles, the title is on the session.
    const flushed = agent.flush().then(() => session.metadata.title);
    setImmediate(() => title.resolve('Slow title'));
    expect(await flushed).toBe('Slow title');
    await provider.flush(); // nothing pending any more
  });

  it('runs on one session at once (each with its own session object, as hosted runs have) share one request, and each object gets the title', async () => {
    let give!: () => void;
    const given = new Promise<void>((resolve) => {
      give = resolve;
    });
    const titles = new ScriptedChatClient({
      replies: async () => {
        await given;
        return 'Shared title';
      },
    });
    const { agent } = setup(titles);
    const [one, two] = [agent.createSession({ sessionId: 'same' }), agent.createSession({ sessionId: 'same' })];
    await Promise.all([agent.run('first tab', { session: one }), agent.run('second tab', { session: two })]);
    give();
    await agent.flush({ session: 'same' });
    expect(titles.calls).toHaveLength(1);
    expect([one.metadata.title, two.metadata.title]).toEqual(['Shared title', 'Shared title']);
  });

  it('does not hold back the updates of a streaming run', async () => {
    const title = deferred<string>();
    const titles = new ScriptedChatClient({ replies: () => title.promise });
    const { agent } = setup(titles, { reply: { text: 'A streamed answer of several chunks.' } });
    const session = agent.createSession();
    // Every update and the response arrive while the title model has not answered.
    const stream = agent.runStream('hello', { session });
    let updates = 0;
    for await (const _ of stream) updates++;
    const response = await stream.response;
    expect(response.text).toBe('A streamed answer of several chunks.');
    expect(updates).toBeGreaterThan(5);
    expect(titles.calls).toHaveLength(1);
    expect(title.settled).toBe(false);
    expect(session.metadata.title).toBeUndefined();
    title.resolve('Streamed');
    await agent.flush();
    expect(session.metadata.title).toBe('Streamed');
  });

  it('reports a failed title as a diagnostic, never a failed run, and the next run tries again from the first message in the history', async () => {
    const titles = new ScriptedChatClient({ replies: [{ error: new Error('title model down') }, 'Lisbon weekend'] });
    const { agent, diagnostics } = setup(titles);
    const session = agent.createSession();
    expect(await agent.run('Plan a weekend in Lisbon', { session })).toMatchObject({ text: 'Sure.' });
    await agent.flush();
    expect(diagnostics()).toEqual(['title-failed']);
    expect(session.metadata.title).toBeUndefined();

    await agent.run('For two people', { session });
    await agent.flush();
    expect(Message.text(titles.calls[1]!.messages[0]!)).toBe('Plan a weekend in Lisbon');
    expect(session.metadata.title).toBe('Lisbon weekend');
  });

  it('abandons a title request that overruns its timeoutMs, with a diagnostic', async () => {
    const titles = new ScriptedChatClient({ replies: [{ text: 'Too late', delayMs: 2_000 }] });
    const { agent, diagnostics } = setup(titles, { timeoutMs: 40 });
    const session = agent.createSession();
    await agent.run('hello', { session });
    await agent.flush();
    // The request was abandoned at its deadline (its signal aborted), not answered after 2 s.
    expect(titles.calls[0]!.options.signal?.aborted).toBe(true);
    expect(diagnostics()).toEqual(['title-failed']);
    expect(session.metadata.title).toBeUndefined();
  });

  it('reports an empty answer and keeps the session untitled', async () => {
    const titles = new ScriptedChatClient({ replies: ['  ""  '] });
    const { agent, diagnostics } = setup(titles);
    const session = agent.createSession();
    await agent.run('hello', { session });
    await agent.flush();
    expect(diagnostics()).toEqual(['title-empty']);
    expect(session.metadata.title).toBeUndefined();
  });

  it('keeps a title the app set while the request was in flight', async () => {
    const titles = new ScriptedChatClient({ replies: [{ text: 'Model title', delayMs: 50 }] });
    const { agent } = setup(titles);
    const session = agent.createSession();
    await agent.run('hello', { session });
    session.metadata.title = 'Chosen by the user';
    await agent.flush();
    expect(session.metadata.title).toBe('Chosen by the user');
  });

  it("agent.flush({ session }) waits for that session's title only, not another session's still in flight", async () => {
    let releaseSlow!: () => void;
    const slowGate = new Promise<void>((resolve) => {
      releaseSlow = resolve;
    });
    const titles = new ScriptedChatClient({
      replies: async (messages) => {
        if (Message.text(messages[0]!) === 'slow one') await slowGate;
        return `Title of ${Message.text(messages[0]!)}`;
      },
    });
    const { agent } = setup(titles);
    const slow = agent.createSession();
    const quick = agent.createSession();
    await agent.run('slow one', { session: slow });
    await agent.run('quick one', { session: quick });
    await agent.flush({ session: quick });
    expect(quick.metadata.title).toBe('Title of quick one');
    expect(slow.metadata.title).toBeUndefined();
    let flushedSlow = false;
    const waiting = agent.flush({ session: slow.sessionId }).then(() => {
      flushedSlow = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(flushedSlow, 'the slow title is still in flight').toBe(false);
    releaseSlow();
    await waiting;
    expect(slow.metadata.title).toBe('Title of slow one');
  });

  it('flush stops waiting when its signal aborts', async () => {
    const titles = new ScriptedChatClient({ replies: [{ text: 'Later', delayMs: 500 }] });
    const { agent, provider } = setup(titles);
    await agent.run('hello', { session: agent.createSession() });
    await expect(provider.flush({ signal: AbortSignal.abort(new Error('shutting down')) })).rejects.toThrow('shutting down');
    await provider.flush();
  });

  it('refuses a missing client and invalid options', () => {
    const client = new ScriptedChatClient({ replies: [] });
    expect(() => new TitleProvider({} as never)).toThrow(/needs a `client`/);
    expect(() => new TitleProvider({ client, maxChars: 0 })).toThrow(ConfigurationError);
    expect(() => new TitleProvider({ client, maxChars: 201 })).toThrow(/at most 200/);
    expect(() => new TitleProvider({ client, timeoutMs: -1 })).toThrow(ConfigurationError);
    expect(() => new TitleProvider({ client, sourceId: ' ' })).toThrow(ConfigurationError);
  });
});

describe('cleanTitle', () => {
  it.each([
    ['"Trip to Lisbon."', 'Trip to Lisbon'],
    ['Title: “Budget review”', 'Budget review'],
    ['# Quarterly plan\n\nMore text the model added', 'Quarterly plan'],
    ['\n\n  **Bold   title**  ', 'Bold title'],
    ['', ''],
  ])('%j becomes %j', (answer, title) => {
    expect(cleanTitle(answer, 60)).toBe(title);
  });

  it('cuts to maxChars at a word when that keeps more than half, and never inside a surrogate pair', () => {
    expect(cleanTitle('Planning a long weekend in Lisbon with friends', 20)).toBe('Planning a long');
    expect(cleanTitle('Supercalifragilistic expialidocious', 10)).toBe('Supercalif');
    expect(cleanTitle('abcdefghi😀xyz', 10)).toBe('abcdefghi');
  });
});

/** A promise settled by hand, and whether it has been. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  const handle = {
    promise,
    settled: false,
    resolve: (value: T) => {
      handle.settled = true;
      resolve(value);
    },
  };
  return handle;
}
