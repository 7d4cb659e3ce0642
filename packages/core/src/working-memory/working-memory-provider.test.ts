import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackendUnavailableError, ConcurrencyError, ConfigurationError, InvalidInputError } from '../errors.js';
import { jsonSchemaValidator } from '../json-schema/json-schema-validator.js';
import { Message } from '../messages/message.js';
import { createAgent } from '../run/create-agent.js';
import { InMemorySessionStore } from '../session/in-memory-session-store.js';
import type { AgentEvent } from '../contracts/events.js';
import type { JsonObject, JsonValue } from '../contracts/json.js';
import type { FunctionResultContent } from '../contracts/message.js';
import type { PutWorkingMemoryOptions, WorkingMemoryKey } from '../contracts/working-memory-store.js';
import { ScriptedChatClient, type ScriptedReply } from '../testing/scripted-chat-client.js';
import { InMemoryWorkingMemoryStore } from './in-memory-working-memory-store.js';
import { WORKING_MEMORY_TOOL, WorkingMemoryProvider } from './working-memory-provider.js';

const profile = z.object({
  name: z.string().optional(),
  city: z.string().optional(),
  prefs: z.object({ diet: z.string().optional(), languages: z.array(z.string()).optional() }).optional(),
  age: z.number().int().min(0).optional(),
});

const call = (update: JsonValue): ScriptedReply => ({
  toolCalls: [{ name: WORKING_MEMORY_TOOL, arguments: { update } as Record<string, JsonValue> }],
});
const resultsOf = (response: { messages: readonly Message[] }): FunctionResultContent[] =>
  response.messages.flatMap((m) => m.contents.filter((c): c is FunctionResultContent => c.type === 'function-result'));

