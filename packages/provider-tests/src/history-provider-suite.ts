import {
  AgentSession,
  ConfigurationError,
  createAgent,
  createHashEmbedding,
  defineTool,
  HistoryProvider,
  InMemoryVectorIndex,
  InvalidInputError,
  Message,
  type Agent,
  type AgentResponse,
  type ChatClient,
  type ContextProvider,
  type FunctionResultContent,
  type HistoryProviderOptions,
  type JsonValue,
  type ProviderDiagnostic,
  SemanticRecallProvider,
  SessionStateError,
} from '@ctx/core';
import { ScriptedChatClient, type ScriptedCall, type ScriptedReply } from '@ctx/core/testing';
import { afterAll, afterEach, beforeAll, describe, expect, type TestContext } from 'vitest';
import { BLANK_SESSION_IDS, describeId, expectRejection, HOSTILE_SESSION_IDS, messagesOfEveryKind } from './fixtures.js';
import {
  checkCapability,
  createRegistrar,
  expectDeclared,
  randomTag,
  type ConformanceSuiteOptions,
  type MaybePromise,
} from './suite-options.js';

/** What a history backend can or cannot do; the suite skips or adapts the tests that depend on it. */
export interface HistoryProviderCapabilities {
  /**
   * `saveMessages` skips messages whose id is already stored with the same content, so a retried
   * save stores nothing twice, and refuses a batch holding one stored with other content
   * (`messageIdConflict`). Default true; set false for an append-only log that cannot check ids,
   * and the retry and conflict tests are skipped.
   */
  dedupesByMessageId?: boolean;
  /**
   * History lives in the session's own state slot (like `InMemoryHistoryProvider`), so it travels
   * with the session JSON and a fresh session object with the same id starts empty. Default false:
   * history is kept in a backend by session id, and the suite checks that a fresh session object
   * with the same id sees it.
   */
  keepsHistoryInSession?: boolean;
  /**
   * The longest session id (in UTF-16 code units) the backend stores. A longer hostile id must be
   * refused by `saveMessages` with `InvalidInputError` naming the limit, never stored cut or changed
   * (the hostile-id test checks it), and is left out of the other tests. Default: no limit, so every
   * hostile id must be stored and read back exactly.
   */
  maxSessionIdLength?: number;
  /**
   * `saveMessages` honours `SaveHistoryArgs.turn`: the opening batch of a turn replaces a stored
   * earlier attempt of it in place, wherever it sits, and a later batch goes right after the turn
   * (`findRetriedTurn` from `@ctx/core/backend`), so a retried run stores its turn once, in one
   * piece. Default true; set false and the retried-turn tests are skipped.
   */
  replacesRetriedTurns?: boolean;
  /**
   * The provider has `popMessages`. True: the popping tests run, and a provider without it fails
   * them. False: they are skipped (a provider that has it all the same fails the declaration test).
   * Default (undeclared): decided by whether the provider has it, so one that lost it only skips them.
   */
  popMessages?: boolean;
  /**
   * The provider has `clearMessages`. True: the clearing tests run, and a provider without it fails
   * them. False: they are skipped (a provider that has it all the same fails the declaration test).
   * Default (undeclared): decided by whether the provider has it.
   */
  clearMessages?: boolean;
}

/** What the suite passes to `create`: the options under test, always with a `sourceId`. */
export type HistoryProviderCreateOptions = HistoryProviderOptions & { sourceId: string };

/** Options of `describeHistoryProvider`. */
export interface HistoryProviderSuiteOptions<P extends HistoryProvider = HistoryProvider> extends ConformanceSuiteOptions<P> {
  /**
   * Creates the provider under test with exactly these options (pass every one on). Called several
   * times per test; every provider it returns must share one backend: two providers with the same
   * `sourceId` see the same history, two with different ones never see each other's. The suite
   * picks fresh random source ids, so data a previous run left behind never interferes.
   */
  create: (options: HistoryProviderCreateOptions) => MaybePromise<P>;
  /** What the backend can do. Every capability defaults to the strictest expectation. */
  capabilities?: HistoryProviderCapabilities;
  /** How many runs the concurrency test starts at once on one session. Default 50. */
  concurrentRuns?: number;
}

/** Saves the racing-reader test makes, each raced by readers. */
const TORN_READ_ROUNDS = 5;
/** Reads each racing reader makes at most while one save runs (a bound, not a timing). */
const MAX_RACING_READS = 200;

const CHECKED_OPTIONS = ['sourceId', 'loadMessages', 'storeInputs', 'storeOutputs', 'storeContextMessages', 'maxMessages'] as const;

/**
 * Defines a vitest suite that checks a `HistoryProvider` against the contract of `@ctx/core`:
 * the load and store options, windows, ordering, isolation, JSON fidelity of every content kind,
 * failed runs, hostile session ids, concurrent saves and retries, and the history operations the
 * agent's sessions build on: popping, clearing (when the provider has those capabilities) and forking. Most tests run end to end through
 * `createAgent` with a `ScriptedChatClient`; some call `getMessages` / `saveMessages` directly.
 * Call it at the top level of a test file.
 */
