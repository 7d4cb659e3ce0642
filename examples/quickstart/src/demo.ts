import {
  type AgentSession,
  FileSessionStore,
  Message,
  type AgentEvent,
  type AgentResponse,
  type ChatClient,
  type EventHandler,
  type JsonValue,
} from '@ctx/core';
import { AGENT_INSTRUCTIONS, AGENT_TOOLS, createQuickstartAgent, readTodos, readTurns } from './agent.js';

/** The session the demo keeps in its store. */
export const SESSION_ID = 'quickstart';

const CITIES = ['Oslo', 'Kyoto', 'Nairobi', 'Lima', 'Reykjavik'];

/** The user's lines: a first visit, or a return visit that builds on what came before. */
export function userTurns(turnsSoFar: number): string[] {
  if (turnsSoFar === 0) {
    return [
      "Hi! What's the weather like today?",
      'Add a todo: buy sunscreen',
      'Remind me to book a table for Friday',
      "What's on my list?",
    ];
  }
  const city = CITIES[turnsSoFar % CITIES.length]!;
  return [
    "I'm back! What did we talk about last time?",
    `How's the weather in ${city}? Also add a todo: pack for ${city}`,
    "What's on my list now?",
  ];
}

/** What `runDemo` takes. */
export interface DemoOptions {
  /** Folder of the `FileSessionStore`. */
  directory: string;
  client: ChatClient;
  /** Delete the stored session first. */
  reset?: boolean;
  /** Receives the output, one line at a time. Default: nothing is printed. */
  print?: (line: string) => void;
  /** Shown instead of `directory` in the output. */
  directoryLabel?: string;
  /** Also receives every event of the agent (e.g. `@ctx/inspector`'s `onEvent`); its `includeContent` is kept. */
  onEvent?: EventHandler;
}

/** What one turn contributed and produced. */
export interface TurnReport {
  turn: number;
  input: string;
  /** Per source: messages, instructions and tools it added (from `provider-end` events). */
  added: Map<string, { messages: number; instructions: number; tools: number }>;
  /** Messages sent in each model call of the turn (from `model-call` events). */
  modelCalls: Array<{ messages: number; instructions: number; tools: number }>;
  response: AgentResponse;
}

/** The outcome of one invocation of the demo. */
export interface DemoResult {
  session: AgentSession;
  /** Whether the session was loaded from the store (true) or started fresh. */
  continued: boolean;
  turns: TurnReport[];
}

/**
 * Loads the session (or starts one), runs this visit's user turns through the agent, prints what
 * every source contributed to each model call, and saves the session after every turn.
 */
export async function runDemo(options: DemoOptions): Promise<DemoResult> {
  const print = options.print ?? (() => {});
  const store = new FileSessionStore({ directory: options.directory });
  let events: AgentEvent[] = [];
  const also = options.onEvent;
  const onEvent: EventHandler = Object.assign(
    (e: AgentEvent) => {
      events.push(e);
      also?.(e);
    },
    { includeContent: also?.includeContent === true },
  );
  const agent = createQuickstartAgent({ client: options.client, sessionStore: store, onEvent });
  const where = options.directoryLabel ?? options.directory;

  if (options.reset) {
    const existed = await store.delete(SESSION_ID);
    print(existed ? `Reset: deleted session "${SESSION_ID}" from ${where}` : `Reset: no session "${SESSION_ID}" in ${where} yet`);
  }
  const stored = await agent.getSession(SESSION_ID);
  const continued = stored !== undefined;
  const session = stored ?? agent.createSession({ sessionId: SESSION_ID });
  const before = readTurns(session);
  print(`ctx quickstart · session "${SESSION_ID}" in ${where} · model ${options.client.provider}/${options.client.modelId}`);
  print(
    continued
      ? `Continuing: ${plural(before, 'turn')}, ${plural(historyLength(session), 'stored message')}, ${plural(readTodos(session).length, 'todo')} (--reset starts over)`
      : 'New session: nothing stored yet (run again to continue it)',
  );

  const turns: TurnReport[] = [];
  for (const input of userTurns(before)) {
    events = [];
    const storedBefore = historyLength(session);
    const response = await agent.run(input, { session });
    await agent.saveSession(session);
    const report = toReport(readTurns(session), input, events, response);
    turns.push(report);
    print('');
    for (const line of renderTurn(report, storedBefore, historyLength(session), readTodos(session).length)) print(line);
  }
  print('');
  print(`Saved. Run again to continue (turn ${readTurns(session) + 1} is next), or pass --reset to start over.`);
  return { session, continued, turns };
}

