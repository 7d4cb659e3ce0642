import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../errors.js';
import { Message } from '../messages/message.js';
import type { CompactionStrategy } from '../contracts/compaction-strategy.js';
import type { Role } from '../contracts/message.js';
import type { Tokenizer } from '../contracts/tokenizer.js';
import { createCharacterTokenizer } from '../tokens/character-tokenizer.js';
import { flattenGroups, groupMessages, hasOrphans, splitProtected } from './message-groups.js';
import { contextWindow, pruneReasoning, slidingWindow, tokenBudget, toolResultCollapse, truncation } from './strategies.js';
import { compactWhen } from './triggers.js';

const tokenizer = createCharacterTokenizer();
const count = (m: readonly Message[]) => tokenizer.countMessageTokens(m);

interface TurnSpec {
  user: string;
  rounds: { calls: number; resultSize: number; split: boolean; between?: 'none' | Role; deferred?: boolean }[];
  answer: string;
}

/**
 * Builds a conversation: optional system message, turns of user / tool rounds / answer; the last
 * turn may be unfinished. A round may have another message between its calls and their results
 * (`between`: a stored context message, a note), and its results may arrive in the next turn, after
 * the next user message (`deferred`: a tool handed back to the caller).
 */
function build(spec: { system: boolean; turns: TurnSpec[]; unfinished: boolean }): Message[] {
  let n = 0;
  const id = () => `m${++n}`;
  const out: Message[] = [];
  let carried: Message[] = [];
  if (spec.system) out.push(Message.system('You are a helpful agent.', { id: id() }));
  spec.turns.forEach((turn, t) => {
    out.push(Message.user(turn.user || 'q', { id: id() }), ...carried);
    carried = [];
    for (const round of turn.rounds) {
      const callIds = Array.from({ length: round.calls }, () => `c${++n}`);
      out.push(
        Message.assistant(
          callIds.map((callId) => ({ type: 'function-call' as const, callId, name: 'search', arguments: '{"q":"x"}' })),
          { id: id() },
        ),
      );
      if (round.between && round.between !== 'none')
        out.push(Message[round.between === 'tool' ? 'system' : round.between]('note', { id: id() }));
      const results = callIds.map((callId) => ({
        type: 'function-result' as const,
        callId,
        name: 'search',
        result: 'r'.repeat(round.resultSize),
      }));
      const messages = round.split ? results.map((r) => Message.tool(r, { id: id() })) : [Message.tool(results, { id: id() })];
      if (round.deferred && t < spec.turns.length - 1) carried.push(...messages);
      else out.push(...messages);
    }
    const last = t === spec.turns.length - 1;
    if (!(last && spec.unfinished)) out.push(Message.assistant(turn.answer || 'a', { id: id() }));
  });
  return out;
}

const conversation = fc
  .record({
    system: fc.boolean(),
    turns: fc.array(
      fc.record({
        user: fc.string({ maxLength: 60 }),
        rounds: fc.array(
          fc.record({
            calls: fc.integer({ min: 1, max: 3 }),
            resultSize: fc.integer({ min: 0, max: 800 }),
            split: fc.boolean(),
            between: fc.constantFrom<'none' | Role>('none', 'none', 'none', 'system', 'user', 'assistant'),
            deferred: fc.boolean(),
          }),
          { maxLength: 3 },
        ),
        answer: fc.string({ maxLength: 200 }),
      }),
      { minLength: 1, maxLength: 12 },
    ),
    unfinished: fc.boolean(),
  })
  .map(build);

const ids = (m: readonly Message[]) => m.map((x) => x.id);
const lastUserIndex = (m: readonly Message[]) => m.map((x) => x.role).lastIndexOf('user');

/** Invariants every strategy keeps, whatever it removes. */
function checkInvariants(input: Message[], output: Message[]): void {
  expect(hasOrphans(output)).toBe(false);
  // system messages and everything from the newest user message on are kept, in order
  for (const m of input.filter((x) => x.role === 'system')) expect(ids(output)).toContain(m.id);
  const tail = ids(input.slice(lastUserIndex(input)));
  expect(ids(output).slice(-tail.length)).toEqual(tail);
  // what is kept keeps its order
  const positions = ids(output)
    .map((x) => ids(input).indexOf(x))
    .filter((i) => i >= 0);
  expect(positions).toEqual([...positions].sort((a, b) => a - b));
}