export function describeHistoryProvider<P extends HistoryProvider>(name: string, options: HistoryProviderSuiteOptions<P>): void {
  const capabilities = {
    dedupesByMessageId: options.capabilities?.dedupesByMessageId ?? true,
    keepsHistoryInSession: options.capabilities?.keepsHistoryInSession ?? false,
    maxSessionIdLength: options.capabilities?.maxSessionIdLength ?? Number.POSITIVE_INFINITY,
    replacesRetriedTurns: options.capabilities?.replacesRetriedTurns ?? true,
  };
  const concurrentRuns = options.concurrentRuns ?? 50;

  describe(`${name} (HistoryProvider conformance)`, options.timeout === undefined ? {} : { timeout: options.timeout }, () => {
    const { test, finish } = createRegistrar(name, options.expectedFailures);
    afterAll(finish);
    const tag = randomTag();
    let counter = 0;
    const created: P[] = [];

    if (options.setup) beforeAll(() => options.setup!());
    if (options.teardown) afterAll(() => options.teardown!());
    afterEach(async () => {
      const list = created.splice(0);
      if (options.cleanup) for (const provider of list) await options.cleanup(provider);
    });

    /** A provider from the factory, with a fresh source id unless one is given. */
    const make = async (overrides: HistoryProviderOptions = {}): Promise<P> => {
      const asked: HistoryProviderCreateOptions = { ...overrides, sourceId: overrides.sourceId ?? `history-${tag}-${++counter}` };
      const provider = await options.create(asked);
      created.push(provider);
      if (!HistoryProvider.isInstance(provider))
        throw new Error(`create() of ${name} must return a HistoryProvider (a subclass of the one in @ctx/core).`);
      for (const key of CHECKED_OPTIONS) {
        if (asked[key] !== undefined && provider[key] !== asked[key]) {
          throw new Error(
            `create() of ${name} must pass every option on: asked for ${key} = ${JSON.stringify(asked[key])}, the provider has ${JSON.stringify(provider[key])}.`,
          );
        }
      }
      return provider;
    };

    describe('loading', () => {
      test('loads the stored conversation before a run, oldest first, attributed as history', async () => {
        const provider = await make();
        const client = echoClient();
        const agent = agentWith([provider], client);
        const session = agent.createSession();
        await agent.run('first', { session });
        await agent.run('second', { session });
        await agent.run('third', { session });
        expect(texts(call(client, 2).messages)).toEqual([
          'user:first',
          'assistant:re: first',
          'user:second',
          'assistant:re: second',
          'user:third',
        ]);
        const stored = await load(provider, session);
        expect(fromSource(call(client, 2), provider.sourceId)).toEqual(
          stored.slice(0, 4).map((m) => Message.withSource(m, provider.sourceId, 'history')),
        );
      });

      test("loadMessages 'auto' does not load once the session has a serviceSessionId, but still stores", async () => {
        const provider = await make({ loadMessages: 'auto' });
        const client = new ScriptedChatClient({ replies: [{ text: 'one', conversationId: 'conv_1' }, 'two'] });
        const agent = agentWith([provider], client);
        const session = agent.createSession();
        await agent.run('first', { session });
        expect(session.serviceSessionId).toBe('conv_1');
        await agent.run('second', { session });
        expect(call(client, 1).options.conversationId).toBe('conv_1');
        expect(texts(call(client, 1).messages)).toEqual(['user:second']);
        expect(texts(await load(provider, session))).toEqual(['user:first', 'assistant:one', 'user:second', 'assistant:two']);
      });

      test("loadMessages 'auto' does not load when the run sets store: true", async () => {
        const provider = await make();
        const client = echoClient();
        const agent = agentWith([provider], client);
        const session = agent.createSession();
        await agent.run('first', { session });
        await agent.run('second', { session, options: { store: true } });
        expect(call(client, 1).options.store).toBe(true);
        expect(texts(call(client, 1).messages)).toEqual(['user:second']);
        await agent.run('third', { session, options: { store: false } });
        expect(texts(call(client, 2).messages)).toEqual([
          'user:first',
          'assistant:re: first',
          'user:second',
          'assistant:re: second',
          'user:third',
        ]);
      });

      test("loadMessages 'auto' does not load when the client stores by default, unless the run sets store: false", async () => {
        const provider = await make();
        const client = echoClient({ storesByDefault: true });
        const agent = agentWith([provider], client);
        const session = agent.createSession();
        await agent.run('first', { session });
        await agent.run('second', { session });
        expect(texts(call(client, 1).messages)).toEqual(['user:second']);
        await agent.run('third', { session, options: { store: false } });
        expect(texts(call(client, 2).messages)).toEqual([
          'user:first',
          'assistant:re: first',
          'user:second',
          'assistant:re: second',
          'user:third',
        ]);
        expect(fromSource(call(client, 2), provider.sourceId)).toHaveLength(4);
      });

      test('loadMessages true loads even when the service keeps the conversation', async () => {
        const provider = await make({ loadMessages: true });
        const client = new ScriptedChatClient({ replies: [{ text: 'one', conversationId: 'conv_1' }, 'two'], storesByDefault: true });
        const agent = agentWith([provider], client);
        const session = agent.createSession();
        await agent.run('first', { session, options: { store: true } });
        await agent.run('second', { session, options: { store: true } });
        expect(session.serviceSessionId).toBe('conv_1');
        expect(texts(fromSource(call(client, 1), provider.sourceId))).toEqual(['user:first', 'assistant:one']);
      });

      test('loadMessages false never loads but still stores inputs, outputs and tool exchanges', async () => {
        const provider = await make({ loadMessages: false });
        const client = toolClient();
        const agent = createAgent({ client, tools: [lookupTool()], contextProviders: [provider] });
        const session = agent.createSession();
        await agent.run('weather?', { session });
        await agent.run('thanks', { session });
        for (const c of client.calls) expect(fromSource(c, provider.sourceId)).toEqual([]);
        const stored = await load(provider, session);
        expect(texts(stored)).toEqual(['user:weather?', 'assistant:', 'tool:', 'assistant:sunny', 'user:thanks', 'assistant:re: thanks']);
        const [functionCall] = Message.functionCalls(stored[1]!);
        expect(stored[2]!.contents).toEqual([
          { type: 'function-result', callId: functionCall!.callId, name: 'lookup', result: { hits: ['weather'] } },
        ]);
      });

      test('getMessages of a session with no history is empty', async () => {
        const provider = await make();
        const session = new AgentSession();
        expect(await load(provider, session)).toEqual([]);
        expect(await load(provider, session, 5)).toEqual([]);
      });
    });

    describe('storing', () => {
      test('stores the input, then the reply, with input and response attribution', async () => {
        const provider = await make();
        const agent = agentWith([provider]);
        const session = agent.createSession();
        const input = Message.user('hello', { authorName: 'ann', metadata: { channel: 'web' } });
        const response = await agent.run(input, { session });
        expect(await load(provider, session)).toEqual([
          Message.withSource(input, 'input', 'input'),
          Message.withSource(response.messages[0]!, 'response', 'response'),
        ]);
      });

      test('stores a whole tool exchange in order: calls, results, final answer', async () => {
        const provider = await make();
        const client = new ScriptedChatClient({
          replies: [
            {
              toolCalls: [
                { name: 'lookup', callId: 'call_a', arguments: { q: 'a' } },
                { name: 'lookup', callId: 'call_b', arguments: { q: 'b' } },
              ],
            },
            'both found',
          ],
        });
        const agent = createAgent({ client, tools: [lookupTool()], contextProviders: [provider] });
        const session = agent.createSession();
        const input = Message.user('find a and b');
        const response = await agent.run(input, { session });
        const stored = await load(provider, session);
        expect(stored).toEqual([
          Message.withSource(input, 'input', 'input'),
          ...response.messages.map((m) => Message.withSource(m, 'response', 'response')),
        ]);
        expect(texts(stored)).toEqual(['user:find a and b', 'assistant:', 'tool:', 'assistant:both found']);
        expect(stored[2]!.contents).toEqual([
          { type: 'function-result', callId: 'call_a', name: 'lookup', result: { hits: ['a'] } },
          { type: 'function-result', callId: 'call_b', name: 'lookup', result: { hits: ['b'] } },
        ]);
      });

      test('a failing tool is not a failed run: its error result is stored', async () => {
        const provider = await make();
        const broken = defineTool({
          name: 'broken',
          parameters: { type: 'object' },
          execute: () => {
            throw new Error('disk on fire');
          },
        });
        const client = new ScriptedChatClient({ replies: [{ toolCalls: [{ name: 'broken', callId: 'call_x' }] }, 'sorry'] });
        const agent = createAgent({ client, tools: [broken], contextProviders: [provider] });
        const session = agent.createSession();
        await agent.run('try it', { session });
        const stored = await load(provider, session);
        expect(texts(stored)).toEqual(['user:try it', 'assistant:', 'tool:', 'assistant:sorry']);
        const result = stored[2]!.contents[0] as FunctionResultContent;
        expect(result).toMatchObject({ type: 'function-result', callId: 'call_x', isError: true });
        expect(JSON.stringify(result.result)).toContain('disk on fire');
      });

      test('storeInputs: false stores only the replies', async () => {
        const provider = await make({ storeInputs: false });
        const agent = agentWith([provider]);
        const session = agent.createSession();
        await agent.run('a', { session });
        await agent.run('b', { session });
        expect(texts(await load(provider, session))).toEqual(['assistant:re: a', 'assistant:re: b']);
      });

      test('storeOutputs: false stores only the inputs', async () => {
        const provider = await make({ storeOutputs: false });
        const agent = agentWith([provider]);
        const session = agent.createSession();
        await agent.run('a', { session });
        await agent.run('b', { session });
        expect(texts(await load(provider, session))).toEqual(['user:a', 'user:b']);
      });

      test('storeInputs and storeOutputs both false store nothing', async () => {
        const provider = await make({ storeInputs: false, storeOutputs: false });
        const agent = agentWith([provider]);
        const session = agent.createSession();
        await agent.run('a', { session });
        await agent.run('b', { session });
        expect(await load(provider, session)).toEqual([]);
      });

      test('does not store injected context by default', async () => {
        const provider = await make();
        const client = echoClient();
        const agent = agentWith([provider, injector('notes')], client);
        const session = agent.createSession();
        await agent.run('a', { session });
        expect(texts(call(client, 0).messages)).toEqual(['system:notes says hi', 'user:a']);
        expect(texts(await load(provider, session))).toEqual(['user:a', 'assistant:re: a']);
      });

      test('storeContextMessages: true stores injected context before the input, whatever the provider order', async () => {
        const provider = await make({ storeContextMessages: true });
        for (const order of [
          [injector('notes'), provider],
          [provider, injector('notes')],
        ]) {
          const agent = agentWith(order);
          const session = agent.createSession();
          await agent.run('a', { session });
          await agent.run('b', { session });
          const stored = await load(provider, session);
          expect(texts(stored)).toEqual([
            'system:notes says hi',
            'user:a',
            'assistant:re: a',
            'system:notes says hi',
            'user:b',
            'assistant:re: b',
          ]);
          expect(Message.source(stored[0]!)).toEqual({ sourceId: 'notes', sourceType: 'context' });
          expect(new Set(stored.map((m) => m.id)).size).toBe(6);
        }
      });

      test('storeContextFrom stores injected context from the named sources only', async () => {
        const provider = await make({ storeContextFrom: ['rag'] });
        const agent = agentWith([injector('notes'), injector('rag'), provider]);
        const session = agent.createSession();
        await agent.run('a', { session });
        const stored = await load(provider, session);
        expect(texts(stored)).toEqual(['system:rag says hi', 'user:a', 'assistant:re: a']);
        expect(Message.source(stored[0]!)).toEqual({ sourceId: 'rag', sourceType: 'context' });
      });

      test("storeContextMessages never stores another history provider's loaded messages", async () => {
        const provider = await make({ storeContextMessages: true });
        const other = await make();
        const saves = recordSaves(provider);
        const agent = agentWith([other, provider]);
        const session = agent.createSession();
        await agent.run('first', { session });
        await agent.run('second', { session });
        expect(saves.map(texts)).toEqual([
          ['user:first', 'assistant:re: first'],
          ['user:second', 'assistant:re: second'],
        ]);
        expect(texts(await load(provider, session))).toEqual(['user:first', 'assistant:re: first', 'user:second', 'assistant:re: second']);
      });

      test('does not store the messages it loaded again', async () => {
        const provider = await make();
        const saves = recordSaves(provider);
        const agent = agentWith([provider]);
        const session = agent.createSession();
        const responses: AgentResponse[] = [];
        const inputs = [Message.user('one'), Message.user('two'), Message.user('three')];
        for (const input of inputs) responses.push(await agent.run(input, { session }));
        expect(saves).toEqual(
          inputs.map((input, i) => [
            Message.withSource(input, 'input', 'input'),
            Message.withSource(responses[i]!.messages[0]!, 'response', 'response'),
          ]),
        );
        const stored = await load(provider, session);
        expect(stored).toHaveLength(6);
        expect(new Set(stored.map((m) => m.id)).size).toBe(6);
      });
    });

    describe('windows', () => {
      test('getMessages with a limit returns the newest messages, newest last', async () => {
        const provider = await make();
        const session = new AgentSession();
        const all = Array.from({ length: 10 }, (_, i) => Message.user(`m${i}`));
        await save(provider, session, all.slice(0, 5));
        await save(provider, session, all.slice(5));
        expect(await load(provider, session, 3)).toEqual(all.slice(7));
        expect(await load(provider, session, 1)).toEqual(all.slice(9));
        expect(await load(provider, session, 10)).toEqual(all);
        expect(await load(provider, session, 50)).toEqual(all);
        expect(await load(provider, session)).toEqual(all);
      });

      test('maxMessages loads only the newest N messages, newest last, and still stores everything', async () => {
        const provider = await make({ maxMessages: 3 });
        const client = echoClient();
        const agent = agentWith([provider], client);
        const session = agent.createSession();
        for (let i = 1; i <= 5; i++) await agent.run(`t${i}`, { session });
        expect(texts(call(client, 4).messages)).toEqual(['assistant:re: t3', 'user:t4', 'assistant:re: t4', 'user:t5']);
        expect(await load(provider, session)).toHaveLength(10);
      });

      test('a window that begins with a tool result drops it, so no result is orphaned', async () => {
        const cut = await make({ maxMessages: 2 });
        const whole = await make({ maxMessages: 3 });
        for (const [provider, expected] of [
          [cut, ['assistant:sunny', 'user:next']],
          [whole, ['assistant:', 'tool:', 'assistant:sunny', 'user:next']],
        ] as const) {
          const client = toolClient();
          const agent = createAgent({ client, tools: [lookupTool()], contextProviders: [provider] });
          const session = agent.createSession();
          await agent.run('weather?', { session });
          await agent.run('next', { session });
          const seen = call(client, 2).messages;
          expect(texts(seen)).toEqual(expected);
          const calls = new Set(seen.flatMap((m) => Message.functionCalls(m).map((c) => c.callId)));
          for (const m of seen) for (const c of m.contents) if (c.type === 'function-result') expect(calls.has(c.callId)).toBe(true);
        }
      });
    });

    describe('ordering and isolation', () => {
      test('keeps the order of many turns', async () => {
        const provider = await make();
        const client = echoClient();
        const agent = agentWith([provider], client);
        const session = agent.createSession();
        const expected: string[] = [];
        for (let i = 1; i <= 12; i++) {
          await agent.run(`t${i}`, { session });
          expected.push(`user:t${i}`, `assistant:re: t${i}`);
        }
        expect(texts(await load(provider, session))).toEqual(expected);
        expect(texts(call(client, 11).messages)).toEqual([...expected.slice(0, 22), 'user:t12']);
      });

      test('keeps sessions apart', async () => {
        const provider = await make();
        const client = echoClient();
        const agent = agentWith([provider], client);
        const a = agent.createSession();
        const b = agent.createSession();
        await agent.run('a1', { session: a });
        await agent.run('b1', { session: b });
        await agent.run('a2', { session: a });
        await agent.run('b2', { session: b });
        expect(texts(await load(provider, a))).toEqual(['user:a1', 'assistant:re: a1', 'user:a2', 'assistant:re: a2']);
        expect(texts(await load(provider, b))).toEqual(['user:b1', 'assistant:re: b1', 'user:b2', 'assistant:re: b2']);
        expect(texts(call(client, 3).messages)).toEqual(['user:b1', 'assistant:re: b1', 'user:b2']);
      });

      test('keeps providers with different source ids apart on one backend', async () => {
        const one = await make();
        const two = await make();
        const clientOne = echoClient();
        const clientTwo = echoClient();
        const agentOne = agentWith([one], clientOne);
        const agentTwo = agentWith([two], clientTwo);
        const session = agentOne.createSession();
        await agentOne.run('for one', { session });
        await agentTwo.run('for two', { session });
        await agentOne.run('one again', { session });
        expect(texts(call(clientTwo, 0).messages)).toEqual(['user:for two']);
        expect(texts(call(clientOne, 1).messages)).toEqual(['user:for one', 'assistant:re: for one', 'user:one again']);
        expect(texts(await load(one, session))).toEqual([
          'user:for one',
          'assistant:re: for one',
          'user:one again',
          'assistant:re: one again',
        ]);
        expect(texts(await load(two, session))).toEqual(['user:for two', 'assistant:re: for two']);
      });

      test("continues a conversation from the session's JSON, in a new agent with a new provider instance", async () => {
        const provider = await make();
        const agent = agentWith([provider]);
        const session = agent.createSession();
        await agent.run('first', { session });
        const client = echoClient();
        const later = agentWith([await make({ sourceId: provider.sourceId })], client);
        const restored = later.restoreSession(JSON.parse(JSON.stringify(session)));
        await later.run('second', { session: restored });
        expect(texts(call(client, 0).messages)).toEqual(['user:first', 'assistant:re: first', 'user:second']);
      });

      test(
        'continues a conversation from the session id alone',
        async () => {
          const provider = await make();
          const agent = agentWith([provider]);
          const session = agent.createSession();
          await agent.run('first', { session });
          const client = echoClient();
          const later = agentWith([await make({ sourceId: provider.sourceId })], client);
          await later.run('second', { session: later.getSessionById(session.sessionId) });
          expect(texts(call(client, 0).messages)).toEqual(['user:first', 'assistant:re: first', 'user:second']);
        },
        capabilities.keepsHistoryInSession,
      );
    });

    describe('JSON fidelity', () => {
      test('getMessages returns exactly what saveMessages stored, for every content kind', async () => {
        const provider = await make();
        const session = new AgentSession();
        const first = messagesOfEveryKind();
        const second = messagesOfEveryKind();
        await save(provider, session, first);
        await save(provider, session, second);
        expect(await load(provider, session)).toEqual([...first, ...second]);
        expect(await load(provider, session, second.length)).toEqual(second);
      });

      test('a run stores every content kind unchanged and loads it back for the model', async () => {
        const provider = await make();
        const client = new ScriptedChatClient({ replies: [{ reasoning: 'thinking it over', text: 'answer' }, 'next answer'] });
        const agent = agentWith([provider], client);
        const session = agent.createSession();
        const input = messagesOfEveryKind();
        const response = await agent.run(input, { session });
        const stored = await load(provider, session);
        expect(stored).toEqual([
          ...input.map((m) => Message.withSource(m, 'input', 'input')),
          Message.withSource(response.messages[0]!, 'response', 'response'),
        ]);
        expect(stored.at(-1)!.contents).toEqual([
          { type: 'reasoning', text: 'thinking it over' },
          { type: 'text', text: 'answer' },
        ]);
        await agent.run('next', { session });
        expect(call(client, 1).messages).toEqual([
          ...stored.map((m) => Message.withSource(m, provider.sourceId, 'history')),
          expect.objectContaining({ role: 'user' }),
        ]);
      });

      test('changing what was saved or loaded changes nothing stored (loaded messages may be copies or read-only)', async () => {
        const provider = await make();
        const session = new AgentSession();
        const saved = messagesOfEveryKind();
        const snapshot = structuredClone(saved);
        await save(provider, session, saved);
        saved[1]!.contents.push({ type: 'text', text: 'changed after save' });
        saved[1]!.metadata!.client = 'changed after save';
        expect(await load(provider, session)).toEqual(snapshot);
        const loaded = await load(provider, session);
        const attempt = (change: () => void) => {
          try {
            change();
          } catch (error) {
            expect(error).toBeInstanceOf(TypeError); // frozen: the write is refused
          }
        };
        attempt(() => loaded[1]!.contents.push({ type: 'text', text: 'changed after load' }));
        attempt(() => (loaded[1]!.metadata!.client = 'changed after load'));
        attempt(() => ((loaded[3]!.contents[0] as FunctionResultContent).result = 'changed after load'));
        expect(await load(provider, session)).toEqual(snapshot);
      });
    });

    describe('failures', () => {
      test('a run whose model call fails stores nothing', async () => {
        const provider = await make();
        const saves = recordSaves(provider);
        const client = new ScriptedChatClient({ replies: ['fine', { error: new Error('model down') }, 'fine again'] });
        const agent = agentWith([provider], client);
        const session = agent.createSession();
        await agent.run('ok', { session });
        await expect(agent.run('doomed', { session })).rejects.toThrow('model down');
        expect(texts(await load(provider, session))).toEqual(['user:ok', 'assistant:fine']);
        expect(saves).toHaveLength(1);
        await agent.run('later', { session });
        expect(texts(await load(provider, session))).toEqual(['user:ok', 'assistant:fine', 'user:later', 'assistant:fine again']);
      });

      test('an aborted run stores nothing', async () => {
        const provider = await make();
        const controller = new AbortController();
        // The abort lands while the model is answering, whatever the backend's latency before that.
        const client = new ScriptedChatClient({
          replies: () => {
            setTimeout(() => controller.abort(new Error('user gave up')), 10);
            return { text: 'too late', delayMs: 5000 };
          },
        });
        const agent = agentWith([provider], client);
        const session = agent.createSession();
        await expect(agent.run('slow', { session, signal: controller.signal })).rejects.toThrow('user gave up');
        expect(client.calls).toHaveLength(1);
        expect(await load(provider, session)).toEqual([]);
      });
    });

    describe('refusals', () => {
      test(
        'getMessages and saveMessages refuse empty and whitespace-only session ids with ConfigurationError and store nothing',
        async () => {
          const provider = await make();
          const session = new AgentSession();
          const kept = [Message.user('kept')];
          await save(provider, session, kept);
          for (const blank of BLANK_SESSION_IDS) {
            const state = structuredClone(session.stateOf(provider.sourceId));
            const before = JSON.stringify(state);
            await expectRejection(
              provider.getMessages(blank, { state }),
              ConfigurationError.isInstance,
              `getMessages(${describeId(blank)})`,
            );
            await expectRejection(
              provider.saveMessages(blank, [Message.user('refused')], { state }),
              ConfigurationError.isInstance,
              `saveMessages(${describeId(blank)})`,
            );
            expect(JSON.stringify(state), 'the state is untouched').toBe(before);
          }
          expect(await load(provider, session)).toEqual(kept);
        },
        capabilities.keepsHistoryInSession,
      );

      test('saveMessages of a message with a non-JSON value in metadata or a function result throws SessionStateError and stores nothing', async () => {
        const provider = await make();
        const session = new AgentSession();
        const kept = [Message.user('kept')];
        await save(provider, session, kept);
        const refused: [string, string, Message][] = [
          ['a Map in metadata', '.metadata.m', Message.user('x', { metadata: { m: new Map([['k', 1]]) as unknown as JsonValue } })],
          ['NaN in metadata', '.metadata.n', Message.user('x', { metadata: { n: Number.NaN } })],
          ['a Date in metadata', '.metadata.at', Message.user('x', { metadata: { at: new Date(0) as unknown as JsonValue } })],
          [
            'a function result',
            '.contents[0].result',
            Message.tool({ type: 'function-result', callId: 'c', result: (() => 'result') as unknown as JsonValue }),
          ],
        ];
        for (const [what, path, message] of refused) {
          const error = await expectRejection(
            save(provider, session, [Message.user('valid, first in the batch'), message]),
            SessionStateError.isInstance,
            `saveMessages of a batch holding ${what}`,
          );
          const at = (error as SessionStateError).path;
          expect(at.endsWith(path), `the error of ${what} names ${path}, got ${at}`).toBe(true);
        }
        expect(await load(provider, session), 'nothing of a refused batch is stored').toEqual(kept);
      });

      test('saveMessages of a message nested deeper than 128 levels throws SessionStateError and stores nothing', async () => {
        const provider = await make();
        const session = new AgentSession();
        const kept = [Message.user('kept')];
        await save(provider, session, kept);
        let deep: JsonValue = 'leaf';
        for (let i = 0; i < 200; i++) deep = [deep];
        for (const message of [
          Message.user('x', { metadata: { deep } }),
          Message.tool({ type: 'function-result', callId: 'c', result: deep }),
        ]) {
          await expectRejection(
            save(provider, session, [Message.user('valid'), message]),
            SessionStateError.isInstance,
            'saveMessages of a deeply nested message',
          );
        }
        expect(await load(provider, session), 'nothing of a refused batch is stored').toEqual(kept);
      });
    });

    describe('hostile session ids', () => {
      test('keeps every hostile session id apart and round-trips it', async () => {
        const provider = await make();
        const agent = agentWith([provider]);
        const ids = HOSTILE_SESSION_IDS.filter((id) => id.length <= capabilities.maxSessionIdLength);
        const sessions = ids.map((sessionId) => agent.createSession({ sessionId }));
        for (const [i, session] of sessions.entries()) await agent.run(`for #${i}`, { session });
        for (const [i, session] of sessions.entries()) await save(provider, session, [Message.user(`direct #${i}`)]);
        for (const [i, session] of sessions.entries()) {
          expect(texts(await load(provider, session)), `session id ${describeId(session.sessionId)}`).toEqual([
            `user:for #${i}`,
            `assistant:re: for #${i}`,
            `user:direct #${i}`,
          ]);
          expect(texts(await load(provider, session, 1)), `session id ${describeId(session.sessionId)}`).toEqual([`user:direct #${i}`]);
        }
        for (const id of HOSTILE_SESSION_IDS.filter((id) => id.length > capabilities.maxSessionIdLength)) {
          const error = await expectRejection(
            provider.saveMessages(id, [Message.user('over the limit')], { state: {} }),
            InvalidInputError.isInstance,
            `saveMessages for session ${describeId(id)}, longer than maxSessionIdLength`,
          );
          expect((error as Error).message, 'the refusal names the limit').toContain(String(capabilities.maxSessionIdLength));
        }
      });
    });

    describe('concurrency', () => {
      test(`${concurrentRuns} concurrent runs on one session store every message once, each turn contiguous`, async () => {
        const provider = await make();
        const client = new ScriptedChatClient({
          replies: (messages) => {
            const text = Message.text(messages.at(-1)!);
            return { text: `re: ${text}`, delayMs: Number(text.split(' ')[1]) % 5 };
          },
        });
        const agent = agentWith([provider], client);
        const session = agent.createSession();
        await Promise.all(Array.from({ length: concurrentRuns }, (_, i) => agent.run(`turn ${i}`, { session })));
        const stored = await load(provider, session);
        expect(stored).toHaveLength(2 * concurrentRuns);
        expect(new Set(stored.map((m) => m.id)).size).toBe(2 * concurrentRuns);
        const list = texts(stored);
        for (let i = 0; i < concurrentRuns; i++) {
          const at = list.indexOf(`user:turn ${i}`);
          expect(at, `turn ${i} is stored`).toBeGreaterThanOrEqual(0);
          expect(list[at + 1], `turn ${i} is contiguous`).toBe(`assistant:re: turn ${i}`);
        }
      });

      test('a reader racing a multi-message saveMessages sees the batch whole or not at all, in full reads and in windows', async () => {
        const provider = await make();
        // Another instance on the same backend reads, as another server would.
        const reader = await make({ sourceId: provider.sourceId });
        const session = new AgentSession();
        const size = 12;
        let stored: Message[] = [];
        for (let round = 0; round < TORN_READ_ROUNDS; round++) {
          const batch = [
            Message.user(`round ${round}`),
            ...Array.from({ length: size - 1 }, (_, j) => Message.assistant(`round ${round}, part ${j + 1}`)),
          ];
          const whole = [...stored, ...batch];
          let settled = false;
          const saving = save(provider, session, batch).finally(() => {
            settled = true;
          });
          const reads: { limit?: number; messages: Message[] }[] = [];
          const readUntilSaved = async (limit?: number) => {
            for (let i = 0; i < MAX_RACING_READS && !settled; i++)
              reads.push({ ...(limit === undefined ? {} : { limit }), messages: await load(reader, session, limit) });
          };
          await Promise.all([saving, readUntilSaved(), readUntilSaved(size), readUntilSaved(size + 3)]);
          for (const [i, read] of reads.entries()) {
            const got = read.messages.map((m) => m.id);
            const window = (list: readonly Message[]) => (read.limit === undefined ? list : list.slice(-read.limit)).map((m) => m.id);
            const partial = read.messages.filter((m) => batch.some((b) => b.id === m.id)).length;
            expect(
              [window(stored), window(whole)],
              `read ${i} of round ${round}${read.limit === undefined ? '' : ` (limit ${read.limit})`} saw ${partial} of the batch's ${size} messages: a save must be one transaction`,
            ).toContainEqual(got);
          }
          stored = whole;
        }
        expect(await load(provider, session)).toEqual(stored);
      });

      test(`${concurrentRuns} concurrent saveMessages calls on one session store every message once, each batch contiguous`, async () => {
        const provider = await make();
        const session = new AgentSession();
        const batches = Array.from({ length: concurrentRuns }, (_, i) => [0, 1, 2].map((j) => Message.user(`b${i}.${j}`)));
        await Promise.all(batches.map((batch) => save(provider, session, batch)));
        const stored = await load(provider, session);
        expect(stored).toHaveLength(3 * concurrentRuns);
        for (const batch of batches) {
          const at = stored.findIndex((m) => m.id === batch[0]!.id);
          expect(stored.slice(at, at + 3), `batch ${Message.text(batch[0]!)} is stored whole and in order`).toEqual(batch);
        }
      });
    });

    describe('capabilities', () => {
      test('declares its optional capabilities (popMessages, clearMessages) as it has them', async () => {
        const provider = await make();
        expectDeclared(
          (['popMessages', 'clearMessages'] as const).map((method) => ({
            suite: name,
            capability: method,
            declared: options.capabilities?.[method],
            present: typeof provider[method] === 'function',
            methods: method,
          })),
        );
      });
    });

    describe('popping (the optional popMessages capability: skipped without it unless declared)', () => {
      /** The provider's popMessages; without it, fails the test when it is declared, else skips it. */
      const popper = (provider: P, context: TestContext) => {
        const pop = provider.popMessages;
        checkCapability(context, {
          suite: name,
          capability: 'popMessages',
          declared: options.capabilities?.popMessages,
          present: typeof pop === 'function',
          methods: 'popMessages',
        });
        return (session: AgentSession, count?: number) =>
          pop!.call(provider, session.sessionId, { state: session.stateOf(provider.sourceId), ...(count === undefined ? {} : { count }) });
      };

      test('popMessages removes the newest message and resolves to it; the rest stays in order', async (context) => {
        const provider = await make();
        const pop = popper(provider, context);
        const session = new AgentSession();
        const [a, b, c] = [Message.user('a'), Message.assistant('b'), Message.user('c')];
        await save(provider, session, [a!, b!, c!]);
        expect(await pop(session)).toEqual([c]);
        expect(await load(provider, session)).toEqual([a, b]);
        expect(await load(provider, session, 1)).toEqual([b]);
      });

      test('popMessages with a count removes that many, oldest first; past the start it removes what there is, then []', async (context) => {
        const provider = await make();
        const pop = popper(provider, context);
        const session = new AgentSession();
        const batch = [0, 1, 2, 3, 4].map((i) => Message.user(`m${i}`));
        await save(provider, session, batch);
        expect(await pop(session, 2)).toEqual(batch.slice(3));
        expect(await pop(session, 10)).toEqual(batch.slice(0, 3));
        expect(await load(provider, session)).toEqual([]);
        expect(await pop(session)).toEqual([]);
        const next = Message.user('after');
        await save(provider, session, [next]);
        expect(await load(provider, session)).toEqual([next]);
      });

      test('popping the last turn undoes it: the next run does not see it, and its messages can be saved again', async (context) => {
        const provider = await make();
        const pop = popper(provider, context);
        const client = echoClient();
        const agent = agentWith([provider], client);
        const session = agent.createSession();
        await agent.run('keep', { session });
        await agent.run('undo me', { session });
        const undone = await pop(session, 2);
        expect(texts(undone)).toEqual(['user:undo me', 'assistant:re: undo me']);
        await agent.run('again', { session });
        expect(texts(call(client, 2).messages)).toEqual(['user:keep', 'assistant:re: keep', 'user:again']);
        if (capabilities.dedupesByMessageId) {
          await save(provider, session, undone);
          expect(texts(await load(provider, session, 2)), 'a popped id is stored again').toEqual(['user:undo me', 'assistant:re: undo me']);
        }
      });

      test('popMessages touches only its own session and source id', async (context) => {
        const provider = await make();
        const pop = popper(provider, context);
        const other = await make();
        const [mine, theirs, sameIdOtherSource] = [new AgentSession(), new AgentSession(), new AgentSession()];
        const kept = Message.user('theirs');
        await save(provider, mine, [Message.user('mine')]);
        await save(provider, theirs, [kept]);
        const otherMessage = Message.user('other source');
        await other.saveMessages(mine.sessionId, [otherMessage], { state: mine.stateOf(other.sourceId) });
        expect(texts(await pop(mine))).toEqual(['user:mine']);
        expect(await pop(sameIdOtherSource)).toEqual([]);
        expect(await load(provider, theirs)).toEqual([kept]);
        expect(await other.getMessages(mine.sessionId, { state: mine.stateOf(other.sourceId) })).toEqual([otherMessage]);
      });

      test('concurrent pops of one message each return distinct messages, and every one is gone', async (context) => {
        const provider = await make();
        const pop = popper(provider, context);
        const session = new AgentSession();
        const batch = Array.from({ length: 12 }, (_, i) => Message.user(`m${i}`));
        await save(provider, session, batch);
        const popped = (await Promise.all(batch.slice(4).map(() => pop(session)))).flat();
        expect(popped.map((m) => m.id).sort()).toEqual(
          batch
            .slice(4)
            .map((m) => m.id)
            .sort(),
        );
        expect(await load(provider, session)).toEqual(batch.slice(0, 4));
      });

      test('popMessages refuses a count that is not a positive integer, and blank session ids, with ConfigurationError; nothing changes', async (context) => {
        const provider = await make();
        const pop = popper(provider, context);
        const session = new AgentSession();
        const kept = [Message.user('a'), Message.user('b')];
        await save(provider, session, kept);
        for (const count of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '2' as unknown as number]) {
          await expectRejection(pop(session, count), ConfigurationError.isInstance, `popMessages with count ${String(count)}`);
        }
        if (!capabilities.keepsHistoryInSession) {
          for (const blank of BLANK_SESSION_IDS) {
            await expectRejection(
              provider.popMessages!(blank, { state: session.stateOf(provider.sourceId) }),
              ConfigurationError.isInstance,
              `popMessages(${describeId(blank)})`,
            );
          }
        }
        expect(await load(provider, session)).toEqual(kept);
      });
    });

    describe('clearing (the optional clearMessages capability: skipped without it unless declared)', () => {
      /** The provider's clearMessages; without it, fails the test when it is declared, else skips it. */
      const clearer = (provider: P, context: TestContext) => {
        const clear = provider.clearMessages;
        checkCapability(context, {
          suite: name,
          capability: 'clearMessages',
          declared: options.capabilities?.clearMessages,
          present: typeof clear === 'function',
          methods: 'clearMessages',
        });
        return (session: AgentSession) => clear!.call(provider, session.sessionId, { state: session.stateOf(provider.sourceId) });
      };

      test('clearMessages removes every message of the session: nothing loads, the next run starts afresh, and the same ids can be saved again', async (context) => {
        const provider = await make();
        const clear = clearer(provider, context);
        const client = echoClient();
        const agent = agentWith([provider], client);
        const session = agent.createSession();
        await agent.run('first', { session });
        const direct = [Message.user('direct'), Message.assistant('again')];
        await save(provider, session, direct);
        await clear(session);
        expect(await load(provider, session)).toEqual([]);
        expect(await load(provider, session, 1)).toEqual([]);
        if (!capabilities.keepsHistoryInSession)
          expect(await load(provider, new AgentSession({ sessionId: session.sessionId }))).toEqual([]);
        await agent.run('after', { session });
        expect(texts(call(client, 1).messages)).toEqual(['user:after']);
        await save(provider, session, direct);
        expect(texts(await load(provider, session))).toEqual(['user:after', 'assistant:re: after', 'user:direct', 'assistant:again']);
      });

      test('clearMessages is idempotent: clearing a session with nothing stored, or clearing twice, resolves', async (context) => {
        const provider = await make();
        const clear = clearer(provider, context);
        const session = new AgentSession();
        await clear(session);
        await save(provider, session, [Message.user('a')]);
        await clear(session);
        await clear(session);
        expect(await load(provider, session)).toEqual([]);
        const next = Message.user('b');
        await save(provider, session, [next]);
        expect(await load(provider, session)).toEqual([next]);
      });

      test('clearMessages touches only its own session and source id, even beside glob and look-alike session ids', async (context) => {
        const provider = await make();
        const clear = clearer(provider, context);
        const other = await make();
        const pairs = (
          [
            ['*', 'plain'],
            ['CaseSensitive', 'casesensitive'],
            ['\u00e9', 'e\u0301'],
            ['padded', ' padded '],
            ['a{b}c', '{}'],
            ['x'.repeat(4095), 'x'.repeat(4096)],
          ] as const
        ).filter((ids) => ids.every((id) => id.length <= capabilities.maxSessionIdLength));
        const sessions = pairs.flat().map((sessionId) => new AgentSession({ sessionId }));
        for (const [i, session] of sessions.entries()) {
          await save(provider, session, [Message.user(`mine #${i}`)]);
          await other.saveMessages(session.sessionId, [Message.user(`other #${i}`)], { state: session.stateOf(other.sourceId) });
        }
        for (let i = 0; i < sessions.length; i += 2) await clear(sessions[i]!);
        for (const [i, session] of sessions.entries()) {
          const what = `session id ${describeId(session.sessionId)}`;
          expect(texts(await load(provider, session)), what).toEqual(i % 2 === 0 ? [] : [`user:mine #${i}`]);
          expect(texts(await load(other, session)), `${what}, other source id`).toEqual([`user:other #${i}`]);
        }
      });

      test(
        'clearMessages refuses blank session ids with ConfigurationError; nothing changes',
        async (context) => {
          const provider = await make();
          clearer(provider, context);
          const session = new AgentSession();
          const kept = [Message.user('kept')];
          await save(provider, session, kept);
          for (const blank of BLANK_SESSION_IDS) {
            await expectRejection(
              Promise.resolve().then(() => provider.clearMessages!(blank, { state: session.stateOf(provider.sourceId) })),
              ConfigurationError.isInstance,
              `clearMessages(${describeId(blank)})`,
            );
          }
          expect(await load(provider, session)).toEqual(kept);
        },
        capabilities.keepsHistoryInSession,
      );
    });

    describe('forking (forkMessages: the default reads and saves; a backend may copy on its server)', () => {
      /**
       * Forks `from` as `agent.forkSession` does: the new session's slot starts as a copy of the
       * source's, then `forkMessages` copies the history. Resolves to the new session and the count.
       */
      /**
       * Whether `error` is how `forkMessages` refuses a message not in the history: an
       * `InvalidInputError` (the caller's mistake, what core's default throws), or the
       * `ConfigurationError` backends published before threw, accepted for now.
       */
      const isForkRefusal = (error: unknown) => InvalidInputError.isInstance(error) || ConfigurationError.isInstance(error);

      const fork = async (provider: P, from: AgentSession, options: { atMessageId?: string; to?: AgentSession } = {}) => {
        const to = options.to ?? new AgentSession();
        const fromState = from.stateOf(provider.sourceId);
        const toState = structuredClone(fromState);
        to.state[provider.sourceId] = toState;
        const { atMessageId } = options;
        const copied = await provider.forkMessages(from.sessionId, to.sessionId, {
          fromState,
          toState,
          ...(atMessageId === undefined ? {} : { atMessageId }),
        });
        return { to, copied };
      };

      test('forkMessages copies the whole history, every content kind, whatever maxMessages says, and resolves to the count; the source is untouched', async () => {
        const provider = await make({ maxMessages: 2 });
        const session = new AgentSession();
        const all = [...messagesOfEveryKind(), ...messagesOfEveryKind()];
        await save(provider, session, all);
        const { to, copied } = await fork(provider, session);
        expect(copied).toBe(all.length);
        expect(await load(provider, to)).toEqual(all);
        expect(await load(provider, to, 3)).toEqual(all.slice(-3));
        if (!capabilities.keepsHistoryInSession) expect(await load(provider, new AgentSession({ sessionId: to.sessionId }))).toEqual(all);
        expect(await load(provider, session)).toEqual(all);
      });

      test('forkMessages with atMessageId copies up to and including that message', async () => {
        const provider = await make();
        const session = new AgentSession();
        const all = Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? Message.user(`u${i}`) : Message.assistant(`a${i}`)));
        await save(provider, session, all);
        for (const at of [0, 3, 5]) {
          const { to, copied } = await fork(provider, session, { atMessageId: all[at]!.id });
          expect(copied, `forked at #${at}`).toBe(at + 1);
          expect(await load(provider, to), `forked at #${at}`).toEqual(all.slice(0, at + 1));
        }
        expect(await load(provider, session)).toEqual(all);
      });

      test('forkMessages refuses a message id not in the history (unknown, empty, or of another session) with InvalidInputError (ConfigurationError still accepted), before anything is written', async () => {
        const provider = await make();
        const session = new AgentSession();
        const all = [Message.user('a'), Message.assistant('b')];
        await save(provider, session, all);
        const elsewhere = Message.user('in another session');
        await save(provider, new AgentSession(), [elsewhere]);
        for (const atMessageId of ['no-such-message', '', elsewhere.id]) {
          const to = new AgentSession();
          await expectRejection(
            fork(provider, session, { atMessageId, to }),
            isForkRefusal,
            `forkMessages at ${JSON.stringify(atMessageId)}`,
          );
          if (capabilities.keepsHistoryInSession)
            expect(to.state[provider.sourceId], 'the new slot is untouched').toEqual(session.state[provider.sourceId]);
          else expect(await load(provider, to), 'nothing is written').toEqual([]);
        }
        expect(await load(provider, session)).toEqual(all);
      });

      test('forkMessages of a session with no history copies nothing and resolves to 0; with a message id it is refused with InvalidInputError (ConfigurationError still accepted)', async () => {
        const provider = await make();
        const empty = new AgentSession();
        const { to, copied } = await fork(provider, empty);
        expect(copied).toBe(0);
        expect(await load(provider, to)).toEqual([]);
        await expectRejection(fork(provider, empty, { atMessageId: 'm' }), isForkRefusal, 'forkMessages of an empty history at a message');
      });

      test('a fork and its source diverge: what is added to one never shows in the other', async () => {
        const provider = await make();
        const client = echoClient();
        const agent = agentWith([provider], client);
        const source = agent.createSession();
        await agent.run('one', { session: source });
        await agent.run('two', { session: source });
        const { to: forked } = await fork(provider, source, { atMessageId: (await load(provider, source))[1]!.id });
        await agent.run('fork says', { session: forked });
        await agent.run('source says', { session: source });
        expect(texts(call(client, 2).messages)).toEqual(['user:one', 'assistant:re: one', 'user:fork says']);
        expect(texts(call(client, 3).messages)).toEqual([
          'user:one',
          'assistant:re: one',
          'user:two',
          'assistant:re: two',
          'user:source says',
        ]);
        expect(texts(await load(provider, forked))).toEqual(['user:one', 'assistant:re: one', 'user:fork says', 'assistant:re: fork says']);
        expect(texts(await load(provider, source))).toEqual([
          'user:one',
          'assistant:re: one',
          'user:two',
          'assistant:re: two',
          'user:source says',
          'assistant:re: source says',
        ]);
        const { to: again } = await fork(provider, forked);
        await save(provider, again, [Message.user('third copy')]);
        expect(await load(provider, forked)).toHaveLength(4);
      });

      test('forkMessages copies a long history (300 messages) whole and in order', async () => {
        const provider = await make();
        const session = new AgentSession();
        const all = Array.from({ length: 300 }, (_, i) => Message.user(`m${i}`));
        for (let i = 0; i < all.length; i += 100) await save(provider, session, all.slice(i, i + 100));
        const whole = await fork(provider, session);
        expect(whole.copied).toBe(300);
        expect(await load(provider, whole.to)).toEqual(all);
        const cut = await fork(provider, session, { atMessageId: all[249]!.id });
        expect(cut.copied).toBe(250);
        expect(await load(provider, cut.to)).toEqual(all.slice(0, 250));
      });

      test('forkMessages keeps every hostile session id apart, as source and as target', async () => {
        const provider = await make();
        const ids = HOSTILE_SESSION_IDS.filter((id) => id.length <= capabilities.maxSessionIdLength);
        const base = new AgentSession();
        const all = ids.map((_, i) => Message.user(`m${i}`));
        await save(provider, base, all);
        const targets = ids.map((sessionId) => new AgentSession({ sessionId }));
        for (const [i, to] of targets.entries()) await fork(provider, base, { atMessageId: all[i]!.id, to });
        for (const [i, target] of targets.entries()) {
          const what = `session id ${describeId(target.sessionId)}`;
          expect(await load(provider, target), what).toEqual(all.slice(0, i + 1));
          const { to, copied } = await fork(provider, target);
          expect(copied, what).toBe(i + 1);
          expect(await load(provider, to), `a fork of ${what}`).toEqual(all.slice(0, i + 1));
        }
      });

      test(
        'forkMessages refuses blank session ids, as source or target, with ConfigurationError; nothing is written',
        async () => {
          const provider = await make();
          const session = new AgentSession();
          const kept = [Message.user('kept')];
          await save(provider, session, kept);
          const state = session.stateOf(provider.sourceId);
          for (const blank of BLANK_SESSION_IDS) {
            await expectRejection(
              Promise.resolve().then(() =>
                provider.forkMessages(blank, 'fork-target', { fromState: state, toState: structuredClone(state) }),
              ),
              ConfigurationError.isInstance,
              `forkMessages from ${describeId(blank)}`,
            );
            await expectRejection(
              Promise.resolve().then(() =>
                provider.forkMessages(session.sessionId, blank, { fromState: state, toState: structuredClone(state) }),
              ),
              ConfigurationError.isInstance,
              `forkMessages to ${describeId(blank)}`,
            );
          }
          expect(await load(provider, session)).toEqual(kept);
        },
        capabilities.keepsHistoryInSession,
      );
    });

    describe('retries', () => {
      test(
        'saving the same messages twice stores them once',
        async () => {
          const provider = await make();
          const session = new AgentSession();
          const batch = [Message.user('q'), Message.assistant('a'), Message.user('q2')];
          await save(provider, session, batch);
          await save(provider, session, batch);
          expect(await load(provider, session)).toEqual(batch);
        },
        !capabilities.dedupesByMessageId,
      );

      test(
        'a save abandoned when its signal aborts leaves the batch whole or absent, and its retry stores it once',
        async () => {
          // A write abandoned at its deadline can still commit on the server: the caller sees a
          // failure and retries. Whatever point the abort hits, a read must never show part of the
          // batch, and after the retry the batch is stored exactly once, whole and in order.
          const provider = await make();
          const session = new AgentSession();
          const state = session.stateOf(provider.sourceId);
          await save(provider, session, [Message.user('before')]);
          const expected = [Message.user('before')].map((m) => Message.text(m));
          const points = ['at once', 'after a microtask', 'after a macrotask', 'never'] as const;
          for (const point of points) {
            const batch = Array.from({ length: 20 }, (_, i) => Message.user(`${point} #${i}`));
            const controller = new AbortController();
            const pending = provider.saveMessages(session.sessionId, batch, { state, signal: controller.signal });
            if (point === 'after a microtask') await Promise.resolve();
            if (point === 'after a macrotask') await new Promise((resolve) => setImmediate(resolve));
            if (point !== 'never') controller.abort(new Error(`abandoned ${point}`));
            await pending.then(
              () => {},
              () => {},
            );
            const ids = new Set(batch.map((m) => m.id));
            const seen = (await load(provider, session)).filter((m) => ids.has(m.id)).length;
            expect([0, batch.length], `messages of the batch abandoned ${point} a read shows`).toContain(seen);
            await provider.saveMessages(session.sessionId, batch, { state });
            expected.push(...batch.map((m) => Message.text(m)));
            const stored = (await load(provider, session)).map((m) => Message.text(m));
            expect(stored, `after the retry of the batch abandoned ${point}`).toEqual(expected);
          }
        },
        !capabilities.dedupesByMessageId,
      );

      test(
        'a retried batch that overlaps the stored tail stores only the new messages',
        async () => {
          const provider = await make();
          const session = new AgentSession();
          const [a, b, c] = [Message.user('a'), Message.assistant('b'), Message.user('c')];
          await save(provider, session, [a!, b!]);
          await save(provider, session, [b!, c!]);
          expect(await load(provider, session)).toEqual([a, b, c]);
        },
        !capabilities.dedupesByMessageId,
      );

      test(
        'a run retried with the same input message is sent the history before its first attempt and stores its turn once, with its own reply',
        async () => {
          const provider = await make();
          const client = new ScriptedChatClient({ replies: ['first', 'attempt one', 'attempt two'] });
          const agent = agentWith([provider], client);
          const session = agent.createSession();
          await agent.run('hello', { session });
          const question = Message.user('question');
          await agent.run(question, { session }); // its reply never reached the caller, who retries
          await agent.run(question, { session });
          expect(texts(call(client, 2).messages)).toEqual(['user:hello', 'assistant:first', 'user:question']);
          expect(texts(await load(provider, session))).toEqual(['user:hello', 'assistant:first', 'user:question', 'assistant:attempt two']);
        },
        !capabilities.replacesRetriedTurns || !capabilities.dedupesByMessageId,
      );
      test(
        'a message whose id is stored with other content refuses the whole batch with SessionStateError naming the id, reports message-id-conflict, and stores nothing',
        async () => {
          const provider = await make();
          const session = new AgentSession();
          const [q, a] = [Message.user('q'), Message.assistant('a')];
          await save(provider, session, [q!, a!]);
          const diagnostics: ProviderDiagnostic[] = [];
          const other = Message.assistant('another reply', { id: a!.id });
          const batch = [Message.user('next'), other];
          const error = await expectRejection(
            provider.saveMessages(session.sessionId, batch, {
              state: session.stateOf(provider.sourceId),
              report: (d) => diagnostics.push(d),
              turn: { inputIds: [batch[0]!.id], opens: true },
            }),
            (e) => SessionStateError.isInstance(e),
            'saving a batch with a conflicting message id',
          );
          const text = String((error as Error).message);
          expect(text).toContain(a!.id);
          expect(text).toContain(session.sessionId);
          expect(text).toContain(provider.sourceId);
          expect(diagnostics.map((d) => d.code)).toEqual(['message-id-conflict']);
          expect(JSON.stringify(diagnostics)).not.toContain('another reply');
          expect(await load(provider, session)).toEqual([q, a]);
        },
        !capabilities.dedupesByMessageId,
      );

      test(
        'the same message saved again, with another createdAt and metadata, is stored once and silently',
        async () => {
          const provider = await make();
          const session = new AgentSession();
          const q = Message.user('q', { authorName: 'ann' });
          await save(provider, session, [q]);
          const again = { ...q, createdAt: new Date(Date.now() + 60_000).toISOString(), metadata: { retried: true } };
          const diagnostics: ProviderDiagnostic[] = [];
          const next = Message.assistant('a');
          await provider.saveMessages(session.sessionId, [again, next], {
            state: session.stateOf(provider.sourceId),
            report: (d) => diagnostics.push(d),
          });
          expect(await load(provider, session)).toEqual([q, next]);
          expect(diagnostics).toEqual([]);
          const otherAuthor = { ...q, authorName: 'bob' };
          await expectRejection(save(provider, session, [otherAuthor]), (e) => SessionStateError.isInstance(e), 'another author');
        },
        !capabilities.dedupesByMessageId,
      );

      test(
        'a client that gives every reply the same id fails the next turn loudly instead of dropping its reply',
        async () => {
          const provider = await make();
          const agent = createAgent({ client: sameIdClient(echoClient()), contextProviders: [provider] });
          const session = agent.createSession();
          await agent.run('one', { session });
          const error = await expectRejection(agent.run('two', { session }), () => true, 'the second turn');
          expect(
            causes(error).some((e) => SessionStateError.isInstance(e)),
            String(error),
          ).toBe(true);
          expect(texts(await load(provider, session))).toEqual(['user:one', 'assistant:re: one']);
        },
        !capabilities.dedupesByMessageId,
      );

      test(
        'a retried turn that is not the newest is replaced in place, and the retry is sent every other turn but not its earlier attempt',
        async () => {
          const provider = await make();
          const client = new ScriptedChatClient({ replies: ['first attempt', 'B', 'C', 'second attempt'] });
          const agent = agentWith([provider], client);
          const session = agent.createSession();
          const question = Message.user('question');
          await agent.run(question, { session }); // its reply never reached the caller
          await agent.run('b', { session }); // other requests on the conversation go on meanwhile
          await agent.run('c', { session });
          const before = await load(provider, session);
          await agent.run(question, { session }); // the caller retries
          expect(texts(call(client, 3).messages)).toEqual(['user:b', 'assistant:B', 'user:c', 'assistant:C', 'user:question']);
          const stored = await load(provider, session);
          expect(texts(stored)).toEqual(['user:question', 'assistant:second attempt', 'user:b', 'assistant:B', 'user:c', 'assistant:C']);
          expect(stored.slice(2)).toEqual(before.slice(2));
        },
        !capabilities.replacesRetriedTurns || !capabilities.dedupesByMessageId,
      );
    });

    describe("persistence: 'model-call'", () => {
      test("stores a tool run as 'run' does, each message once", async () => {
        const stored: string[][] = [];
        for (const persistence of ['run', 'model-call'] as const) {
          const provider = await make();
          const agent = createAgent({ client: toolClient(), tools: [lookupTool()], contextProviders: [provider], persistence });
          const session = agent.createSession();
          await agent.run('weather?', { session });
          await agent.run('thanks', { session });
          stored.push(texts(await load(provider, session)));
        }
        expect(stored[1]).toEqual(['user:weather?', 'assistant:', 'tool:', 'assistant:sunny', 'user:thanks', 'assistant:re: thanks']);
        expect(stored[1]).toEqual(stored[0]);
      });

      test(
        'a retried turn that is not the newest is stored in its place, in one piece, batch after batch',
        async () => {
          const provider = await make();
          const client = toolClient();
          const agent = createAgent({ client, tools: [lookupTool()], contextProviders: [provider], persistence: 'model-call' });
          const session = agent.createSession();
          const question = Message.user('weather?');
          await agent.run(question, { session });
          await agent.run('thanks', { session });
          const before = await load(provider, session);
          await agent.run(question, { session });
          expect(texts(call(client, 3).messages)).toEqual(['user:thanks', 'assistant:re: thanks', 'user:weather?']);
          const stored = await load(provider, session);
          expect(texts(stored)).toEqual(['user:weather?', 'assistant:', 'tool:', 'assistant:sunny', 'user:thanks', 'assistant:re: thanks']);
          expect(stored[0]).toEqual(before[0]);
          for (const i of [1, 2, 3]) expect(stored[i]!.id, `message ${i} is the retry's`).not.toBe(before[i]!.id);
          expect(stored.slice(4)).toEqual(before.slice(4));
        },
        !capabilities.replacesRetriedTurns || !capabilities.dedupesByMessageId,
      );

      test('a run aborted in a tool keeps its input and calls, and the next run is sent them answered as interrupted', async () => {
        const provider = await make();
        const controller = new AbortController();
        const stuck = defineTool({
          name: 'lookup',
          parameters: { type: 'object' },
          execute: () => {
            controller.abort(new Error('process stopped'));
            return new Promise(() => {});
          },
        });
        const client = toolClient();
        const agent = createAgent({ client, tools: [stuck], contextProviders: [provider], persistence: 'model-call' });
        const session = agent.createSession();
        await expectRejection(agent.run('weather?', { session, signal: controller.signal }), () => true, 'the aborted run');
        expect(texts(await load(provider, session))).toEqual(['user:weather?', 'assistant:']);
        await agent.run('still there?', { session });
        const sent = call(client, 1).messages;
        expect(texts(sent)).toEqual(['user:weather?', 'assistant:', 'tool:', 'user:still there?']);
        const [call1] = Message.functionCalls(sent[1]!);
        expect(sent[2]!.contents).toEqual([
          {
            type: 'function-result',
            callId: call1!.callId,
            name: 'lookup',
            result: { error: expect.stringContaining('interrupted') },
            isError: true,
          },
        ]);
      });
    });

    describe('the recall index follows what this history stored', () => {
      /** A recall provider on its own index beside `provider`, and what the index and the history hold. */
      const recallBeside = (provider: HistoryProvider, client: ScriptedChatClient = echoClient()) => {
        const index = new InMemoryVectorIndex();
        const agent = agentWith(
          [provider, new SemanticRecallProvider({ embeddings: createHashEmbedding(), index, scope: 'session' })],
          client,
        );
        const indexed = async (session: AgentSession) =>
          (await index.getRange({ sessionId: session.sessionId, fromSequence: 0, toSequence: Number.MAX_SAFE_INTEGER })).map(
            (r) => `${r.role}:${r.text}`,
          );
        return { agent, indexed };
      };

      test('a turn whose store fails is never indexed', async () => {
        const provider = await make();
        const { agent, indexed } = recallBeside(provider);
        const session = agent.createSession();
        await agent.run('kept', { session });
        const original = provider.saveMessages;
        provider.saveMessages = async () => {
          throw new Error('the backend went away');
        };
        await expect(agent.run('lost', { session })).rejects.toThrow();
        provider.saveMessages = original;
        expect(await indexed(session)).toEqual(texts(await load(provider, session)));
      });

      test('a run aborted while its turn is stored indexes nothing the history does not hold', async () => {
        const provider = await make();
        const { agent, indexed } = recallBeside(provider);
        const session = agent.createSession();
        await agent.run('kept', { session });
        const controller = new AbortController();
        const original = provider.saveMessages;
        provider.saveMessages = function (this: HistoryProvider, ...args) {
          controller.abort(new Error('the user left'));
          return original.apply(this, args);
        };
        await agent.run('maybe', { session, signal: controller.signal }).catch(() => {});
        provider.saveMessages = original;
        // Whether the abort beat the store is the backend's timing; either way nothing is indexed that is not stored.
        const stored = texts(await load(provider, session));
        expect((await indexed(session)).filter((m) => !stored.includes(m))).toEqual([]);
      });

      test(
        'a retried turn (same input message) leaves the answer the history kept in the index, once',
        async () => {
          const provider = await make();
          let n = 0;
          const { agent, indexed } = recallBeside(provider, new ScriptedChatClient({ replies: () => ({ text: `answer ${++n}` }) }));
          const session = agent.createSession();
          const question = Message.user('name a boat');
          await agent.run(question, { session });
          await agent.run(question, { session });
          const stored = texts(await load(provider, session));
          expect(stored).toEqual(['user:name a boat', 'assistant:answer 2']);
          expect(await indexed(session)).toEqual(stored);
        },
        !capabilities.replacesRetriedTurns,
      );
    });
  });
}

