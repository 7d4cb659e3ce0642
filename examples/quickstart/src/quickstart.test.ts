import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileSessionStore, Message, SessionStateError, type JsonObject } from '@ctx/core';
import { createInspector } from '@ctx/inspector';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readTodos, readTurns } from './agent.js';
import { runDemo, SESSION_ID, userTurns } from './demo.js';
import { createScriptedModel } from './scripted-model.js';

let directory: string;

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'ctx-quickstart-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

const fromHistory = (messages: readonly Message[]) => messages.filter((m) => Message.source(m)?.sourceType === 'history');

async function storedMessages(): Promise<Message[]> {
  const stored = await new FileSessionStore({ directory }).get(SESSION_ID);
  expect(stored).toBeDefined();
  return (stored!.session.state.memory as JsonObject).messages as unknown as Message[];
}

describe('quickstart demo', () => {
  it('shows its turns in the inspector with --inspect (onEvent), by source, with the text', async () => {
    const inspector = await createInspector({ port: 0, showText: true, log: false });
    try {
      const result = await runDemo({ directory, client: createScriptedModel(), onEvent: inspector.onEvent });
      const state = (await (await fetch(`${inspector.url}api/state`)).json()) as {
        sessions: Array<{ sessionId: string; runIds: string[] }>;
        runs: Record<string, { calls: Array<{ items: Array<{ sourceId: string; text?: string }> }> }>;
      };
      expect(state.sessions.map((s) => [s.sessionId, s.runIds.length])).toEqual([[SESSION_ID, result.turns.length]]);
      const first = state.runs[state.sessions[0]!.runIds[0]!]!.calls[0]!;
      expect(new Set(first.items.map((i) => i.sourceId))).toEqual(new Set(['agent', 'todos', 'profile', 'clock', 'input']));
      expect(first.items.find((i) => i.sourceId === 'input')?.text).toBe(userTurns(0)[0]);
      // The demo's own table still gets every event.
      expect(result.turns[0]!.modelCalls.length).toBe(2);
    } finally {
      await inspector.close();
    }
  });

  it('continues the conversation of the first run in the second', async () => {
    const first = await runDemo({ directory, client: createScriptedModel() });
    expect(first.continued).toBe(false);
    const afterFirst = (await storedMessages()).length;
    expect(readTodos(first.session)).toEqual(['buy sunscreen', 'book a table for Friday']);

    const client = createScriptedModel();
    const second = await runDemo({ directory, client });
    expect(second.continued).toBe(true);

    // The store holds the user turns of both runs, in order, and the todo list and turn count carried over.
    const messages = await storedMessages();
    expect(messages.filter((m) => m.role === 'user').map(Message.text)).toEqual([...userTurns(0), ...userTurns(4)]);
    expect(readTodos(second.session)).toEqual(['buy sunscreen', 'book a table for Friday', 'pack for Reykjavik']);
    expect(readTurns(second.session)).toBe(7);
    expect(second.turns.map((t) => t.turn)).toEqual([5, 6, 7]);

    // The model's first call of the second run carried the first run's whole conversation as history.
    const firstCall = client.calls[0]!;
    expect(fromHistory(firstCall.messages).map((m) => m.id)).toEqual(messages.slice(0, afterFirst).map((m) => m.id));
    expect(second.turns[0]!.added.get('memory')?.messages).toBe(afterFirst);
    expect(second.turns[0]!.modelCalls).toEqual([{ messages: afterFirst + 3, instructions: 2, tools: 2 }]); // history + todo list + the clock (per-run, after the history) + input
    expect(second.turns[0]!.response.text).toContain(`I can see ${afterFirst} earlier messages from 4 turns`);
    expect(second.turns[0]!.response.text).toContain('weather in Lisbon');

    // The list answer comes from the todos provider's context message, which includes the first run's items.
    const listCall = client.calls.at(-1)!;
    expect(listCall.messages.filter((m) => Message.source(m)?.sourceId === 'todos').map(Message.text)).toEqual([
      "The user's todo list:\n1. buy sunscreen\n2. book a table for Friday\n3. pack for Reykjavik",
    ]);
    expect(second.turns[2]!.response.text).toBe('You have 3 todos: 1) buy sunscreen 2) book a table for Friday 3) pack for Reykjavik');
  });

  it('calls both tools in parallel and answers from their results', async () => {
    await runDemo({ directory, client: createScriptedModel() });
    const { turns } = await runDemo({ directory, client: createScriptedModel() });
    const calls = turns[1]!.response.messages.flatMap(Message.functionCalls).map((c) => [c.name, JSON.parse(c.arguments)]);
    expect(calls).toEqual([
      ['get_weather', { city: 'Reykjavik' }],
      ['add_todo', { text: 'pack for Reykjavik' }],
    ]);
    expect(turns[1]!.modelCalls.map((c) => c.messages)).toEqual([
      turns[0]!.modelCalls[0]!.messages + 2,
      turns[0]!.modelCalls[0]!.messages + 4,
    ]);
    expect(turns[1]!.response.text).toBe(
      'Reykjavik: 4 °C, showers, wind 31 km/h. Take an umbrella. Added "pack for Reykjavik", that makes 3 todos.',
    );
  });

  it('uses the profile from the instructions when the user names no city', async () => {
    const client = createScriptedModel();
    const { turns } = await runDemo({ directory, client });
    expect(client.calls[0]!.options.instructions).toContain('name=Ada; home city=Lisbon');
    expect(turns[0]!.added.get('profile')).toEqual({ messages: 0, instructions: 1, tools: 0 });
    expect(turns[0]!.added.get('todos')).toEqual({ messages: 0, instructions: 0, tools: 1 });
    expect(turns[0]!.response.text).toBe('Hi Ada! Lisbon (your home city): 24 °C, sunny, wind 14 km/h. Sunscreen weather.');
  });

  it('prints a table per turn built from the events', async () => {
    await runDemo({ directory, client: createScriptedModel() });
    const lines: string[] = [];
    await runDemo({ directory, client: createScriptedModel(), print: (line) => lines.push(line) });
    expect(lines[1]).toBe('Continuing: 4 turns, 14 stored messages, 2 todos (--reset starts over)');
    const turn5 = lines.indexOf("Turn 5 · you: I'm back! What did we talk about last time?");
    expect(lines.slice(turn5 + 1, turn5 + 5).map((l) => l.replace(/\s+/g, ' ').trim())).toEqual([
      'added by agent memory profile todos clock input │ sent to model',
      'messages · 14 · 1 · 1 │ 17',
      'instructions 1 · 1 · 1 · │ 2',
      'tools 1 · · 1 · · │ 2',
    ]);
    expect(lines).toContain('    tool  add_todo({text:"pack for Reykjavik"}) → {added:"pack for Reykjavik",count:3}');
  });

  it('starts over with reset', async () => {
    await runDemo({ directory, client: createScriptedModel() });
    const client = createScriptedModel();
    const again = await runDemo({ directory, client, reset: true });
    expect(again.continued).toBe(false);
    expect(readTurns(again.session)).toBe(4);
    expect(readTodos(again.session)).toEqual(['buy sunscreen', 'book a table for Friday']);
    expect(fromHistory(client.calls[0]!.messages)).toEqual([]);
  });

  it('reports a corrupt session file, and reset clears it', async () => {
    await runDemo({ directory, client: createScriptedModel() });
    const [file] = (await readdir(directory)).filter((f) => f.endsWith('.json'));
    await writeFile(join(directory, file!), '{not json');
    await expect(runDemo({ directory, client: createScriptedModel() })).rejects.toSatisfy((e) => SessionStateError.isInstance(e));
    const again = await runDemo({ directory, client: createScriptedModel(), reset: true });
    expect(readTurns(again.session)).toBe(4);
  });
});