const strategies: Array<[string, (budget: number) => CompactionStrategy, boolean]> = [
  ['truncation by tokens', (budget) => truncation({ maxTokens: budget, tokenizer }), true],
  ['truncation by messages', (budget) => truncation({ maxMessages: Math.max(1, Math.floor(budget / 50)) }), false],
  ['slidingWindow', (budget) => slidingWindow({ maxGroups: Math.max(1, Math.floor(budget / 100)) }), false],
  ['toolResultCollapse', () => toolResultCollapse({ keepRecent: 1, minChars: 100 }), false],
  ['tokenBudget', (budget) => tokenBudget({ maxTokens: budget, tokenizer }), true],
];

describe('compaction strategies (property tests)', () => {
  for (const [name, make, enforcesTokens] of strategies) {
    it(`${name}: never orphans a call or result, keeps system and the newest turn, is idempotent`, async () => {
      await fc.assert(
        fc.asyncProperty(conversation, fc.integer({ min: 20, max: 3000 }), async (input, budget) => {
          const strategy = make(budget);
          const output = await strategy.compact(input, {});
          checkInvariants(input, output);
          expect(await strategy.compact(output, {})).toEqual(output);
          if (enforcesTokens) {
            // within budget by the exact count, unless only protected messages are left
            const onlyProtected = splitProtected(groupMessages(output)).older.length === 0;
            if (!onlyProtected) expect(count(output)).toBeLessThanOrEqual(budget);
            if (count(input) <= budget) expect(output).toEqual(input);
          }
        }),
        { numRuns: 150 },
      );
    });
  }

  it('tokenBudget returns what its strategies return one by one, each regrouping the conversation', async () => {
    // A wrapper hides the built-in strategies' grouped form, so each regroups what the one before returned.
    const opaque = (s: CompactionStrategy): CompactionStrategy => ({ compact: (m, c) => s.compact(m, c) });
    await fc.assert(
      fc.asyncProperty(conversation, fc.integer({ min: 20, max: 3000 }), async (input, budget) => {
        const chained = await tokenBudget({ maxTokens: budget, tokenizer }).compact(input, {});
        const strategies = [toolResultCollapse(), toolResultCollapse({ includeCurrentTurn: true })].map(opaque);
        expect(chained).toEqual(await tokenBudget({ maxTokens: budget, tokenizer, strategies }).compact(input, {}));
      }),
      { numRuns: 150 },
    );
  });

  it('truncation by messages holds its limit whenever droppable groups remain', async () => {
    await fc.assert(
      fc.asyncProperty(conversation, fc.integer({ min: 1, max: 40 }), async (input, maxMessages) => {
        const output = await truncation({ maxMessages }).compact(input, {});
        if (splitProtected(groupMessages(output)).older.length > 0) expect(output.length).toBeLessThanOrEqual(maxMessages);
        if (input.length <= maxMessages) expect(output).toEqual(input);
      }),
    );
  });
});