describe('WorkingMemoryProvider (tool mode)', () => {
  it('merges the model’s updates into the user’s record and shows it in the next conversation as stable instructions', async () => {
    const store = new InMemoryWorkingMemoryStore();
    const memory = new WorkingMemoryProvider({ schema: profile, store });
    const client = new ScriptedChatClient({
      replies: [
        call({ name: 'Ada', prefs: { diet: 'vegetarian', languages: ['en', 'fr'] } }),
        'Noted.',
        call({ city: 'Lyon', prefs: { languages: ['de'] }, name: null }),
        'Noted too.',
        'Hello again.',
        'Hello.',
      ],
    });
    const agent = createAgent({ client, contextProviders: [memory] });
    await agent.run('I am Ada, vegetarian, I speak English and French.', { session: agent.createSession({ userId: 'u1' }) });
    await agent.run('I moved to Lyon; I only speak German now; forget my name.', { session: agent.createSession({ userId: 'u1' }) });
    // Objects merged at depth, arrays replaced, null removed the key.
    expect((await store.get({ userId: 'u1' }))!.record).toEqual({ prefs: { diet: 'vegetarian', languages: ['de'] }, city: 'Lyon' });
    await agent.run('Hi!', { session: agent.createSession({ userId: 'u1' }) });
    const last = client.calls.at(-1)!;
    expect(last.options.instructions).toContain('"city": "Lyon"');
    expect(last.options.instructions).toContain('"languages": [\n      "de"\n    ]');
    // The tool is offered, with the record's schema made partial (nothing required, null allowed).
    const tool = last.options.tools!.find((t) => t.name === WORKING_MEMORY_TOOL)!;
    expect(tool.metadata).toMatchObject({ ctx: { sourceId: 'working-memory' } });
    expect((tool.parameters.properties as JsonObject).update).toMatchObject({
      type: 'object',
      properties: { city: { anyOf: [{ type: 'string' }, { type: 'null' }] } },
    });
    // No record of another user leaks in.
    await agent.run('Hi!', { session: agent.createSession({ userId: 'u2' }) });
    expect(client.calls.at(-1)!.options.instructions).toContain('<working_memory>\n{}\n</working_memory>');
  });

  it('sends byte-identical instructions while the record is unchanged, and new ones once it changes', async () => {
    const store = new InMemoryWorkingMemoryStore();
    await store.put({ userId: 'u1' }, { name: 'Ada', prefs: { diet: 'vegan' } });
    const client = new ScriptedChatClient({ replies: ['a', 'b', 'c', call({ city: 'Oslo' }), 'd', 'e'] });
    const agent = createAgent({
      client,
      instructions: 'You are helpful.',
      contextProviders: [new WorkingMemoryProvider({ schema: profile, store })],
    });
    const session = agent.createSession({ userId: 'u1' });
    for (const input of ['one', 'two', 'three']) await agent.run(input, { session });
    const [first, second, third] = client.calls.map((c) => c.options.instructions);
    expect(first).toContain('"name": "Ada"');
    expect(second).toBe(first);
    expect(third).toBe(first);
    // The memory is part of the stable instructions, after the agent's own, and not a per-run message.
    expect(first!.startsWith('You are helpful.')).toBe(true);
    expect(client.calls[2]!.messages.some((m) => Message.text(m).includes('working_memory'))).toBe(false);
    await agent.run('I live in Oslo.', { session }); // updates (calls 4 and 5)
    await agent.run('four', { session });
    const changed = client.calls.at(-1)!.options.instructions!;
    expect(changed).not.toBe(first);
    expect(changed).toContain('"city": "Oslo"');
  });

  it('answers an update the schema refuses with an error result naming what is wrong, and keeps the record', async () => {
    const store = new InMemoryWorkingMemoryStore();
    await store.put({ userId: 'u1' }, { name: 'Ada' });
    const client = new ScriptedChatClient({ replies: [call({ age: -3, prefs: { languages: 'en' } }), 'Sorry.'] });
    const agent = createAgent({ client, contextProviders: [new WorkingMemoryProvider({ schema: profile, store })] });
    const response = await agent.run('I am -3 years old.', { session: agent.createSession({ userId: 'u1' }) });
    const [result] = resultsOf(response);
    expect(result!.isError).toBe(true);
    const text = JSON.stringify(result!.result);
    expect(text).toContain('was not changed');
    expect(text).toMatch(/age: [^;]*>=0/);
    expect(text).toContain('prefs.languages: Invalid input: expected array');
    expect((await store.get({ userId: 'u1' }))!.record).toEqual({ name: 'Ada' });
  });

  it('refuses a record over maxBytes: an error result naming the limit, and InvalidInputError from update()', async () => {
    const store = new InMemoryWorkingMemoryStore();
    const memory = new WorkingMemoryProvider({ schema: profile, store, maxBytes: 64 });
    const client = new ScriptedChatClient({ replies: [call({ name: 'x'.repeat(100) }), 'Too long.'] });
    const agent = createAgent({ client, contextProviders: [memory] });
    const [result] = resultsOf(await agent.run('My name is very long.', { session: agent.createSession({ userId: 'u1' }) }));
    expect(result!.isError).toBe(true);
    expect(JSON.stringify(result!.result)).toContain('over the limit of maxBytes (64 bytes of JSON');
    expect(await store.get({ userId: 'u1' })).toBeUndefined();
    const error = await memory.update({ userId: 'u1' }, { city: 'y'.repeat(60) }).catch((e: unknown) => e);
    expect(InvalidInputError.isInstance(error)).toBe(true);
    expect((error as InvalidInputError).limit).toBe('maxBytes');
    expect((error as Error).message).toContain('user "u1"');
    // Within the limit it is written.
    const written = await memory.update({ userId: 'u1' }, { city: 'Lyon' });
    expect((await store.get({ userId: 'u1' }))!.record).toEqual({ city: 'Lyon' });
    // An update that changes nothing writes nothing: the etag (and so the prompt) stays.
    expect(await memory.update({ userId: 'u1' }, { city: 'Lyon' })).toEqual({ ...written, changed: false });
    expect((await store.get({ userId: 'u1' }))!.etag).toBe(written.etag);
  });

  it('two runs updating one user at once: one write conflicts, re-reads and merges, and nothing is lost', async () => {
    const inner = new InMemoryWorkingMemoryStore();
    await inner.put({ userId: 'u1' }, { name: 'Ada' });
    // Both runs read the record before either writes: the first four reads (each run's beforeRun,
    // then each tool's) are held in pairs, each read released once the other run's has arrived.
    const waiting: Array<() => void> = [];
    let held = 0;
    const puts: Array<string | null | undefined> = [];
    const conflicts: unknown[] = [];
    const store = Object.assign(Object.create(inner) as InMemoryWorkingMemoryStore, {
      get: async (key: WorkingMemoryKey) => {
        if (held < 4) {
          held++;
          await new Promise<void>((resolve) => {
            waiting.push(resolve);
            if (waiting.length === 2) for (const release of waiting.splice(0)) release();
          });
        }
        return inner.get(key);
      },
      put: async (key: WorkingMemoryKey, record: JsonValue, options?: PutWorkingMemoryOptions) => {
        puts.push(options?.ifMatch);
        return inner.put(key, record, options).catch((error: unknown) => {
          conflicts.push(error);
          throw error;
        });
      },
    });
    const memory = new WorkingMemoryProvider({ schema: profile, store });
    const replies = (update: JsonObject) => new ScriptedChatClient({ replies: [call(update), 'Done.'] });
    const a = createAgent({ client: replies({ city: 'Lyon' }), contextProviders: [memory] });
    const b = createAgent({ client: replies({ prefs: { diet: 'vegan' } }), contextProviders: [memory] });
    const [ra, rb] = await Promise.all([
      a.run('I live in Lyon.', { session: a.createSession({ userId: 'u1' }) }),
      b.run('I am vegan.', { session: b.createSession({ userId: 'u1' }) }),
    ]);
    expect(resultsOf(ra)[0]!.isError).toBeFalsy();
    expect(resultsOf(rb)[0]!.isError).toBeFalsy();
    expect(held).toBe(4);
    expect((await inner.get({ userId: 'u1' }))!.record).toEqual({ name: 'Ada', city: 'Lyon', prefs: { diet: 'vegan' } });
    // Every write was conditional, and exactly one met the other and was retried.
    expect(puts).toHaveLength(3);
    expect(puts.every((p) => typeof p === 'string')).toBe(true);
    expect(conflicts).toHaveLength(1);
    expect(ConcurrencyError.isInstance(conflicts[0])).toBe(true);
  });

  it('thirty updates of one record at once all land: writers that met spread out (update() directly)', async () => {
    const store = new InMemoryWorkingMemoryStore();
    const memory = new WorkingMemoryProvider({ schema: z.record(z.string(), z.string()), store });
    const key = { userId: 'u9' };
    const fields = Array.from({ length: 30 }, (_, i) => `field${i}`);
    await Promise.all(fields.map((field) => memory.update(key, { [field]: field })));
    const record = (await store.get(key))!.record as JsonObject;
    expect(Object.keys(record).sort()).toEqual([...fields].sort());
  });

  it('with a template, the tool replaces the markdown, which starts as the template', async () => {
    const store = new InMemoryWorkingMemoryStore();
    const template = '# User\n- Name:\n- Goals:\n';
    const client = new ScriptedChatClient({
      replies: [
        'Hi.',
        { toolCalls: [{ name: WORKING_MEMORY_TOOL, arguments: { memory: '# User\n- Name: Ada\n- Goals: run a marathon\n' } }] },
        'Good luck.',
        'Welcome back.',
        'Hello.',
      ],
    });
    const agent = createAgent({ client, contextProviders: [new WorkingMemoryProvider({ template, store, scope: 'session' })] });
    const session = agent.createSession({ userId: 'u1' });
    await agent.run('Hello', { session });
    expect(client.calls[0]!.options.instructions).toContain(`<working_memory>\n${template}\n</working_memory>`);
    expect(await store.get({ userId: 'u1', sessionId: session.sessionId })).toBeUndefined();
    await agent.run('I am Ada and I want to run a marathon.', { session });
    await agent.run('Hi', { session });
    expect(client.calls.at(-1)!.options.instructions).toContain('- Goals: run a marathon');
    // Session scope: another session of the same user starts from the template.
    await agent.run('Hi', { session: agent.createSession({ userId: 'u1' }) });
    expect(client.calls.at(-1)!.options.instructions).toContain(`<working_memory>\n${template}\n</working_memory>`);
    const object = await new WorkingMemoryProvider({ template, store }).update({ userId: 'u1' }, { x: 1 }).catch((e: unknown) => e);
    expect(InvalidInputError.isInstance(object)).toBe(true);
  });

  it('checks records against a plain JSON Schema with jsonSchemaValidator', async () => {
    const schema: JsonObject = {
      type: 'object',
      additionalProperties: false,
      properties: {
        timezone: { type: 'string', pattern: '^[A-Za-z_]+/[A-Za-z_]+$' },
        projects: { type: 'array', items: { type: 'string' } },
      },
    };
    expect(() => new WorkingMemoryProvider({ schema, store: new InMemoryWorkingMemoryStore() })).toThrow(/needs a `validator`/);
    const store = new InMemoryWorkingMemoryStore();
    const memory = new WorkingMemoryProvider({ schema, validator: jsonSchemaValidator(), store });
    await memory.update({ userId: 'u1' }, { timezone: 'Europe/Paris', projects: ['ctx'] });
    const refused = await memory.update({ userId: 'u1' }, { timezone: 'Paris', colour: 'red' }).catch((e: unknown) => e);
    expect(InvalidInputError.isInstance(refused)).toBe(true);
    expect((refused as Error).message).toMatch(/timezone: .*pattern/);
    expect((await store.get({ userId: 'u1' }))!.record).toEqual({ timezone: 'Europe/Paris', projects: ['ctx'] });
  });

  it('leaves a session without a user out, with a diagnostic, in user scope', async () => {
    const events: AgentEvent[] = [];
    const client = new ScriptedChatClient({ replies: ['Hi.'] });
    const agent = createAgent({
      client,
      contextProviders: [new WorkingMemoryProvider({ schema: profile, store: new InMemoryWorkingMemoryStore() })],
      onEvent: (e) => events.push(e),
    });
    await agent.run('Hello', { session: agent.createSession() });
    expect(client.calls[0]!.options.instructions).toBeUndefined();
    expect(client.calls[0]!.options.tools ?? []).toEqual([]);
    expect(events.some((e) => e.type === 'provider-diagnostic' && e.code === 'working-memory-no-user')).toBe(true);
  });

  it('a store that fails leaves the memory out of the run (onError skip), or fails the run with onError throw', async () => {
    const failing = Object.assign(new InMemoryWorkingMemoryStore(), {
      get: async () => {
        throw new BackendUnavailableError('test', 'the store is down');
      },
    });
    const events: AgentEvent[] = [];
    const client = new ScriptedChatClient({ replies: ['Hi.'] });
    const agent = createAgent({
      client,
      contextProviders: [new WorkingMemoryProvider({ schema: profile, store: failing })],
      onEvent: (e) => events.push(e),
    });
    expect((await agent.run('Hello', { session: agent.createSession({ userId: 'u1' }) })).text).toBe('Hi.');
    expect(client.calls[0]!.options.instructions).toBeUndefined();
    expect(client.calls[0]!.options.tools ?? []).toEqual([]);
    expect(events.some((e) => e.type === 'provider-skipped' && e.phase === 'beforeRun')).toBe(true);
    const strict = createAgent({
      client: new ScriptedChatClient({ replies: ['Hi.'] }),
      contextProviders: [new WorkingMemoryProvider({ schema: profile, store: failing, onError: 'throw' })],
    });
    await expect(strict.run('Hello', { session: strict.createSession({ userId: 'u1' }) })).rejects.toThrow(/the store is down/);
  });

  it('stores what the agent’s redact leaves of the change, from the tool and from the background client', async () => {
    const mask = (messages: readonly Message[]) =>
      messages.map((m) => ({
        ...m,
        contents: m.contents.map((c) => (c.type === 'text' ? { ...c, text: c.text.replace(/\S+@\S+/g, '[email]') } : c)),
      }));
    const store = new InMemoryWorkingMemoryStore();
    const client = new ScriptedChatClient({
      replies: [call({ name: 'Ada ada@example.com', prefs: { languages: ['en', 'me@x.org'] } }), 'Noted.'],
    });
    const agent = createAgent({ client, redact: mask, contextProviders: [new WorkingMemoryProvider({ schema: profile, store })] });
    const [result] = resultsOf(await agent.run('Mail me at ada@example.com', { session: agent.createSession({ userId: 'u1' }) }));
    expect(JSON.stringify(result!.result)).not.toContain('example.com');
    expect((await store.get({ userId: 'u1' }))!.record).toEqual({ name: 'Ada [email]', prefs: { languages: ['en', '[email]'] } });

    const cheap = new ScriptedChatClient({ replies: [JSON.stringify({ memory: '# Contact\n- ada@example.com' })] });
    const background = createAgent({
      client: new ScriptedChatClient({ replies: ['ok'] }),
      redact: mask,
      contextProviders: [
        new WorkingMemoryProvider({ template: '# Contact\n', store, scope: 'session', mode: 'background', client: cheap }),
      ],
    });
    const session = background.createSession({ userId: 'u1' });
    await background.run('Mail me at ada@example.com', { session });
    expect((await store.get({ userId: 'u1', sessionId: session.sessionId }))!.record).toBe('# Contact\n- [email]');
  });

  it('refuses invalid options', () => {
    const store = new InMemoryWorkingMemoryStore();
    expect(() => new WorkingMemoryProvider({ store })).toThrow(ConfigurationError);
    expect(() => new WorkingMemoryProvider({ schema: profile, template: '# x', store })).toThrow(/exactly one of/);
    expect(() => new WorkingMemoryProvider({ schema: profile } as never)).toThrow(/needs a `store`/);
    expect(() => new WorkingMemoryProvider({ schema: profile, store, maxBytes: 0 })).toThrow(/maxBytes must be a positive integer/);
    expect(() => new WorkingMemoryProvider({ schema: profile, store, scope: 'team' as never })).toThrow(/scope/);
    expect(() => new WorkingMemoryProvider({ schema: profile, store, client: new ScriptedChatClient({ replies: [] }) })).toThrow(
      /background mode only/,
    );
  });
});