function toReport(turn: number, input: string, events: readonly AgentEvent[], response: AgentResponse): TurnReport {
  const added: TurnReport['added'] = new Map([
    ['agent', { messages: 0, instructions: AGENT_INSTRUCTIONS ? 1 : 0, tools: AGENT_TOOLS.length }],
  ]);
  const modelCalls: TurnReport['modelCalls'] = [];
  for (const e of events) {
    if (e.type === 'provider-end') {
      const sum = added.get(e.sourceId) ?? { messages: 0, instructions: 0, tools: 0 };
      sum.messages += e.added.messages;
      sum.instructions += e.added.instructions;
      sum.tools += e.added.tools;
      added.set(e.sourceId, sum);
    } else if (e.type === 'model-call') {
      modelCalls.push({ messages: e.messages, instructions: e.instructions, tools: e.tools });
    }
  }
  added.set('input', { messages: 1, instructions: 0, tools: 0 });
  return { turn, input, added, modelCalls, response };
}

/** A small table of what each source added, then the tool calls and the reply. */
export function renderTurn(report: TurnReport, storedBefore: number, storedAfter: number, todos: number): string[] {
  const sources = [...report.added.keys()];
  const cell = (n: number) => (n === 0 ? '·' : String(n));
  const sent = {
    messages: report.modelCalls.map((c) => c.messages).join(' → '),
    instructions: String(report.modelCalls[0]?.instructions ?? 0), // the clock's goes as a message, after the history
    tools: String(report.modelCalls[0]?.tools ?? 0),
  };
  const rows = [
    ['added by', ...sources, '│ sent to model'],
    ...(['messages', 'instructions', 'tools'] as const).map((key) => [
      key,
      ...sources.map((s) => cell(report.added.get(s)![key])),
      `│ ${sent[key]}`,
    ]),
  ];
  const widths = rows[0]!.map((_, col) => Math.max(...rows.map((r) => r[col]!.length)));
  const table = rows.map(
    (r) =>
      `    ${r
        .map((c, col) => (col === 0 ? c.padEnd(widths[col]!) : col === r.length - 1 ? c : c.padStart(widths[col]!)))
        .join('  ')
        .trimEnd()}`,
  );

  const lines = [`Turn ${report.turn} · you: ${report.input}`, ...table];
  const results = new Map<string, JsonValue>();
  for (const m of report.response.messages) for (const c of m.contents) if (c.type === 'function-result') results.set(c.callId, c.result);
  for (const m of report.response.messages) {
    for (const call of Message.functionCalls(m))
      lines.push(
        `    tool  ${call.name}(${compact(call.arguments)}) → ${clip(compact(JSON.stringify(results.get(call.callId) ?? null)), 72)}`,
      );
  }
  lines.push(`  agent: ${report.response.text}`);
  lines.push(`    kept  history ${storedBefore} → ${storedAfter} messages · ${plural(todos, 'todo')} · session saved`);
  return lines;
}

function historyLength(session: AgentSession): number {
  const messages = session.state.memory?.messages;
  return Array.isArray(messages) ? messages.length : 0;
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** JSON without the quotes around simple keys: `{city:"Oslo"}`. */
function compact(json: string): string {
  return json.replace(/"([A-Za-z_]\w*)":/g, '$1:');
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