/** The stored history of `session`, read directly. */
function load(provider: HistoryProvider, session: AgentSession, limit?: number): Promise<Message[]> {
  return provider.getMessages(session.sessionId, { state: session.stateOf(provider.sourceId), ...(limit === undefined ? {} : { limit }) });
}

/** Appends to the history of `session` directly. */
function save(provider: HistoryProvider, session: AgentSession, messages: readonly Message[]): Promise<void> {
  return provider.saveMessages(session.sessionId, messages, { state: session.stateOf(provider.sourceId) });
}

/** `role:text` of each message: a compact, order-preserving view for assertions. */
function texts(messages: readonly Message[]): string[] {
  return messages.map((m) => `${m.role}:${Message.text(m)}`);
}

/** The messages of a model call that `sourceId` contributed. */
function fromSource(recorded: ScriptedCall, sourceId: string): Message[] {
  return recorded.messages.filter((m) => Message.source(m)?.sourceId === sourceId);
}

/** The `index`th model call, failing clearly when there was none. */
function call(client: ScriptedChatClient, index: number): ScriptedCall {
  const recorded = client.calls[index];
  if (!recorded) throw new Error(`The model was called ${client.calls.length} times; expected a call #${index + 1}.`);
  return recorded;
}

/** A client that answers every call with `re: <text of the last message>`. */
function echoClient(options: { storesByDefault?: boolean } = {}): ScriptedChatClient {
  return new ScriptedChatClient({ ...options, replies: (messages) => `re: ${Message.text(messages.at(-1)!)}` });
}