describe('WorkingMemoryProvider (background mode)', () => {
  it('updates the record after each run with the cheap client, sent only the record and the newest turn', async () => {
    const store = new InMemoryWorkingMemoryStore();
    const cheap = new ScriptedChatClient({
      replies: [JSON.stringify({ update: { name: 'Ada', prefs: { diet: 'vegan' } } }), JSON.stringify({ update: {} })],
    });
    const client = new ScriptedChatClient({ replies: ['Hello Ada.', 'Sure.', 'Hi.'] });
    const agent = createAgent({
      client,
      contextProviders: [new WorkingMemoryProvider({ schema: profile, store, mode: 'background', client: cheap })],
    });
    await agent.run('I am Ada and I am vegan.', { session: agent.createSession({ userId: 'u1' }) });
    const etag = (await store.get({ userId: 'u1' }))!.etag;
    await agent.run('What is the weather?', { session: agent.createSession({ userId: 'u1' }) });
    expect((await store.get({ userId: 'u1' }))!.etag).toBe(etag); // an empty update writes nothing
    expect(client.calls[1]!.options.instructions).toContain('"diet": "vegan"');
    expect(client.calls[1]!.options.tools ?? []).toEqual([]); // no tool in background mode
    const prompt = Message.text(cheap.calls[1]!.messages[0]!);
    expect(prompt).toContain('"name": "Ada"');
    expect(prompt).toContain('User: What is the weather?\nAssistant: Sure.');
    expect(prompt).not.toContain('I am Ada'); // the earlier turn is not resent
    expect(cheap.calls[1]!.options).toMatchObject({ store: false, responseFormat: { type: 'json' } });
  });

  it('a failing or invalid background update is a diagnostic: the run succeeds and the record stays', async () => {
    const store = new InMemoryWorkingMemoryStore();
    await store.put({ userId: 'u1' }, { name: 'Ada' });
    const cheap = new ScriptedChatClient({
      replies: ['not json', JSON.stringify({ update: { age: 'old' } }), { error: new Error('service down') }],
    });
    const events: AgentEvent[] = [];
    const client = new ScriptedChatClient({ replies: ['1', '2', '3'] });
    const agent = createAgent({
      client,
      contextProviders: [new WorkingMemoryProvider({ schema: profile, store, mode: 'background', client: cheap })],
      onEvent: (e) => events.push(e),
    });
    for (const input of ['a', 'b', 'c']) {
      const response = await agent.run(input, { session: agent.createSession({ userId: 'u1' }) });
      expect(Message.text(response.messages.at(-1)!)).toBeTruthy();
    }
    const skipped = events.filter((e) => e.type === 'provider-skipped');
    expect(skipped.map((e) => e.type === 'provider-skipped' && e.phase)).toEqual(['afterRun', 'afterRun', 'afterRun']);
    const reasons = skipped.map((e) => (e.type === 'provider-skipped' ? String((e.error as Error).message) : ''));
    expect(reasons[0]).toContain('is not valid JSON');
    expect(reasons[1]).toContain('age:');
    expect(reasons[2]).toContain('service down');
    expect((await store.get({ userId: 'u1' }))!.record).toEqual({ name: 'Ada' });
  });

  it('a background update that does not answer is bounded by the provider’s timeout; the run still succeeds', async () => {
    const store = new InMemoryWorkingMemoryStore();
    const hanging = new ScriptedChatClient({
      replies: () => new Promise<string>(() => {}), // never answers
    });
    const events: AgentEvent[] = [];
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: ['ok'] }),
      contextProviders: [new WorkingMemoryProvider({ schema: profile, store, mode: 'background', client: hanging, timeoutMs: 50 })],
      onEvent: (e) => events.push(e),
    });
    const response = await agent.run('Hi', { session: agent.createSession({ userId: 'u1' }) });
    expect(Message.text(response.messages[0]!)).toBe('ok');
    expect(events.some((e) => e.type === 'provider-skipped' && e.phase === 'afterRun')).toBe(true);
    expect(await store.get({ userId: 'u1' })).toBeUndefined();
  });

  it('template mode: the client answers the whole markdown, or null for no change', async () => {
    const store = new InMemoryWorkingMemoryStore();
    const cheap = new ScriptedChatClient({
      replies: [JSON.stringify({ memory: '# Goals\n- learn Rust' }), JSON.stringify({ memory: null })],
    });
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: ['a', 'b'] }),
      contextProviders: [new WorkingMemoryProvider({ template: '# Goals\n', store, mode: 'background', client: cheap })],
    });
    const session = agent.createSession({ userId: 'u1' });
    await agent.run('I want to learn Rust.', { session });
    await agent.run('Thanks.', { session });
    expect((await store.get({ userId: 'u1' }))!.record).toBe('# Goals\n- learn Rust');
    expect(cheap.calls[0]!.options.responseFormat).toMatchObject({ type: 'json', schema: { required: ['memory'] } });
  });
});

