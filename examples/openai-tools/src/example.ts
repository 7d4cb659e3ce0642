import {
  type ChatClient,
  type ContextAudit,
  type ContextProvider,
  createAgent,
  createAuditProvider,
  defineTool,
  type FunctionCallContent,
} from '@ctx/core';
import type { OpenAITestServer } from '@ctx/openai-test-server';

/** What one turn did: the audit of each model call's prompt, the tool calls, the streamed answer. */
export interface TurnReport {
  input: string;
  audits: ContextAudit[];
  toolCalls: FunctionCallContent[];
  text: string;
}

/** The tools the model may call. */
export const tools = [
  defineTool({
    name: 'get_weather',
    description: 'The current weather in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    execute: ({ city }: { city: string }) => ({ city, celsius: city.length * 2 - 3, sky: city.length % 2 ? 'clear' : 'cloudy' }),
  }),
  defineTool({
    name: 'convert_temperature',
    description: 'Converts Celsius to Fahrenheit.',
    parameters: { type: 'object', properties: { celsius: { type: 'number' } }, required: ['celsius'] },
    execute: ({ celsius }: { celsius: number }) => ({ fahrenheit: Math.round((celsius * 9) / 5 + 32) }),
  }),
];

/** A context provider of this app: the user's preferences, added to every prompt. */
const preferences: ContextProvider = {
  sourceId: 'preferences',
  beforeRun: ({ context }) => context.extendInstructions('preferences', 'The user reads temperatures in Fahrenheit.'),
};

/** The turns the example runs, in one session. */
export const TURNS = ['What is the weather in Oslo?', 'And in Lisbon?'];

/**
 * Runs the turns through `client` with streaming, writing the answer as it arrives, the tool
 * calls, and after each turn the audit of what each source put into each model call's prompt.
 */
export async function runExample(client: ChatClient, write: (text: string) => void = () => {}): Promise<TurnReport[]> {
  const print = (line: string) => write(`${line}\n`);
  const audits: ContextAudit[] = [];
  const agent = createAgent({
    client,
    instructions: 'Answer in one short sentence. Use the tools for weather and conversions.',
    tools,
    contextProviders: [preferences, createAuditProvider({ onAudit: (audit) => void audits.push(audit) })],
  });
  const session = agent.createSession();
  const reports: TurnReport[] = [];
  for (const input of TURNS) {
    const report: TurnReport = { input, audits: [], toolCalls: [], text: '' };
    audits.length = 0;
    print(`\n> ${input}`);
    for await (const update of agent.runStream(input, { session })) {
      for (const c of update.contents) {
        if (c.type === 'text') {
          report.text += c.text;
          write(c.text);
        }
        if (c.type === 'function-call' && c.name) report.toolCalls.push(c);
      }
    }
    write('\n');
    report.audits = [...audits];
    for (const call of report.toolCalls) print(`  [tool] ${call.name}`);
    for (const audit of report.audits) printAudit(audit, print);
    reports.push(report);
  }
  return reports;
}

function printAudit(audit: ContextAudit, print: (line: string) => void): void {
  print('  what entered the prompt:');
  for (const s of audit.sources) {
    print(
      `    ${s.sourceId.padEnd(12)} ${String(s.messages).padStart(2)} messages  ${s.instructions} instructions  ${s.tools} tools  ~${s.tokens} tokens`,
    );
  }
  print(`    ${'total'.padEnd(12)} ~${audit.totalTokens} tokens`);
}

/**
 * The local model's script: call `get_weather` for the city asked about, then
 * `convert_temperature`, then answer from the results; it reads only what the request carries.
 */
export function scriptLocalModel(server: OpenAITestServer): void {
  server.respondWith((request) => {
    const messages = (request.body?.messages ?? []) as Array<{ role: string; content?: unknown; tool_calls?: unknown[] }>;
    const last = messages.at(-1);
    const results = messages.filter((m) => m.role === 'tool').map((m) => JSON.parse(String(m.content)) as Record<string, unknown>);
    const lastUser = [...messages].reverse().find((m) => m.role === 'user');
    const city = /in (\w+)/.exec(String(lastUser?.content))?.[1] ?? 'Oslo';
    if (last?.role === 'user') return { toolCalls: [{ name: 'get_weather', arguments: { city } }] };
    const weather = [...results].reverse().find((r) => 'celsius' in r);
    const converted = [...results].reverse().find((r) => 'fahrenheit' in r);
    if (last?.role === 'tool' && 'celsius' in (results.at(-1) ?? {})) {
      return { toolCalls: [{ name: 'convert_temperature', arguments: { celsius: weather!.celsius } }] };
    }
    return { text: `It is ${weather!.sky} in ${weather!.city}, ${converted!.fahrenheit}°F.` };
  });
}
