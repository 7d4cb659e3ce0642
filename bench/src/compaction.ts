/**
 * Tokens sent per model call over a scripted 200-turn, tool-heavy agent conversation: without
 * compaction, with each ctx compaction strategy (run by a real ctx agent, in the tool loop and at
 * the run boundary), with LangChain.js `trimMessages` and with the Vercel AI SDK `pruneMessages`.
 * Every list sent is converted back to ctx messages and counted with one exact tokenizer
 * (`@ctx/openai/tokenizer`, gpt-4o / o200k). Prints absolute figures and ratios; asserts nothing
 * about timings.
 */
import { pathToFileURL } from 'node:url';
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, trimMessages, type BaseMessage } from '@langchain/core/messages';
import { pruneMessages, type ModelMessage } from 'ai';
import {
  CompactionProvider,
  contextWindow,
  createAgent,
  defineTool,
  InMemoryHistoryProvider,
  Message,
  slidingWindow,
  summarization,
  tokenBudget,
  toolResultCollapse,
  truncation,
  type ChatClient,
  type ChatOptions,
  type ChatResponse,
  type ChatResponseUpdate,
  type CompactionStrategy,
  type Content,
  type FunctionResultContent,
  type JsonObject,
  type JsonValue,
  type Role,
  type Tokenizer,
} from '@ctx/core';
import { hasOrphans } from '@ctx/core/backend';
import { ScriptedChatClient } from '@ctx/core/testing';
import { createOpenAITokenizer } from '@ctx/openai/tokenizer';
import { fmtRatio, printTable, settle } from './timing.js';

/** Turns of the script; COMPACTION_TURNS=<n> runs a shorter one (a quick check of the script itself). */
const TURNS = Number(process.env.COMPACTION_TURNS ?? 200);
/** The token budget B of the budgeted strategies and of `trimMessages`. */
const BUDGET = 8_000;
/** gpt-4o's context window: a list above it would be rejected for length. */
const MODEL_WINDOW = 128_000;
const SEED = 0x5eed_c7;

const INSTRUCTIONS =
  'You are the support agent of Northwind Outfitters. Look things up with the tools before you answer: orders, tickets and the help centre. Cite order and ticket ids, never promise a refund outside the policy, and answer in at most 120 words.';

// ---------------------------------------------------------------------------------------------
// The scripted conversation (deterministic, library-neutral)
// ---------------------------------------------------------------------------------------------

/** Deterministic PRNG (mulberry32). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TOOL_NAMES = ['search_docs', 'get_order', 'list_tickets', 'fetch_page'] as const;
type ToolName = (typeof TOOL_NAMES)[number];

/** One function call of the script, with the result its tool returns. */
interface ScriptedCall {
  callId: string;
  name: ToolName;
  args: JsonObject;
  result: JsonObject;
}

/** One user turn: the question, 1-3 tool rounds of 1-3 calls each, the final answer. */
interface ScriptedTurn {
  question: string;
  rounds: ScriptedCall[][];
  answer: string;
}

const WORDS = (
  'order delivery carrier warehouse refund return label invoice payment card customer account ' +
  'shipment tracking parcel delay weekend premium plan support ticket agent policy credit store ' +
  'replacement damaged item size colour jacket boots backpack tent stove rain shell fleece glove ' +
  'address postcode courier depot scan route update estimate window morning afternoon escalation ' +
  'priority billing charge duplicate discount voucher code spring sale warranty repair seam zip ' +
  'stitching exchange stock inventory Rotterdam Leeds Lyon Hamburg transfer pickup locker signature'
).split(' ');
const VERBS = 'confirms reports shows requests explains lists notes mentions flags expects'.split(' ');
const STATUSES = ['processing', 'packed', 'shipped', 'in_transit', 'out_for_delivery', 'delivered', 'returned'];
const TICKET_STATES = ['open', 'pending', 'waiting_on_customer', 'solved', 'closed'];
const PRIORITIES = ['low', 'normal', 'high', 'urgent'];
const CITIES = ['Rotterdam', 'Leeds', 'Lyon', 'Hamburg', 'Antwerp', 'Milan', 'Porto', 'Gdansk'];

const QUESTIONS = [
  'Why is order {order} still showing {status}? The customer was promised delivery by Friday and is asking for a refund.',
  'Can you pull the open tickets for customer {customer} and tell me whether any of them mention a damaged {item}?',
  'What does the help centre say about returning a {item} bought in the spring sale after 30 days?',
  'Order {order} was charged twice according to the customer. Check the payment events and our duplicate-charge policy.',
  'The customer {customer} wants to swap the {item} in order {order} for a larger size. Is it in stock, and how do we arrange the exchange?',
  'Summarise everything we know about customer {customer}: recent orders, open tickets and anything we promised them.',
  'Is the warranty on the {item} two years or three? The customer has a broken zip and order {order} is from last spring.',
  'Compare the delivery estimates for {city} and give me the fastest option for order {order}.',
];