describe('WorkingMemoryProvider and user data', () => {
  it('is exported and deleted with the user; a session’s record is deleted with the session', async () => {
    const store = new InMemoryWorkingMemoryStore();
    const sessionStore = new InMemorySessionStore();
    const user = new WorkingMemoryProvider({ schema: profile, store });
    const perSession = new WorkingMemoryProvider({ template: '# Notes\n', store, scope: 'session', sourceId: 'notes' });
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: () => 'ok' }),
      contextProviders: [user, perSession],
      sessionStore,
    });
    const s1 = agent.createSession({ userId: 'u1' });
    const s2 = agent.createSession({ userId: 'u1' });
    for (const s of [s1, s2]) {
      await agent.run('hi', { session: s });
      await agent.saveSession(s);
    }
    await user.update({ userId: 'u1' }, { name: 'Ada' });
    await perSession.update(perSession.keyOf(s1)!, '# Notes\n- one');
    await perSession.update(perSession.keyOf(s2)!, '# Notes\n- two');
    await user.update({ userId: 'u2' }, { name: 'Bob' });

    const exported = await agent.exportUserData('u1');
    expect(exported.providers['working-memory']).toMatchObject({ records: [{ record: { name: 'Ada' } }] });
    const notes = (exported.providers.notes as { records: Array<{ sessionId: string; record: string }> }).records;
    expect(notes.map((n) => [n.sessionId, n.record]).sort()).toEqual(
      [
        [s1.sessionId, '# Notes\n- one'],
        [s2.sessionId, '# Notes\n- two'],
      ].sort(),
    );

    await agent.deleteSession(s1.sessionId);
    expect(await store.get({ userId: 'u1', sessionId: s1.sessionId })).toBeUndefined();
    expect(await store.get({ userId: 'u1', sessionId: s2.sessionId })).toBeDefined();

    await agent.deleteUserData('u1');
    expect(await store.listUser('u1')).toEqual([]);
    expect((await agent.exportUserData('u1')).providers).toEqual({});
    expect((await store.get({ userId: 'u2' }))!.record).toEqual({ name: 'Bob' }); // another user's record stays
  });
});

