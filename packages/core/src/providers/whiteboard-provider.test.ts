import { describe, expect, it } from 'vitest';
import { SessionStateError } from '../errors.js';
import { Message } from '../messages/message.js';
import { createAgent } from '../run/create-agent.js';
import { InMemorySessionStore } from '../session/in-memory-session-store.js';
import type { ChatOptions } from '../contracts/chat-client.js';
import type { AgentEvent } from '../contracts/events.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { createCharacterTokenizer } from '../tokens/character-tokenizer.js';
import { WhiteboardProvider, type WhiteboardUpdate, whiteboardUpdateSchema } from './whiteboard-provider.js';

const none: WhiteboardUpdate = { add: [], update: [], remove: [] };
const json = (u: Partial<WhiteboardUpdate>) => JSON.stringify({ ...none, ...u });
const capsuleOf = (messages: readonly Message[]) => messages.filter((m) => Message.source(m)?.sourceId === 'whiteboard').map(Message.text);

describe('WhiteboardProvider', () => {
  it('keeps a decision made in turn 2 through turn 10, across session JSON round trips', async () => {
    // The update model: turn 1 records a requirement, turn 2 a decision, later turns only small actions.
    const updates: Record<number, Partial<WhiteboardUpdate>> = {
      0: {
        add: [
          { kind: 'requirement', text: 'Trip to Paris for 2 people' },
          { kind: 'proposal', text: 'Fly on Friday' },
        ],
      },
      1: { add: [{ kind: 'decision', text: 'Take the train on Friday' }], remove: ['p2'] },
    };
    const boardClient = new ScriptedChatClient({
      replies: (_m, _o, i) => json(updates[i] ?? (i % 2 ? {} : { add: [{ kind: 'action', text: `Check item ${i}` }] })),
    });
    const whiteboard = new WhiteboardProvider({ client: boardClient });
    const client = new ScriptedChatClient({ replies: () => 'Sure.' });
    const agent = createAgent({ client, contextProviders: [whiteboard] });
    let session = agent.createSession();
    for (let turn = 1; turn <= 10; turn++) {
      await agent.run(turn === 2 ? "Let's take the train on Friday instead." : `Message ${turn}`, { session });
      session = agent.restoreSession(JSON.stringify(session));
    }
    expect(boardClient.calls).toHaveLength(10);
    expect(client.calls).toHaveLength(10);
    // No board before the first run; from turn 3 on the capsule carries the decision.
    expect(capsuleOf(client.calls[0]!.messages)).toEqual([]);
    for (let i = 2; i < 10; i++) expect(capsuleOf(client.calls[i]!.messages)[0]).toContain('Decisions:\n- Take the train on Friday');
    const last = capsuleOf(client.calls[9]!.messages)[0]!;
    expect(last).toContain('Requirements:\n- Trip to Paris for 2 people');
    expect(last).not.toContain('Fly on Friday'); // the proposal was removed when decided
    // One capsule, attributed, as a system context message placed before the input.
    const tenth = client.calls[9]!.messages;
    expect(tenth.map((m) => Message.source(m)?.sourceId)).toEqual([...Array(18).fill('memory'), 'whiteboard', 'input']);
    expect(tenth.at(-2)!.role).toBe('system');
    expect(whiteboard.entriesOf(session).map((e) => [e.id, e.kind, e.text])).toContainEqual(['d3', 'decision', 'Take the train on Friday']);
  });

  it('sends the update model only the newest turn and the current board, asking for JSON', async () => {
    const boardClient = new ScriptedChatClient({ replies: [json({ add: [{ kind: 'requirement', text: 'Vegetarian food' }] }), json({})] });
    const client = new ScriptedChatClient({ replies: ['Noted, vegetarian.', 'Booked for 8pm.'] });
    const agent = createAgent({ client, contextProviders: [new WhiteboardProvider({ client: boardClient })] });
    const session = agent.createSession();
    await agent.run('I only eat vegetarian food.', { session });
    await agent.run('Book a table for 8pm.', { session });
    const second = boardClient.calls[1]!;
    expect(second.messages).toHaveLength(1);
    const prompt = Message.text(second.messages[0]!);
    expect(prompt).toContain('{"id":"r1","kind":"requirement","text":"Vegetarian food"}');
    expect(prompt).toContain('User: Book a table for 8pm.\nAssistant: Booked for 8pm.');
    expect(prompt).not.toContain('I only eat vegetarian food'); // the earlier turn is not resent
    const options: ChatOptions = second.options;
    expect(options.responseFormat).toEqual({ type: 'json', schema: whiteboardUpdateSchema, name: 'whiteboard_update' });
    expect(options.store).toBe(false);
    expect(options.instructions).toContain('whiteboard');
  });

  it('keeps the old board when the model returns invalid JSON, and says so with provider-skipped', async () => {
    const boardClient = new ScriptedChatClient({
      replies: [
        json({ add: [{ kind: 'decision', text: 'Use Postgres' }] }),
        'Sure! Here is the board: {oops',
        json({ add: [{ kind: 'wish', text: 'x' }] as never }),
      ],
    });
    const events: AgentEvent[] = [];
    const client = new ScriptedChatClient({ replies: () => 'ok' });
    const whiteboard = new WhiteboardProvider({ client: boardClient });
    const agent = createAgent({ client, contextProviders: [whiteboard], onEvent: (e) => events.push(e) });
    const session = agent.createSession();
    await agent.run('We go with Postgres.', { session });
    const before = JSON.stringify(session.state.whiteboard);
    expect((await agent.run('ok', { session })).text).toBe('ok'); // the run itself succeeds
    expect((await agent.run('ok', { session })).text).toBe('ok');
    expect(JSON.stringify(session.state.whiteboard)).toBe(before);
    const skipped = events.filter((e) => e.type === 'provider-skipped');
    expect(skipped.map((e) => (e as { phase: string }).phase)).toEqual(['afterRun', 'afterRun']);
    expect(String((skipped[0] as { error: Error }).error.message)).toMatch(/not valid JSON.*left as it was/);
    expect(String((skipped[1] as { error: Error }).error.message)).toContain('add[0]');
    expect(capsuleOf(client.calls[2]!.messages)[0]).toContain('Use Postgres');
  });

  it('accepts a fenced JSON answer, refreshes a duplicate instead of adding it, and applies updates', async () => {
    let now = 0;
    const boardClient = new ScriptedChatClient({
      replies: [
        `\`\`\`json\n${json({ add: [{ kind: 'action', text: 'Send the invoice' }] })}\n\`\`\``,
        json({ add: [{ kind: 'action', text: 'send the  invoice' }] }),
        json({ update: [{ id: 'a1', text: 'Send the invoice by Monday' }] }),
      ],
    });
    const whiteboard = new WhiteboardProvider({ client: boardClient, now: () => now });
    const agent = createAgent({ client: new ScriptedChatClient({ replies: () => 'ok' }), contextProviders: [whiteboard] });
    const session = agent.createSession();
    await agent.run('a', { session });
    now = 50;
    await agent.run('b', { session });
    expect(whiteboard.entriesOf(session)).toEqual([{ id: 'a1', kind: 'action', text: 'Send the invoice', addedAt: 50 }]);
    await agent.run('c', { session });
    expect(whiteboard.entriesOf(session).map((e) => e.text)).toEqual(['Send the invoice by Monday']);
  });

  it('expires entries by TTL on an injected clock', async () => {
    let now = 0;
    const HOUR = 3_600_000;
    const boardClient = new ScriptedChatClient({
      replies: [
        json({ add: [{ kind: 'requirement', text: 'Window seat' }] }),
        json({ add: [{ kind: 'decision', text: 'Aisle is fine after all' }] }),
        json({}),
      ],
    });
    const whiteboard = new WhiteboardProvider({ client: boardClient, decay: { ttlMs: 2 * HOUR }, now: () => now });
    const client = new ScriptedChatClient({ replies: () => 'ok' });
    const agent = createAgent({ client, contextProviders: [whiteboard] });
    const session = agent.createSession();
    await agent.run('1', { session });
    now += HOUR;
    await agent.run('2', { session });
    expect(capsuleOf(client.calls[1]!.messages)[0]).toContain('Window seat');
    now += HOUR + 1; // the requirement is now older than 2 hours, the decision 1 hour
    await agent.run('3', { session });
    expect(capsuleOf(client.calls[2]!.messages)[0]).not.toContain('Window seat');
    expect(capsuleOf(client.calls[2]!.messages)[0]).toContain('Aisle is fine after all');
    expect(whiteboard.entriesOf(session).map((e) => e.id)).toEqual(['d2']);
    expect((session.state.whiteboard!.entries as unknown[]).length).toBe(1); // pruned from state too
  });

  it('keeps at most maxEntries, dropping the oldest', async () => {
    let now = 0;
    const boardClient = new ScriptedChatClient({ replies: (_m, _o, i) => json({ add: [{ kind: 'action', text: `task ${i}` }] }) });
    const whiteboard = new WhiteboardProvider({ client: boardClient, decay: { maxEntries: 3 }, now: () => ++now });
    const agent = createAgent({ client: new ScriptedChatClient({ replies: () => 'ok' }), contextProviders: [whiteboard] });
    const session = agent.createSession();
    for (let i = 0; i < 5; i++) await agent.run(`turn ${i}`, { session });
    expect(whiteboard.entriesOf(session).map((e) => e.text)).toEqual(['task 2', 'task 3', 'task 4']);
  });

  it('fits the capsule to its budget by exact count, dropping proposals before decisions', async () => {
    const tokenizer = createCharacterTokenizer();
    const boardClient = new ScriptedChatClient({
      replies: [
        json({
          add: [
            { kind: 'proposal', text: 'Maybe a blue logo' },
            { kind: 'decision', text: 'Launch on 1 March' },
            { kind: 'proposal', text: 'Maybe a podcast' },
          ],
        }),
        json({}),
      ],
    });
    // Budget: the size of a capsule with only the decision and one proposal.
    const probe = new ScriptedChatClient({ replies: () => 'ok' });
    const probeBoard = new ScriptedChatClient({
      replies: [
        json({
          add: [
            { kind: 'decision', text: 'Launch on 1 March' },
            { kind: 'proposal', text: 'Maybe a podcast' },
          ],
        }),
        json({}),
      ],
    });
    const probeAgent = createAgent({ client: probe, contextProviders: [new WhiteboardProvider({ client: probeBoard })] });
    const ps = probeAgent.createSession();
    await probeAgent.run('a', { session: ps });
    await probeAgent.run('b', { session: ps });
    const maxTokens = tokenizer.countMessageTokens(probe.calls[1]!.messages.filter((m) => Message.source(m)?.sourceId === 'whiteboard'));

    const client = new ScriptedChatClient({ replies: () => 'ok' });
    let now = 0;
    const agent = createAgent({
      client,
      contextProviders: [new WhiteboardProvider({ client: boardClient, budget: { maxTokens, tokenizer }, now: () => now++ })],
    });
    const session = agent.createSession();
    await agent.run('a', { session });
    await agent.run('b', { session });
    const injected = client.calls[1]!.messages.filter((m) => Message.source(m)?.sourceId === 'whiteboard');
    expect(tokenizer.countMessageTokens(injected)).toBeLessThanOrEqual(maxTokens);
    const text = Message.text(injected[0]!);
    expect(text).toContain('Launch on 1 March');
    expect(text).toContain('Maybe a podcast'); // the newer proposal
    expect(text).not.toContain('blue logo'); // the older proposal went first
  });

  it('can inject as instructions, and is gated by when (no capsule, no update)', async () => {
    const boardClient = new ScriptedChatClient({ replies: () => json({ add: [{ kind: 'requirement', text: 'Answer in French' }] }) });
    const client = new ScriptedChatClient({ replies: () => 'ok' });
    const whiteboard = new WhiteboardProvider({
      client: boardClient,
      inject: 'instructions',
      when: (context) => !Message.text(context.inputMessages[0]!).startsWith('/'),
    });
    const agent = createAgent({ client, instructions: 'You help.', contextProviders: [whiteboard] });
    const session = agent.createSession();
    await agent.run('Réponds en français', { session });
    await agent.run('/debug', { session });
    await agent.run('Bonjour', { session });
    expect(boardClient.calls).toHaveLength(2); // not for the gated run
    expect(client.calls[1]!.options.instructions).toBe('You help.');
    expect(client.calls[2]!.options.instructions).toMatch(/^You help\.\n\nWhiteboard[\s\S]*Answer in French$/);
  });

  it('uses the agent client by default and stores nothing for a failed run', async () => {
    const client = new ScriptedChatClient({
      replies: ['first answer', json({ add: [{ kind: 'decision', text: 'Go' }] }), { error: new Error('model down') }],
    });
    const whiteboard = new WhiteboardProvider();
    const agent = createAgent({ client, contextProviders: [whiteboard] });
    const session = agent.createSession();
    await agent.run('hi', { session });
    expect(client.calls[1]!.options.responseFormat?.type).toBe('json');
    await expect(agent.run('again', { session })).rejects.toThrow('model down');
    expect(client.calls).toHaveLength(3); // no update call after the failed run
    expect(whiteboard.entriesOf(session).map((e) => e.text)).toEqual(['Go']);
  });

  it('two turns saved at once on one session merge their boards: removals, updates and both new entries, ids kept apart', async () => {
    const store = new InMemorySessionStore();
    const boardClient = new ScriptedChatClient({
      replies: (messages) => {
        const prompt = Message.text(messages[0]!);
        if (prompt.includes('seed turn'))
          return json({
            add: [
              { kind: 'requirement', text: 'Trip for 2' },
              { kind: 'proposal', text: 'Fly on Friday' },
            ],
          });
        if (prompt.includes('from a')) return json({ add: [{ kind: 'decision', text: 'Take the train' }], remove: ['p2'] });
        return json({ add: [{ kind: 'decision', text: 'Book the hotel' }], update: [{ id: 'r1', text: 'Trip for 3' }] });
      },
    });
    const make = () =>
      createAgent({
        client: new ScriptedChatClient({ replies: () => 'Sure.' }),
        sessionStore: store,
        contextProviders: [new WhiteboardProvider({ client: boardClient })],
      });
    const [a, b] = [make(), make()];
    await a.run('seed turn', { sessionId: 'trip' });
    const mine = (await a.getSession('trip'))!;
    const theirs = (await b.getSession('trip'))!;
    await a.run('from a', { session: mine });
    await b.run('from b', { session: theirs });
    await b.saveSession(theirs);
    await a.saveSession(mine);
    const board = new WhiteboardProvider({ client: boardClient }).entriesOf((await a.getSession('trip'))!);
    expect(board.map(({ id, kind, text }) => ({ id, kind, text }))).toEqual([
      { id: 'r1', kind: 'requirement', text: 'Trip for 3' },
      { id: 'd3', kind: 'decision', text: 'Book the hotel' },
      { id: 'd4', kind: 'decision', text: 'Take the train' },
    ]);
    expect((await store.get('trip'))!.session.state.whiteboard!.nextId).toBe(4);
    // Both turns of the default history are kept too.
    expect(((await store.get('trip'))!.session.state.memory!.messages as Message[]).map(Message.text)).toEqual([
      'seed turn',
      'Sure.',
      'from b',
      'Sure.',
      'from a',
      'Sure.',
    ]);
  });

  it('rejects malformed state on restore, naming the path', () => {
    const agent = createAgent({ client: new ScriptedChatClient({ replies: [] }), contextProviders: [new WhiteboardProvider()] });
    const bad = {
      type: 'ctx.session',
      version: 1,
      sessionId: 's',
      state: { whiteboard: { entries: [{ value: { id: 'd1', kind: 'wish', text: 'x' }, addedAt: 1 }] } },
    };
    const error = (() => {
      try {
        agent.restoreSession(bad);
      } catch (e) {
        return e;
      }
    })();
    expect(SessionStateError.isInstance(error)).toBe(true);
    expect((error as SessionStateError).path).toBe('$.state.whiteboard.entries[0].value.kind');
  });
});
