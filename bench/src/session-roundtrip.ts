/**
 * JSON round trip of a session holding 2,000 messages: serialize, parse, restore with validation,
 * through an object and through a string. ctx beside the nearest equivalents in LangChain.js and
 * the OpenAI Agents SDK measured in this same process, with each side's JSON size. Prints
 * absolute figures and ratios; asserts nothing about timings.
 */
import { pathToFileURL } from 'node:url';
import { mapChatMessagesToStoredMessages, mapStoredMessagesToChatMessages } from '@langchain/core/messages';
import { MemorySession } from '@openai/agents-core';
import { toLangChain } from './alternatives/langchain.js';
import { toAgentItems } from './alternatives/openai-agents.js';
import { ctxAgent, toCtx } from './ctx-side.js';
import { conversation } from './data.js';
import { fmtMs, fmtOps, fmtRatio, measure, printTable, settle, type Measurement } from './timing.js';

const MESSAGES = 2_000;

const OPTIONS = { warmup: 10, minIterations: 20, maxIterations: 300, budgetMs: 2500 };

/** Runs the benchmark and prints its table. */
export async function sessionRoundtrip(): Promise<Measurement[]> {
  console.log(`\n## Session JSON round trip, ${MESSAGES.toLocaleString('en-US')} messages\n`);

  const turns = conversation(MESSAGES, 7);
  const agent = ctxAgent();
  const session = agent.createSession({ state: { memory: { messages: toCtx(turns) as unknown as never } } });
  const bytes = Buffer.byteLength(JSON.stringify(session));
  console.log(`Session JSON: ${(bytes / 1024).toFixed(0)} KiB, ${MESSAGES} messages (user/assistant text, function calls and results).\n`);

  // Sanity: the round trip gives the same session back.
  const again = agent.restoreSession(JSON.parse(JSON.stringify(agent.serializeSession(session))));
  if (JSON.stringify(again) !== JSON.stringify(session)) throw new Error('ctx: round trip changed the session');

  const rows: Measurement[] = [];
  const run = async (name: string, fn: () => unknown) => {
    settle();
    const m = await measure(
      name,
      () => undefined,
      async () => fn(),
      OPTIONS,
    );
    rows.push(m);
    return m;
  };

  const full = await run('ctx: JSON.stringify(serializeSession) + JSON.parse + restoreSession(object)', () =>
    agent.restoreSession(JSON.parse(JSON.stringify(agent.serializeSession(session)))),
  );
  await run('ctx: JSON.stringify(session) + restoreSession(string)', () => agent.restoreSession(JSON.stringify(session)));
  const json = JSON.stringify(session);
  const parsed = JSON.parse(json) as unknown;
  await run('  of which JSON.stringify(session)', () => JSON.stringify(session));
  await run('  of which JSON.parse', () => JSON.parse(json));
  await run('  of which restoreSession(parsed object): validate + copy', () => agent.restoreSession(parsed as never));

  // Nearest equivalents in the alternatives (no validation on restore in either).
  const lcMessages = toLangChain(turns);
  await run('LangChain: mapChatMessagesToStoredMessages + JSON + mapStoredMessagesToChatMessages', () =>
    mapStoredMessagesToChatMessages(JSON.parse(JSON.stringify(mapChatMessagesToStoredMessages(lcMessages)))),
  );
  const oaSession = new MemorySession({ sessionId: 'oa', initialItems: toAgentItems(turns) });
  await run(
    'OpenAI Agents SDK: getItems() + JSON + new MemorySession({ initialItems })',
    async () => new MemorySession({ sessionId: 'oa', initialItems: JSON.parse(JSON.stringify(await oaSession.getItems())) }),
  );

  printTable(
    ['round trip', 'ms (mean)', 'ms (p50)', 'ops/s', 'runs', 'ratio vs ctx'],
    rows.map((m) => [
      m.name,
      fmtMs(m.meanMs),
      fmtMs(m.p50Ms),
      fmtOps(m.opsPerSec),
      String(m.iterations),
      m === full ? '1 (baseline)' : fmtRatio(m.meanMs / full.meanMs),
    ]),
  );
  const kib = (value: unknown) => `${(Buffer.byteLength(JSON.stringify(value)) / 1024).toFixed(0)} KiB`;
  console.log(
    `\nJSON size: ctx session ${kib(session)}, LangChain stored messages ${kib(mapChatMessagesToStoredMessages(lcMessages))}, Agents SDK items ${kib(await oaSession.getItems())}.`,
  );
  console.log('The LangChain and OpenAI Agents rows do not validate what they restore; ctx does.\n');
  return rows;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await sessionRoundtrip();
}