/** `client` with every reply under one message id, as some services and proxies answer every completion. */
function sameIdClient(client: ScriptedChatClient): ChatClient {
  return {
    specificationVersion: 'v1',
    provider: client.provider,
    modelId: client.modelId,
    getResponse: async (messages, options) => {
      const response = await client.getResponse(messages, options);
      return { ...response, messages: response.messages.map((m) => ({ ...m, id: 'the-same-id' })) };
    },
    getStreamingResponse: async function* (messages, options) {
      for await (const update of client.getStreamingResponse(messages, options)) yield { ...update, messageId: 'the-same-id' };
    },
  };
}

/** `error` and its chain of causes. */
function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e = error; e !== undefined && chain.length < 10; e = (e as { cause?: unknown } | null)?.cause) chain.push(e);
  return chain;
}

/** A client that calls `lookup` when asked `weather?`, answers `sunny` after a tool result, and echoes otherwise. */
function toolClient(): ScriptedChatClient {
  return new ScriptedChatClient({
    replies: (messages): ScriptedReply | string => {
      const last = messages.at(-1)!;
      if (last.role === 'tool') return 'sunny';
      if (Message.text(last) === 'weather?') return { toolCalls: [{ name: 'lookup', arguments: { q: 'weather' } }] };
      return `re: ${Message.text(last)}`;
    },
  });
}

function lookupTool() {
  return defineTool<{ q: string }>({
    name: 'lookup',
    description: 'Looks a term up.',
    parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
    execute: ({ q }) => ({ hits: [q] }),
  });
}

function agentWith(providers: readonly ContextProvider[], client: ScriptedChatClient = echoClient()): Agent {
  return createAgent({ client, contextProviders: providers });
}

/** A plain context provider that injects one system message (`<sourceId> says hi`) every run. */
function injector(sourceId: string): ContextProvider {
  return {
    sourceId,
    beforeRun: ({ context }) => context.extendMessages(sourceId, [Message.system(`${sourceId} says hi`)]),
  };
}

/** Records every batch the provider's `saveMessages` receives, then saves it as usual. */
function recordSaves(provider: HistoryProvider): Message[][] {
  const batches: Message[][] = [];
  const original = provider.saveMessages;
  provider.saveMessages = function (this: HistoryProvider, sessionId, messages, args) {
    batches.push(structuredClone([...messages]));
    return original.call(this, sessionId, messages, args);
  };
  return batches;
}