describe('compaction strategies (examples)', () => {
  const input = build({
    system: true,
    turns: [
      { user: 'find flights', rounds: [{ calls: 2, resultSize: 1000, split: false }], answer: 'found two' },
      { user: 'and hotels', rounds: [{ calls: 1, resultSize: 1000, split: true }], answer: 'one hotel' },
      { user: 'book both', rounds: [], answer: 'booked' },
    ],
    unfinished: false,
  });

  it('toolResultCollapse leaves the turn in progress alone unless asked', async () => {
    const inProgress = build({
      system: false,
      turns: [
        { user: 'old', rounds: [{ calls: 1, resultSize: 500, split: false }], answer: 'done' },
        {
          user: 'now',
          rounds: [
            { calls: 1, resultSize: 500, split: false },
            { calls: 1, resultSize: 500, split: false },
          ],
          answer: '',
        },
      ],
      unfinished: true,
    });
    const collapsedResults = (m: Message[]) =>
      m.flatMap((x) => x.contents).filter((c) => c.type === 'function-result' && String(c.result).startsWith('[collapsed')).length;
    expect(collapsedResults(await toolResultCollapse().compact(inProgress, {}))).toBe(1);
    expect(collapsedResults(await toolResultCollapse({ includeCurrentTurn: true }).compact(inProgress, {}))).toBe(2);
  });

  it('toolResultCollapse says what it removed and keeps the newest exchange', async () => {
    const output = await toolResultCollapse().compact(input, {});
    const results = output.flatMap((m) => m.contents.filter((c) => c.type === 'function-result'));
    const gist = `[collapsed: 1,000 characters of search result; the first 160 follow]\n${'r'.repeat(160)}…`;
    expect(results.map((r) => (r as { result: unknown }).result)).toEqual([gist, gist, 'r'.repeat(1000)]);
    const bare = await toolResultCollapse({ gistChars: 0 }).compact(input, {});
    expect(bare.flatMap((m) => m.contents).find((c) => c.type === 'function-result')).toMatchObject({
      result: '[collapsed: 1,000 characters of search result]',
    });
    expect(ids(output)).toEqual(ids(input));
    expect(count(output)).toBeLessThan(count(input));
    expect(Object.isFrozen(input)).toBe(false);
    expect((input[3]!.contents[0] as { result: string }).result).toBe('r'.repeat(1000)); // input untouched
  });

  it('slidingWindow keeps whole groups', async () => {
    const output = await slidingWindow({ maxGroups: 3 }).compact(input, {});
    expect(output.map((m) => Message.text(m) || m.role)).toEqual(['You are a helpful agent.', 'one hotel', 'book both', 'booked']);
    expect(hasOrphans(output)).toBe(false);
  });

  it('triggers by tokens, messages, turns or a predicate', async () => {
    const drop = truncation({ maxMessages: 4 });
    expect(await compactWhen({ messages: 100 }, drop).compact(input, {})).toEqual(input);
    expect((await compactWhen({ messages: 5 }, drop).compact(input, {})).length).toBeLessThan(input.length);
    expect(await compactWhen({ turns: 3 }, drop).compact(input, {})).toEqual(input);
    expect((await compactWhen({ turns: 2 }, drop).compact(input, {})).length).toBeLessThan(input.length);
    expect(await compactWhen({ tokens: count(input) }, drop).compact(input, {})).toEqual(input);
    expect(await compactWhen(() => false, drop).compact(input, {})).toEqual(input);
  });

  it('contextWindow compacts past the threshold down to the target', async () => {
    const total = count(input);
    const idle = contextWindow({ contextWindow: Math.ceil(total / 0.8) + 100, reserveTokens: 100, tokenizer });
    expect(await idle.compact(input, {})).toEqual(input);
    const busy = contextWindow({ contextWindow: total, reserveTokens: 0, threshold: 0.8, target: 0.5, tokenizer });
    const output = await busy.compact(input, {});
    expect(count(output)).toBeLessThanOrEqual(Math.floor(total * 0.5));
    expect(() => contextWindow({ contextWindow: 100, reserveTokens: 100 })).toThrow(ConfigurationError);
  });

  it('pairs results with their calls by call id, however far apart they sit', async () => {
    const call = (callId: string) => ({ type: 'function-call' as const, callId, name: 'lookup', arguments: '{}' });
    const result = (callId: string) => ({ type: 'function-result' as const, callId, name: 'lookup', result: 'x'.repeat(400) });
    const conversation = [
      Message.user('first', { id: 'u1' }),
      Message.assistant([call('a'), call('b')], { id: 'calls' }),
      Message.system('a stored context message', { id: 'ctx' }),
      Message.tool(result('a'), { id: 'ra' }),
      Message.assistant('handed one back', { id: 'note' }),
      Message.user('second', { id: 'u2' }),
      Message.tool(result('b'), { id: 'rb' }), // answered in the next turn, by the caller
      Message.assistant('done', { id: 'done' }),
    ];
    const groups = groupMessages(conversation);
    expect(groups.find((g) => g.kind === 'tool-exchange')!.messages.map((m) => m.id)).toEqual(['calls', 'ra', 'rb']);
    expect(groups.some((g) => g.kind === 'orphan-results')).toBe(false);
    // the exchange reaches into the newest turn, so it is protected with it
    expect(ids(flattenGroups(splitProtected(groups).recent))).toEqual(['calls', 'ra', 'u2', 'rb', 'done']);
    for (const strategy of [truncation({ maxMessages: 1 }), slidingWindow({ maxGroups: 0 }), tokenBudget({ maxTokens: 50, tokenizer })]) {
      const out = await strategy.compact(conversation, {});
      expect(hasOrphans(out)).toBe(false);
      expect(ids(out)).toEqual(['calls', 'ctx', 'ra', 'note', 'u2', 'rb', 'done'].filter((x) => ids(out).includes(x)));
      expect(ids(out)).toEqual(expect.arrayContaining(['calls', 'ra', 'rb']));
    }
  });

  it('rejects settings that cannot work', () => {
    expect(() => toolResultCollapse({ keepRecent: -1 })).toThrow(/keepRecent must be a non-negative integer, got -1/);
    expect(() => toolResultCollapse({ gistChars: 1.5 })).toThrow(ConfigurationError);
    expect(() => truncation({})).toThrow(/give maxMessages, maxTokens or both/);
    expect(() => truncation({ maxTokens: 0 })).toThrow(ConfigurationError);
    expect(() => truncation({ maxMessages: 10, target: 1.5 })).toThrow(/target must be a share/);
    expect(() => slidingWindow({ maxGroups: -2 })).toThrow(ConfigurationError);
    expect(() => tokenBudget({ maxTokens: Number.NaN })).toThrow(ConfigurationError);
    expect(() => contextWindow({ contextWindow: 10_000, threshold: 0 })).toThrow(/threshold must be a positive number/);
    expect(() => contextWindow({ contextWindow: 10_000, threshold: 0.5, target: 0.7 })).toThrow(
      /target \(0.7\) must not be above threshold \(0.5\)/,
    );
    expect(() => compactWhen({ tokens: -1 }, truncation({ maxMessages: 1 }))).toThrow(/tokens must be a non-negative integer/);
  });

  it('cuts down to its target once a limit is crossed, so the start of the prompt stays put for several turns', async () => {
    const prefixChanges = async (strategy: CompactionStrategy) => {
      let history: Message[] = [];
      let changes = 0;
      let first: string | undefined;
      for (let turn = 0; turn < 60; turn++) {
        history = await strategy.compact(
          [...history, Message.user(`q${turn}`, { id: `q${turn}` }), Message.assistant('a', { id: `a${turn}` })],
          {},
        );
        if (history[0]!.id !== first) changes++;
        first = history[0]!.id;
      }
      return changes;
    };
    const exact = await prefixChanges(truncation({ maxMessages: 20, target: 1 }));
    const stepped = await prefixChanges(truncation({ maxMessages: 20 }));
    expect(exact).toBeGreaterThan(45); // a window that slides every turn breaks the cached prefix every turn
    expect(stepped).toBeLessThan(exact / 2);
  });

  it('tokenBudget never drops system messages or the newest turn, even when they alone exceed the budget', async () => {
    const system = Message.system('s'.repeat(2000), { id: 'sys' });
    const conversation = [
      system,
      Message.user('old', { id: 'old' }),
      Message.assistant('reply', { id: 'reply' }),
      Message.user('new', { id: 'new' }),
    ];
    const out = await tokenBudget({ maxTokens: 100, tokenizer }).compact(conversation, {});
    expect(ids(out)).toEqual(['sys', 'new']);
    expect(count(out)).toBeGreaterThan(100);
  });

  it('tokenBudget counts each message once over repeated calls on the same history', async () => {
    let counted = 0;
    const counting: Tokenizer = {
      ...tokenizer,
      countMessageTokens: (messages) => {
        counted += messages.length;
        return tokenizer.countMessageTokens(messages);
      },
    };
    const history = build({
      system: true,
      turns: Array.from({ length: 6 }, () => ({ user: 'q', rounds: [{ calls: 2, resultSize: 1000, split: false }], answer: 'a' })),
      unfinished: false,
    });
    const strategy = tokenBudget({ maxTokens: 400, tokenizer: counting });
    const first = await strategy.compact(history, {});
    const once = counted;
    expect(once).toBeGreaterThan(history.length); // the collapsed results were counted too
    expect(await strategy.compact([...history], {})).toEqual(first);
    expect(counted).toBe(once);
  });

  it('pruneReasoning removes reasoning from earlier turns only', async () => {
    const reasoning = { type: 'reasoning' as const, text: 'thinking' };
    const conversation = [
      Message.user('one', { id: 'u1' }),
      Message.assistant([reasoning], { id: 'r1' }),
      Message.assistant([reasoning, { type: 'text', text: 'answer' }], { id: 'a1' }),
      Message.user('two', { id: 'u2' }),
      Message.assistant([reasoning, { type: 'text', text: 'answer' }], { id: 'a2' }),
    ];
    const out = await pruneReasoning().compact(conversation, {});
    expect(ids(out)).toEqual(['u1', 'a1', 'u2', 'a2']);
    expect(out[1]!.contents).toEqual([{ type: 'text', text: 'answer' }]);
    expect(out[3]).toBe(conversation[4]);
    expect(await pruneReasoning().compact(out, {})).toEqual(out);
  });
});