describe('WorkingMemoryProvider: when, budget and unknown options', () => {
  const instructionsOf = (client: ScriptedChatClient) => client.calls.at(-1)!.options.instructions ?? '';
  async function seeded() {
    const store = new InMemoryWorkingMemoryStore();
    await store.put({ userId: 'ada' }, { name: 'Ada', city: 'Lyon' }, { ifMatch: null });
    return store;
  }

  it('when declines: neither the record nor the tool is in that run', async () => {
    const client = new ScriptedChatClient({ replies: () => ({ text: 'ok' }) });
    const memory = new WorkingMemoryProvider({
      schema: profile,
      store: await seeded(),
      when: (context) => Message.text(context.inputMessages[0]!) !== 'skip',
    });
    const agent = createAgent({ client, contextProviders: [memory] });
    await agent.run('hello', { session: agent.createSession({ userId: 'ada' }) });
    expect(instructionsOf(client)).toContain('Lyon');
    await agent.run('skip', { session: agent.createSession({ userId: 'ada' }) });
    expect(instructionsOf(client)).not.toContain('Lyon');
    expect(client.calls.at(-1)!.options.tools ?? []).toEqual([]);
  });

  it('a record over its budget is left out whole, reported, and the tool stays', async () => {
    const client = new ScriptedChatClient({ replies: () => ({ text: 'ok' }) });
    const events: AgentEvent[] = [];
    const memory = new WorkingMemoryProvider({ schema: profile, store: await seeded(), budget: { maxTokens: 5 } });
    const agent = createAgent({ client, onEvent: (e) => events.push(e), contextProviders: [memory] });
    await agent.run('hello', { session: agent.createSession({ userId: 'ada' }) });
    expect(instructionsOf(client)).not.toContain('Lyon');
    expect(client.calls.at(-1)!.options.tools?.map((t) => t.name)).toEqual([WORKING_MEMORY_TOOL]);
    expect(events.some((e) => e.type === 'provider-diagnostic' && e.code === 'working-memory-over-budget')).toBe(true);
  });

  it('refuses an option it does not know, naming it', () => {
    expect(() => new WorkingMemoryProvider({ schema: profile, store: new InMemoryWorkingMemoryStore(), scopes: 'user' } as never)).toThrow(
      /unknown option "scopes"/,
    );
  });
});