class ScriptBuilder {
  readonly #r: () => number;
  constructor(seed: number) {
    this.#r = prng(seed);
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.#r() * (max - min + 1));
  }
  pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.#r() * list.length)]!;
  }
  alnum(n: number): string {
    const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
    let s = '';
    for (let i = 0; i < n; i++) s += chars[Math.floor(this.#r() * chars.length)];
    return s;
  }
  words(n: number): string {
    return Array.from({ length: n }, () => this.pick(WORDS)).join(' ');
  }
  sentence(min: number, max: number): string {
    const s = `${this.words(2)} ${this.pick(VERBS)} ${this.words(this.int(min, max) - 3)}.`;
    return s[0]!.toUpperCase() + s.slice(1);
  }
  date(): string {
    return `2025-${String(this.int(1, 12)).padStart(2, '0')}-${String(this.int(1, 28)).padStart(2, '0')}T${String(this.int(6, 21)).padStart(2, '0')}:${String(this.int(0, 59)).padStart(2, '0')}:00Z`;
  }
  order = () => `NW-${this.int(10000, 99999)}`;
  customer = () => `cus_${this.alnum(10)}`;

  /** Adds items to `base[key]` until its JSON reaches `target` characters; never above 3,000. */
  fill(base: JsonObject, key: string, item: () => JsonValue, target: number): JsonObject {
    const list: JsonValue[] = [];
    base[key] = list;
    while (JSON.stringify(base).length < target) list.push(item());
    if (JSON.stringify(base).length > 3000 && list.length > 1) list.pop();
    return base;
  }

  call(name: ToolName, order: string, customer: string): ScriptedCall {
    const target = this.int(300, 3000);
    const callId = `call_${this.alnum(24)}`;
    switch (name) {
      case 'search_docs': {
        const query = this.words(this.int(3, 6));
        const base: JsonObject = { query, total_hits: this.int(3, 240), took_ms: this.int(4, 90) };
        const result = this.fill(
          base,
          'results',
          () => {
            const title = this.words(this.int(3, 7));
            return {
              id: `kb-${this.int(1000, 9999)}`,
              title: title[0]!.toUpperCase() + title.slice(1),
              url: `https://help.northwind.example/articles/${title.replaceAll(' ', '-')}`,
              snippet: `${this.sentence(12, 30)} ${this.sentence(8, 20)}`,
              score: this.int(300, 990) / 1000,
              updated_at: this.date(),
            };
          },
          target,
        );
        return { callId, name, args: { query, limit: 5 }, result };
      }
      case 'get_order': {
        const base: JsonObject = {
          order_id: order,
          customer_id: customer,
          status: this.pick(STATUSES),
          placed_at: this.date(),
          total: { amount: this.int(2000, 60000) / 100, currency: 'EUR' },
          items: Array.from({ length: this.int(1, 3) }, () => ({
            sku: `SKU-${this.int(1000, 9999)}`,
            name: this.words(2),
            qty: this.int(1, 3),
            unit_price: this.int(900, 25000) / 100,
          })),
        };
        const result = this.fill(
          base,
          'events',
          () => ({ at: this.date(), location: this.pick(CITIES), status: this.pick(STATUSES), note: this.sentence(6, 16) }),
          target,
        );
        return { callId, name, args: { order_id: order }, result };
      }
      case 'list_tickets': {
        const status = this.pick(['open', 'any']);
        const base: JsonObject = { customer_id: customer, filter: status };
        const result = this.fill(
          base,
          'tickets',
          () => ({
            id: `T-${this.int(100000, 999999)}`,
            subject: this.words(this.int(4, 8)),
            status: this.pick(TICKET_STATES),
            priority: this.pick(PRIORITIES),
            created_at: this.date(),
            updated_at: this.date(),
            last_message: this.sentence(10, 28),
          }),
          target,
        );
        return { callId, name, args: { customer_id: customer, status }, result };
      }
      case 'fetch_page': {
        const url = `https://help.northwind.example/policies/${this.words(2).replaceAll(' ', '-')}`;
        const base: JsonObject = { url, status: 200, title: this.words(this.int(3, 6)), fetched_at: this.date() };
        const result = this.fill(
          base,
          'sections',
          () => ({ heading: this.words(this.int(2, 5)), text: `${this.sentence(15, 40)} ${this.sentence(10, 30)}` }),
          target,
        );
        return { callId, name, args: { url }, result };
      }
    }
  }

  turn(): ScriptedTurn {
    const order = this.order();
    const customer = this.customer();
    const question = this.pick(QUESTIONS)
      .replaceAll('{order}', order)
      .replaceAll('{customer}', customer)
      .replaceAll('{status}', this.pick(STATUSES))
      .replaceAll('{item}', this.pick(['jacket', 'tent', 'backpack', 'rain shell', 'stove', 'boots']))
      .replaceAll('{city}', this.pick(CITIES));
    const rounds = Array.from({ length: this.int(1, 3) }, () =>
      Array.from({ length: this.int(1, 3) }, () => this.call(this.pick(TOOL_NAMES), order, customer)),
    );
    const sentences: string[] = [];
    const target = this.int(40, 120);
    let words = 0;
    while (words < target) {
      const s = this.sentence(8, 22);
      sentences.push(s);
      words += s.split(' ').length;
    }
    return { question, rounds, answer: `About ${order}: ${sentences.join(' ')}` };
  }
}

/** The conversation of `turns` turns; the same for every run. */
function makeScript(turns: number): ScriptedTurn[] {
  const b = new ScriptBuilder(SEED);
  return Array.from({ length: turns }, () => b.turn());
}

/** The turn as ctx messages, as ctx's tool loop writes them (one tool message per round). */
function turnMessages(turn: ScriptedTurn): Message[] {
  const out = [Message.user(turn.question)];
  for (const round of turn.rounds) {
    out.push(
      Message.assistant(
        round.map((c): Content => ({ type: 'function-call', callId: c.callId, name: c.name, arguments: JSON.stringify(c.args) })),
      ),
    );
    out.push(
      Message.tool(
        round.map((c): FunctionResultContent => ({ type: 'function-result', callId: c.callId, name: c.name, result: c.result })),
      ),
    );
  }
  out.push(Message.assistant(turn.answer));
  return out;
}

/**
 * The whole conversation with the system message first, and for every model call the length of
 * the prefix it sees: the first call of a turn sees the history and the question, each later call
 * also the tool rounds so far.
 */
function referenceConversation(script: ScriptedTurn[]): Reference {
  const messages: Message[] = [SYSTEM_MESSAGE];
  const callEnds: number[] = [];
  const callStarts: number[] = [];
  for (const turn of script) {
    const start = messages.length;
    messages.push(...turnMessages(turn));
    for (let k = 0; k <= turn.rounds.length; k++) {
      callStarts.push(start);
      callEnds.push(start + 1 + 2 * k);
    }
  }
  return { messages, callEnds, callStarts };
}

/** The uncompacted conversation and, per model call, where its turn starts and where what it sees ends. */
interface Reference {
  messages: Message[];
  callEnds: number[];
  callStarts: number[];
}

// ---------------------------------------------------------------------------------------------
// Counting (one exact tokenizer for every row)
// ---------------------------------------------------------------------------------------------

const tokenizer = createOpenAITokenizer({ model: 'gpt-4o' });
/** What the instructions cost when sent: the service receives them as a system message. */
const SYSTEM_MESSAGE = Message.system(INSTRUCTIONS);
/** Reply priming: `countMessageTokens([])`. The tokenizer counts a list as this plus a sum over its messages. */
const LIST_BASE = tokenizer.countMessageTokens([]);
const framingCache = new Map<Role, number>();
/** Tokens of a message with no contents (framing and role). */
function framing(role: Role): number {
  let n = framingCache.get(role);
  if (n === undefined) framingCache.set(role, (n = tokenizer.countMessageTokens([{ id: '', role, contents: [] }]) - LIST_BASE));
  return n;
}

/** Per-message token counts, cached by object and by content; exact: a list costs `LIST_BASE` plus its messages. */
class TokenCache {
  readonly #byObject = new WeakMap<Message, number>();
  readonly #byContent = new Map<string, number>();

  /** Tokens one message adds to a list. */
  messageTokens(m: Message): number {
    let n = this.#byObject.get(m);
    if (n === undefined) {
      const key = `${m.role}\u0000${m.authorName ?? ''}\u0000${JSON.stringify(m.contents)}`;
      n = this.#byContent.get(key);
      if (n === undefined) this.#byContent.set(key, (n = tokenizer.countMessageTokens([m]) - LIST_BASE));
      this.#byObject.set(m, n);
    }
    return n;
  }

  /** `tokenizer.countMessageTokens(messages)`. */
  count(messages: readonly Message[]): number {
    let total = LIST_BASE;
    for (const m of messages) total += this.messageTokens(m);
    return total;
  }
}

/** The cache the figures are counted with (outside every timed section). */
const figures = new TokenCache();
const countTokens = (messages: readonly Message[]) => figures.count(messages);

/**
 * Whether the service would reject the list: no message besides the system ones, a first
 * message that is a tool result, or a function call without its result (or the reverse).
 */
function rejection(messages: readonly Message[]): 'empty' | 'starts-with-result' | 'orphans' | undefined {
  const first = messages.find((m) => m.role !== 'system');
  if (!first) return 'empty';
  if (first.contents.some((c) => c.type === 'function-result')) return 'starts-with-result';
  return hasOrphans(messages) ? 'orphans' : undefined;
}

const resultText = (r: JsonValue) => (typeof r === 'string' ? r : JSON.stringify(r));

/** What the model reads of a message: its role and contents (ids and metadata are not sent). */
const sentKey = (m: Message) => `${m.role}\u0000${JSON.stringify(m.contents)}`;

/** Tokens of the leading messages `sent` shares with `previous`, as the service reads them. */
function repeatedPrefix(previous: readonly Message[], sent: readonly Message[]): number {
  let tokens = 0;
  for (let i = 0; i < previous.length && i < sent.length && sentKey(previous[i]!) === sentKey(sent[i]!); i++)
    tokens += figures.messageTokens(sent[i]!);
  return tokens;
}

/**
 * OpenAI's prompt cache: a repeated prefix of at least 1,024 tokens is billed as cached, in steps
 * of 128 tokens (what `usage.prompt_tokens_details.cached_tokens` reports).
 */
function cachedTokens(repeated: number): number {
  return repeated < 1024 ? 0 : Math.floor(repeated / 128) * 128;
}

/** Input tokens billed when cached tokens cost `price` (a share of the normal price). */
function billable(tally: Tally, price: number): number {
  let total = 0;
  tally.tokens.forEach((t, i) => {
    const cached = Math.min(t, cachedTokens(tally.repeated[i]!));
    total += t - cached + cached * price;
  });
  return total;
}

/** The figures of one row, collected call by call. */
class Tally {
  constructor(readonly reference: Reference) {}
  readonly tokens: number[] = [];
  /** Calls that miss a tool result of their own turn, or see it collapsed. */
  lostCurrentResults = 0;
  /** Rejected calls by reason. */
  readonly rejections = new Map<string, number>();
  /** ctx rows: ms inside the strategy during the agent run (on the history as the agent compacted and stored it). */
  strategyMs = 0;
  /** Calls that miss the system message (instructions lost). */
  noSystem = 0;
  get rejected(): number {
    let n = 0;
    for (const v of this.rejections.values()) n += v;
    return n;
  }
  /** Per call: tokens at the start of the list that repeat the previous call's list (what a prompt cache can reuse). */
  readonly repeated: number[] = [];
  #previous: readonly Message[] = [];
  add(sent: readonly Message[]): void {
    this.tokens.push(countTokens(sent));
    this.repeated.push(repeatedPrefix(this.#previous, sent));
    this.#previous = sent;
    const reason = rejection(sent);
    if (reason) this.rejections.set(reason, (this.rejections.get(reason) ?? 0) + 1);
    if (!sent.some((m) => m.role === 'system' && Message.text(m) === INSTRUCTIONS)) this.noSystem++;
    const i = this.tokens.length - 1;
    const expected = this.reference.messages.slice(this.reference.callStarts[i], this.reference.callEnds[i]).flatMap((m) => m.contents);
    if (expected.some((c) => c.type === 'function-result')) {
      const seen = new Map<string, string>();
      for (const m of sent) for (const c of m.contents) if (c.type === 'function-result') seen.set(c.callId, resultText(c.result));
      if (expected.some((c) => c.type === 'function-result' && seen.get(c.callId) !== resultText(c.result))) this.lostCurrentResults++;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// ctx: a real agent (history, CompactionProvider at the boundary, `compaction` in the tool loop)
// ---------------------------------------------------------------------------------------------

/** A `ChatClient` that plays the script: tool calls round by round, then the answer. Reports what it receives. */
class ScriptClient implements ChatClient {
  readonly specificationVersion = 'v1' as const;
  readonly provider = 'bench-script';
  readonly modelId = 'gpt-4o';
  #turn = 0;
  #round = 0;
  constructor(
    readonly script: readonly ScriptedTurn[],
    readonly onCall: (messages: Message[], options: ChatOptions) => void,
  ) {}

  async getResponse(messages: Message[], options: ChatOptions): Promise<ChatResponse> {
    this.onCall(messages, options);
    const turn = this.script[this.#turn]!;
    const round = turn.rounds[this.#round++];
    if (round) {
      const calls = round.map(
        (c): Content => ({ type: 'function-call', callId: c.callId, name: c.name, arguments: JSON.stringify(c.args) }),
      );
      return { messages: [Message.assistant(calls)], finishReason: 'tool-calls' };
    }
    this.#turn++;
    this.#round = 0;
    return { messages: [Message.assistant(turn.answer)], finishReason: 'stop' };
  }

  getStreamingResponse(): AsyncIterable<ChatResponseUpdate> {
    throw new Error('ScriptClient does not stream');
  }
}

type Phase = 'beforeRun' | 'tool loop';

/** Measures the time spent inside `compact`; `phase` names the caller for the summarizer's record. */
function timed(strategy: CompactionStrategy, tally: Tally, phase: () => Phase, summarizer: Summarizer): CompactionStrategy {
  return {
    async compact(messages, options) {
      summarizer.phase = phase();
      const t0 = performance.now();
      try {
        return await strategy.compact(messages, options);
      } finally {
        tally.strategyMs += performance.now() - t0;
      }
    },
  };
}

/** Runs the script through `createAgent`; with a strategy, the same one runs in the tool loop and at the boundary. */
async function runCtx(
  script: readonly ScriptedTurn[],
  reference: Reference,
  strategy: CompactionStrategy | undefined,
  summarizer: Summarizer,
): Promise<Tally> {
  const tally = new Tally(reference);
  const results = new Map<string, JsonObject>();
  for (const turn of script) for (const round of turn.rounds) for (const c of round) results.set(c.callId, c.result);
  const tools = TOOL_NAMES.map((name) =>
    defineTool({
      name,
      description: `The ${name.replace('_', ' ')} tool.`,
      parameters: { type: 'object' },
      execute: (_args: JsonObject, { callId }) => results.get(callId)!,
    }),
  );
  // CompactionProvider compacts (and stores) before the first model call of each run.
  const client = new ScriptClient(script, (messages, options) => {
    if (options.instructions !== INSTRUCTIONS) throw new Error(`unexpected instructions: ${options.instructions}`);
    tally.add([SYSTEM_MESSAGE, ...messages]);
  });
  const boundary = (): Phase => 'beforeRun';
  const agent = createAgent({
    client,
    instructions: INSTRUCTIONS,
    tools,
    contextProviders: [
      new InMemoryHistoryProvider(),
      ...(strategy ? [new CompactionProvider({ strategy: timed(strategy, tally, boundary, summarizer) })] : []),
    ],
    ...(strategy ? { compaction: timed(strategy, tally, () => 'tool loop', summarizer) } : {}),
  });
  const session = agent.createSession();
  for (const turn of script) await agent.run(turn.question, { session });
  return tally;
}

// ---------------------------------------------------------------------------------------------
// LangChain.js: trimMessages before every call, on the full history
// ---------------------------------------------------------------------------------------------

/** ctx messages to LangChain messages (one `ToolMessage` per result), with the LangChain length after each ctx prefix. */
function toLangChain(messages: readonly Message[]): { list: BaseMessage[]; endOf: number[] } {
  const list: BaseMessage[] = [];
  const endOf = [0];
  for (const m of messages) {
    const text = Message.text(m);
    if (m.role === 'system') list.push(new SystemMessage({ id: m.id, content: text }));
    else if (m.role === 'user') list.push(new HumanMessage({ id: m.id, content: text }));
    else if (m.role === 'assistant') {
      const calls = Message.functionCalls(m).map((c) => ({
        id: c.callId,
        name: c.name,
        args: JSON.parse(c.arguments) as Record<string, unknown>,
        type: 'tool_call' as const,
      }));
      list.push(new AIMessage({ id: m.id, content: text, tool_calls: calls }));
    } else {
      m.contents.forEach((c, i) => {
        if (c.type !== 'function-result') return;
        list.push(
          new ToolMessage({
            id: `${m.id}-${i}`,
            content: typeof c.result === 'string' ? c.result : JSON.stringify(c.result),
            tool_call_id: c.callId,
            name: c.name,
          }),
        );
      });
    }
    endOf.push(list.length);
  }
  return { list, endOf };
}

/** LangChain messages back to ctx messages; consecutive `ToolMessage`s become one tool message, as ctx writes a round. */
function fromLangChain(list: readonly BaseMessage[]): Message[] {
  const out: Message[] = [];
  let previousWasTool = false;
  for (const m of list) {
    const type = m.getType();
    const text =
      typeof m.content === 'string'
        ? m.content
        : m.content.map((b) => (b.type === 'text' && typeof b.text === 'string' ? b.text : '')).join('');
    const id = m.id ?? '';
    if (type === 'tool') {
      const t = m as ToolMessage;
      const result: FunctionResultContent = {
        type: 'function-result',
        callId: t.tool_call_id,
        result: text,
        ...(t.name ? { name: t.name } : {}),
      };
      if (previousWasTool) out[out.length - 1]!.contents.push(result);
      else out.push({ id, role: 'tool', contents: [result] });
    } else if (type === 'ai') {
      const contents: Content[] = text ? [{ type: 'text', text }] : [];
      for (const c of (m as AIMessage).tool_calls ?? [])
        contents.push({ type: 'function-call', callId: c.id ?? '', name: c.name, arguments: JSON.stringify(c.args) });
      out.push({ id, role: 'assistant', contents });
    } else out.push({ id, role: type === 'system' ? 'system' : 'user', contents: [{ type: 'text', text }] });
    previousWasTool = type === 'tool';
  }
  return out;
}

/**
 * The `tokenCounter` given to trimMessages: exactly `countMessageTokens(fromLangChain(msgs))`
 * (checked below), cached per message id. trimMessages calls it on every suffix of the history
 * (O(n^2) messages per call), so an uncached exact count would take hours here.
 */
function langChainCounter(stats: { calls: number; messages: number }): (msgs: BaseMessage[]) => number {
  const contentTokens = new Map<string, number>();
  return (msgs) => {
    stats.calls++;
    stats.messages += msgs.length;
    let total = LIST_BASE;
    let previousWasTool = false;
    for (const m of msgs) {
      const isTool = m.getType() === 'tool';
      const key = m.id ?? '';
      let n = contentTokens.get(key);
      if (n === undefined || key === '') {
        const [back] = fromLangChain([m]);
        n = tokenizer.countMessageTokens([back!]) - LIST_BASE - framing(back!.role);
        if (key) contentTokens.set(key, n);
      }
      total +=
        n +
        (isTool && previousWasTool
          ? 0
          : framing(isTool ? 'tool' : m.getType() === 'ai' ? 'assistant' : m.getType() === 'system' ? 'system' : 'user'));
      previousWasTool = isTool;
    }
    return total;
  };
}

async function runLangChain(
  reference: Reference,
  extra: { startOn?: 'human'; includeSystem?: boolean },
): Promise<Tally & { counter: { calls: number; messages: number } }> {
  const tally = Object.assign(new Tally(reference), { counter: { calls: 0, messages: 0 } });
  const { list, endOf } = toLangChain(reference.messages);
  const tokenCounter = langChainCounter(tally.counter);
  for (const end of reference.callEnds) {
    const trimmed = await trimMessages(list.slice(0, endOf[end]!), { maxTokens: BUDGET, strategy: 'last', tokenCounter, ...extra });
    tally.add(fromLangChain(trimmed));
  }
  return tally;
}

// ---------------------------------------------------------------------------------------------
// Vercel AI SDK: pruneMessages before every call, on the full history
// ---------------------------------------------------------------------------------------------

/** ctx messages to AI SDK model messages (one tool message per round, as ctx). */
function toModelMessages(messages: readonly Message[]): ModelMessage[] {
  return messages.map((m): ModelMessage => {
    const text = Message.text(m);
    if (m.role === 'system') return { role: 'system', content: text };
    if (m.role === 'user') return { role: 'user', content: text };
    if (m.role === 'assistant') {
      const calls = Message.functionCalls(m);
      if (calls.length === 0) return { role: 'assistant', content: [{ type: 'text', text }] };
      return {
        role: 'assistant',
        content: calls.map((c) => ({
          type: 'tool-call' as const,
          toolCallId: c.callId,
          toolName: c.name,
          input: JSON.parse(c.arguments) as unknown,
        })),
      };
    }
    return {
      role: 'tool',
      content: m.contents.flatMap((c) =>
        c.type === 'function-result'
          ? [
              {
                type: 'tool-result' as const,
                toolCallId: c.callId,
                toolName: c.name ?? '',
                output: { type: 'json' as const, value: c.result },
              },
            ]
          : [],
      ),
    };
  });
}

/** AI SDK model messages back to ctx messages. */
function fromModelMessages(list: readonly ModelMessage[]): Message[] {
  return list.map((m): Message => {
    if (m.role === 'system') return { id: '', role: 'system', contents: [{ type: 'text', text: m.content }] };
    if (typeof m.content === 'string') return { id: '', role: m.role, contents: [{ type: 'text', text: m.content }] };
    const contents: Content[] = [];
    for (const part of m.content) {
      if (part.type === 'text') contents.push({ type: 'text', text: part.text });
      else if (part.type === 'tool-call')
        contents.push({ type: 'function-call', callId: part.toolCallId, name: part.toolName, arguments: JSON.stringify(part.input) });
      else if (part.type === 'tool-result') {
        const output = part.output;
        const result = output.type === 'json' || output.type === 'text' ? (output.value as JsonValue) : JSON.stringify(output);
        contents.push({ type: 'function-result', callId: part.toolCallId, name: part.toolName, result });
      }
    }
    return { id: '', role: m.role, contents };
  });
}

async function runAiSdk(reference: Reference): Promise<Tally> {
  const tally = new Tally(reference);
  const all = toModelMessages(reference.messages);
  for (const end of reference.callEnds) tally.add(fromModelMessages(prune(all.slice(0, end))));
  return tally;
}

/** `pruneMessages` with the settings of its docs' example. */
function prune(messages: ModelMessage[]): ModelMessage[] {
  return pruneMessages({ messages, reasoning: 'before-last-message', toolCalls: 'before-last-2-messages', emptyMessages: 'remove' });
}

// ---------------------------------------------------------------------------------------------
// Strategy time on the same histories
// ---------------------------------------------------------------------------------------------

/** One way to compact, timed on the history each model call would see without compaction. */
interface TimedSide {
  label: string;
  /** The side's own shape of the uncompacted history up to `end` (an index into the reference), built untimed. */
  input: (end: number) => unknown;
  /** The timed call. */
  compact: (input: never) => unknown;
}

/**
 * CPU ms (user + system) each side spends compacting, summed over every model call of the script,
 * every side given the same uncompacted history for each call (the whole conversation so far, in
 * its own message shape). The sides take turns call by call, the one that goes first rotating, so
 * load on a shared machine hits every side alike.
 */
async function timeOnSameHistories(reference: Reference, sides: readonly TimedSide[]): Promise<Map<string, number>> {
  const cpuMs = sides.map(() => 0);
  settle();
  for (const [i, end] of reference.callEnds.entries()) {
    for (let k = 0; k < sides.length; k++) {
      const s = (i + k) % sides.length;
      const side = sides[s]!;
      const input = side.input(end) as never;
      const before = process.cpuUsage();
      await side.compact(input);
      const used = process.cpuUsage(before);
      cpuMs[s]! += (used.user + used.system) / 1000;
    }
  }
  return new Map(sides.map((side, i) => [side.label, cpuMs[i]!]));
}

// ---------------------------------------------------------------------------------------------
// The benchmark
// ---------------------------------------------------------------------------------------------

/** What the scripted summarizer returns: about 150 words. */
const SUMMARY = `The customer support conversation so far covered several orders, their shipping events and the refund and warranty policies that apply to them; the agent looked up tickets for each customer, confirmed which were still open, quoted the help centre on returns after thirty days, the duplicate charge procedure and the two year warranty on zips and seams, and promised a callback on the delayed parcel to Rotterdam. Open questions: whether the replacement jacket ships before Friday, whether the voucher from the spring sale can be combined with store credit, and which carrier depot holds the parcel that was scanned twice in Leeds. Numbers that matter: order totals between 20 and 600 euros, three open tickets marked high priority, one urgent escalation, and a promised answer within one working day. Decisions: refunds only inside the policy window; exchanges through a prepaid label; the customer prefers email over phone and wants every update in writing.`;

/** A ctx row: the strategy, built with the tokenizer (and summarizer client) given. */
interface Variant {
  label: string;
  make?: (tokenizer: Tokenizer, summarizer: ChatClient) => CompactionStrategy;
  /** False for strategies that count no tokens. Default true. */
  countsTokens?: boolean;
}

/** The summarizer: a ScriptedChatClient answering SUMMARY, with each call's phase (before the run, tool loop, after the run). */
class Summarizer {
  phase: Phase = 'tool loop';
  readonly phases: Phase[] = [];
  /** Tokens of the summaries it wrote. */
  outputTokens = 0;
  readonly client = new ScriptedChatClient({
    replies: () => {
      this.phases.push(this.phase);
      this.outputTokens += tokenizer.countTokens(SUMMARY);
      return SUMMARY;
    },
  });
  get calls(): number {
    return this.client.calls.length;
  }
  /** Tokens of what it was sent: the transcripts and its instructions. */
  get inputTokens(): number {
    return this.client.calls.reduce((n, c) => n + countTokens(c.messages) + tokenizer.countTokens(c.options.instructions ?? ''), 0);
  }
  /** Distinct transcripts summarized. */
  get distinct(): number {
    return new Set(this.client.calls.map((c) => Message.text(c.messages[0]!))).size;
  }
  byPhase(): string {
    const n = (p: Phase) => this.phases.filter((x) => x === p).length;
    return (['beforeRun', 'tool loop'] as const).map((p) => `${n(p)} ${p}`).join(', ');
  }
}

/** A summarizer that answers SUMMARY and keeps nothing (the timing pass summarizes long transcripts on every call). */
const fixedSummarizer: ChatClient = {
  specificationVersion: 'v1',
  provider: 'bench',
  modelId: 'summarizer',
  getResponse: async () => ({ messages: [Message.assistant(SUMMARY)], finishReason: 'stop' }),
  getStreamingResponse: () => {
    throw new Error('the summarizer does not stream');
  },
};

/** One row of the table. */
interface Row {
  label: string;
  tally: Tally;
}

/** Runs every variant and prints the table and notes. */
export async function compactionBench(): Promise<Row[]> {
  const started = performance.now();
  const script = makeScript(TURNS);
  const reference = referenceConversation(script);
  const resultSizes = script.flatMap((t) => t.rounds.flat().map((c) => JSON.stringify(c.result).length));
  if (Math.min(...resultSizes) < 300 || Math.max(...resultSizes) > 3000) throw new Error('a tool result is outside 300-3,000 characters');
  const fullTokens = countTokens(reference.messages);
  if (fullTokens !== tokenizer.countMessageTokens(reference.messages)) throw new Error('the cached count differs from the tokenizer');

  console.log('\n## Compaction: tokens sent per model call (scripted tool-heavy agent, no network)\n');
  console.log(
    `${TURNS} turns, ${reference.callEnds.length} model calls, ${resultSizes.length} tool results of ${Math.min(...resultSizes).toLocaleString('en-US')}-${Math.max(...resultSizes).toLocaleString('en-US')} characters of JSON ` +
      `(mean ${Math.round(resultSizes.reduce((a, b) => a + b, 0) / resultSizes.length).toLocaleString('en-US')}); the whole conversation is ${fullTokens.toLocaleString('en-US')} tokens.`,
  );
  console.log(
    `Every list sent is converted to ctx messages and counted with createOpenAITokenizer({ model: 'gpt-4o' }) (system message included).`,
  );
  console.log(
    `The instructions go with every call as a system message of ${countTokens([SYSTEM_MESSAGE]) - LIST_BASE} tokens (ctx passes them beside the messages, so its budgets do`,
  );
  console.log(
    `not include them; LangChain's does). B = ${BUDGET.toLocaleString('en-US')} tokens. Ratio = total tokens of the row / total without compaction.\n`,
  );

  const variants: Variant[] = [
    { label: 'no compaction (everything sent)' },
    {
      label: 'ctx truncation({ maxTokens: B, target: 1 }) (cut just enough)',
      make: (tk) => truncation({ maxTokens: BUDGET, target: 1, tokenizer: tk }),
    },
    { label: 'ctx truncation({ maxTokens: B })', make: (tk) => truncation({ maxTokens: BUDGET, tokenizer: tk }) },
    { label: 'ctx slidingWindow({ maxGroups: 20 })', make: () => slidingWindow({ maxGroups: 20 }), countsTokens: false },
    { label: 'ctx toolResultCollapse({ keepRecent: 1 })', make: () => toolResultCollapse({ keepRecent: 1 }), countsTokens: false },
    {
      label: 'ctx tokenBudget({ maxTokens: B, target: 1 }) (cut just enough)',
      make: (tk) => tokenBudget({ maxTokens: BUDGET, target: 1, tokenizer: tk }),
    },
    { label: 'ctx tokenBudget({ maxTokens: B })', make: (tk) => tokenBudget({ maxTokens: BUDGET, tokenizer: tk }) },
    {
      label: 'ctx contextWindow({ 16000, reserve 2000 })',
      make: (tk) => contextWindow({ contextWindow: 16_000, reserveTokens: 2_000, tokenizer: tk }),
    },
    {
      label: 'ctx summarization({ keepRecentGroups: 6, trigger B })',
      make: (tk, client) => summarization({ client, keepRecentGroups: 6, trigger: { tokens: BUDGET, tokenizer: tk } }),
    },
  ];
  const rows: Row[] = [];
  const summarizers = new Map<string, Summarizer>();
  // COMPACTION_ONLY=<regex> runs only the ctx variants whose label matches (and the baseline), to try settings.
  const only = process.env.COMPACTION_ONLY ? new RegExp(process.env.COMPACTION_ONLY) : undefined;
  for (const v of variants) {
    if (only && v.make && !only.test(v.label)) continue;
    settle();
    const summarizer = new Summarizer();
    summarizers.set(v.label, summarizer);
    rows.push({ label: v.label, tally: await runCtx(script, reference, v.make?.(tokenizer, summarizer.client), summarizer) });
  }
  // The agent without compaction must send exactly the reference prefixes.
  const none = rows[0]!.tally;
  reference.callEnds.forEach((end, i) => {
    if (none.tokens[i] !== countTokens(reference.messages.slice(0, end)))
      throw new Error(`call ${i}: the agent sent something other than the reference prefix`);
  });

  // The LangChain counter must equal the tokenizer on converted-back messages; conversions must not change counts.
  const probe = toLangChain(reference.messages).list.slice(0, 40);
  if (langChainCounter({ calls: 0, messages: 0 })(probe) !== tokenizer.countMessageTokens(fromLangChain(probe)))
    throw new Error('the LangChain token counter differs from the tokenizer');
  if (countTokens(fromLangChain(toLangChain(reference.messages).list)) !== fullTokens)
    throw new Error('LangChain conversion changes the token count');
  if (countTokens(fromModelMessages(toModelMessages(reference.messages))) !== fullTokens)
    throw new Error('AI SDK conversion changes the token count');

  // LangChain's documented setup first: its docs pair trimMessages with startOn 'human' and includeSystem.
  const LC_DOCUMENTED = { startOn: 'human', includeSystem: true } as const;
  settle();
  const lcDocumented = await runLangChain(reference, LC_DOCUMENTED);
  rows.push({
    label: `LangChain trimMessages({ maxTokens: B, strategy: 'last', startOn: 'human', includeSystem: true })`,
    tally: lcDocumented,
  });
  settle();
  const lcPlain = await runLangChain(reference, {});
  rows.push({ label: `LangChain trimMessages({ maxTokens: B, strategy: 'last' }) (minimal)`, tally: lcPlain });
  settle();
  rows.push({ label: `AI SDK pruneMessages({ toolCalls: 'before-last-2-messages' })`, tally: await runAiSdk(reference) });

  // Strategy time: every side compacts the same uncompacted history before each call, in turns.
  const { list: lcList, endOf } = toLangChain(reference.messages);
  const modelMessages = toModelMessages(reference.messages);
  const timedSides: TimedSide[] = variants.flatMap((v): TimedSide[] => {
    if (!v.make || (only && !only.test(v.label))) return [];
    // Each side its own tokenizer, so no side counts a message another side already counted.
    const strategy = v.make(createOpenAITokenizer({ model: 'gpt-4o' }), fixedSummarizer);
    return [
      {
        label: v.label,
        input: (end) => reference.messages.slice(1, end), // ctx passes the instructions beside the messages
        compact: (messages: Message[]) => strategy.compact(messages, {}),
      },
    ];
  });
  for (const [label, extra] of [
    [rows.at(-3)!.label, LC_DOCUMENTED],
    [rows.at(-2)!.label, {}],
  ] as const) {
    const tokenCounter = langChainCounter({ calls: 0, messages: 0 });
    timedSides.push({
      label,
      input: (end) => lcList.slice(0, endOf[end]!),
      compact: (input: BaseMessage[]) => trimMessages(input, { maxTokens: BUDGET, strategy: 'last', tokenCounter, ...extra }),
    });
  }
  timedSides.push({ label: rows.at(-1)!.label, input: (end) => modelMessages.slice(0, end), compact: prune });
  const sameHistoryMs = await timeOnSameHistories(reference, timedSides);

  const baseTotal = none.tokens.reduce((a, b) => a + b, 0);
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  printTable(
    [
      'variant',
      'calls',
      'peak tokens',
      'mean tokens',
      'total tokens',
      'ratio',
      'rejected',
      `> ${MODEL_WINDOW / 1000}k`,
      'summarizer calls',
      'summarizer in',
      'summarizer out',
      'strategy CPU ms',
      'ms in the agent',
    ],
    rows.map(({ label, tally }) => {
      const total = tally.tokens.reduce((a, b) => a + b, 0);
      const summarizer = summarizers.get(label);
      const summarized = summarizer !== undefined && summarizer.calls > 0;
      return [
        label,
        String(tally.tokens.length),
        fmt(Math.max(...tally.tokens)),
        fmt(total / tally.tokens.length),
        fmt(total),
        tally === none ? '1 (baseline)' : fmtRatio(total / baseTotal),
        String(tally.rejected),
        String(tally.tokens.filter((t) => t > MODEL_WINDOW).length),
        summarized ? fmt(summarizer.calls) : '-',
        summarized ? fmt(summarizer.inputTokens) : '-',
        summarized ? fmt(summarizer.outputTokens) : '-',
        sameHistoryMs.has(label) ? fmt(sameHistoryMs.get(label)!) : '-',
        summarizer && tally !== none ? fmt(tally.strategyMs) : '-',
      ];
    }),
  );
  console.log(
    '\nstrategy CPU ms = CPU time inside the strategy over all calls, every side given the same uncompacted history before each call (the',
  );
  console.log(
    'conversation so far, in its own message shape), the sides taking turns call by call. ms in the agent = wall time inside compact() during',
  );
  console.log(
    "the ctx agent's run, on the history as the agent compacted and stored it (smaller than the uncompacted one, so not comparable).",
  );

  // What the rows cost under a prompt cache (OpenAI's rule), with the summarizer's own input counted.
  console.log('\n## Compaction and the prompt cache: billable input tokens\n');
  console.log(
    "A call repeats the previous call's prefix up to the first message that differs; OpenAI bills such a prefix as cached when it is at",
  );
  console.log(
    'least 1,024 tokens, in 128-token steps, at 10% or 50% of the input price depending on the model. Rows that send a list the service',
  );
  console.log(
    `would reject, or more than ${MODEL_WINDOW / 1000}k tokens, are not comparable (marked invalid). Summarizer input is added to its row.\n`,
  );
  const valid = (tally: Tally) => tally.rejected === 0 && tally.tokens.every((t) => t <= MODEL_WINDOW);
  const priced = rows.map(({ label, tally }) => {
    const extra = summarizers.get(label)?.inputTokens ?? 0;
    return { label, tally, extra, at10: billable(tally, 0.1) + extra, at50: billable(tally, 0.5) + extra };
  });
  const others = priced.filter((r) => r.tally !== none && !r.label.startsWith('ctx ') && valid(r.tally));
  const best10 = Math.min(...others.map((r) => r.at10));
  const best50 = Math.min(...others.map((r) => r.at50));
  printTable(
    ['variant', 'input tokens', 'cached share', 'summarizer in', 'billable @10%', 'vs best peer', 'billable @50%', 'vs best peer', 'valid'],
    priced.map(({ label, tally, extra, at10, at50 }) => {
      const total = tally.tokens.reduce((a, b) => a + b, 0);
      const cached = tally.tokens.reduce((n, t, i) => n + Math.min(t, cachedTokens(tally.repeated[i]!)), 0);
      return [
        label,
        fmt(total),
        `${((100 * cached) / total).toFixed(0)}%`,
        extra ? fmt(extra) : '-',
        fmt(at10),
        fmtRatio(at10 / best10),
        fmt(at50),
        fmtRatio(at50 / best50),
        valid(tally) ? 'yes' : 'invalid',
      ];
    }),
  );
  console.log(
    `\nvs best peer = billable tokens of the row / those of the cheapest valid row that is not ctx (${others.map((r) => r.label.split('(')[0]!.trim()).join(', ')}).`,
  );

  const summarized = summarizers.get(variants[variants.length - 1]!.label);
  console.log('');
  console.log('rejected = the service would refuse the list: a function call without its result or a result without its call');
  console.log(
    `(hasOrphans), a first non-system message that is a tool result, or no message besides the system one. > ${MODEL_WINDOW / 1000}k = calls`,
  );
  console.log("above gpt-4o's window. Summarizer in / out = tokens the summarizer was sent (transcripts and instructions) and wrote.");
  for (const { label, tally } of rows) {
    if (tally.rejected) console.log(`- ${label}: rejected ${[...tally.rejections].map(([k, n]) => `${n} ${k}`).join(', ')}.`);
    if (tally.noSystem) console.log(`- ${label}: ${tally.noSystem} calls without the system message.`);
    if (tally.lostCurrentResults)
      console.log(`- ${label}: ${tally.lostCurrentResults} calls miss a tool result of their own turn, or see it collapsed.`);
  }
  if (summarized && summarized.calls > 0)
    console.log(
      `- ctx summarization: ${summarized.calls} summarizer calls (${summarized.byPhase()}) on ${summarized.distinct} distinct transcripts: a summary made in the ` +
        "tool loop lives only in that run (the same strategy is used in both places here), so the next run's boundary, which stores its summary, makes its own.",
    );
  console.log(
    `- LangChain trimMessages called its token counter ${lcDocumented.counter.calls.toLocaleString('en-US')} times on ${lcDocumented.counter.messages.toLocaleString('en-US')} messages (documented setup), ` +
      `${lcPlain.counter.calls.toLocaleString('en-US')} times on ${lcPlain.counter.messages.toLocaleString('en-US')} (minimal): every suffix of the history, every call.`,
  );
  console.log(`\nWall time: ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  return rows;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await compactionBench();
}
