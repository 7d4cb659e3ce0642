/**
 * Contextual tool selection over a catalog of 1,000 tools: `ContextualToolsProvider` (top N by
 * similarity to the conversation, hash embedding, tool embeddings cached) beside the alternative a
 * user would pick without it, sending every tool on every call. Same agent, same fake model (answers
 * at once), same queries, one process. Prints per-run time, the tokens of tool definitions sent
 * (character tokenizer over the JSON of name + description + parameters), whether the tool each
 * query needs was among those sent, and ratios. Asserts nothing about timings.
 */
import { pathToFileURL } from 'node:url';
import {
  ContextualToolsProvider,
  createAgent,
  createCharacterTokenizer,
  createHashEmbedding,
  defineTool,
  Message,
  type Agent,
  type ChatClient,
  type ChatOptions,
  type ChatResponse,
  type ChatResponseUpdate,
  type Tool,
} from '@ctx/core';
import { countToolTokens } from '@ctx/core/backend';
import { fmtMs, fmtOps, fmtRatio, measure, printTable, settle, type Measurement } from './timing.js';

const TOOL_COUNT = 1_000;
const TOP_N = [5, 10, 20] as const;

/** 50 subjects x 20 actions = 1,000 tools, each with a realistic description and parameters. */
const SUBJECTS: Array<[key: string, noun: string, detail: string]> = [
  ['invoice', 'invoice', 'billing documents with line items, tax and amounts due'],
  ['order', 'sales order', 'customer purchases with items, totals and fulfilment state'],
  ['shipment', 'parcel shipment', 'package tracking numbers, carriers and delivery status'],
  ['refund', 'refund', 'money returned to a customer for a returned or faulty item'],
  ['customer', 'customer account', 'CRM records with contact details and lifetime value'],
  ['ticket', 'support ticket', 'helpdesk issues with priority, assignee and status'],
  ['calendar', 'calendar event', 'meetings with start time, attendees and a room'],
  ['email', 'email message', 'inbox mail with subject, sender, recipients and body'],
  ['flight', 'flight booking', 'airline seats between airports with dates and fares'],
  ['hotel', 'hotel reservation', 'rooms, nights and guests at a hotel'],
  ['car', 'rental car', 'vehicle hire with pick-up location, dates and insurance'],
  ['weather', 'weather forecast', 'temperature, rain, wind and humidity for a city'],
  ['route', 'driving route', 'turn-by-turn directions and travel time on a map'],
  ['stock', 'stock quote', 'share prices and market data for a ticker symbol'],
  ['portfolio', 'investment portfolio', 'holdings, allocation and returns of an account'],
  ['payroll', 'payroll run', 'salaries, deductions and payslips for employees'],
  ['employee', 'employee profile', 'HR records with role, manager and start date'],
  ['leave', 'leave request', 'vacation and sick days awaiting approval'],
  ['expense', 'expense report', 'receipts and reimbursements for business travel'],
  ['budget', 'department budget', 'planned and actual spending per cost centre'],
  ['contract', 'legal contract', 'agreements with parties, clauses and renewal dates'],
  ['repo', 'git repository', 'source code branches, commits and pull requests'],
  ['build', 'CI build', 'continuous integration pipelines, jobs and test results'],
  ['deploy', 'deployment', 'releases of a service to staging or production'],
  ['incident', 'production incident', 'outages with severity, timeline and postmortem'],
  ['alert', 'monitoring alert', 'metric thresholds, firing alarms and on-call pages'],
  ['database', 'database table', 'rows, columns and indexes in a SQL database'],
  ['file', 'file', 'documents and folders stored on the shared drive'],
  ['spreadsheet', 'spreadsheet', 'cells, formulas and sheets of a workbook'],
  ['slide', 'presentation', 'slides, speaker notes and themes of a deck'],
  ['wiki', 'wiki page', 'internal knowledge base articles and their revisions'],
  ['task', 'project task', 'to-do items with due dates, owners and status'],
  ['sprint', 'agile sprint', 'iteration goals, story points and burndown'],
  ['inventory', 'warehouse inventory', 'stock levels of SKUs per warehouse location'],
  ['supplier', 'supplier', 'vendors, purchase orders and delivery lead times'],
  ['product', 'product catalog entry', 'items for sale with price, images and variants'],
  ['coupon', 'discount coupon', 'promotion codes with percentage off and expiry'],
  ['review', 'product review', 'customer ratings and written feedback'],
  ['survey', 'survey', 'questionnaires, responses and satisfaction scores'],
  ['campaign', 'marketing campaign', 'ads, audiences, spend and conversions'],
  ['social', 'social media post', 'posts, likes and comments on social networks'],
  ['playlist', 'music playlist', 'songs and albums queued to play'],
  ['recipe', 'recipe', 'cooking ingredients, servings and preparation steps'],
  ['fitness', 'workout', 'exercise sessions with duration, heart rate and calories'],
  ['translation', 'translation', 'text translated into another language'],
  ['note', 'personal note', 'short notes and reminders'],
  ['contact', 'phone contact', 'address book entries with phone numbers'],
  ['timer', 'countdown timer', 'alarms in hours, minutes and seconds'],
  ['photo', 'photo album', 'pictures with captions, faces and locations'],
  ['device', 'smart home device', 'lights, thermostats and locks in a home'],
];
const ACTIONS: Array<[verb: string, phrase: string]> = [
  ['get', 'Gets one'],
  ['list', 'Lists every'],
  ['create', 'Creates a new'],
  ['update', 'Updates an existing'],
  ['delete', 'Deletes a'],
  ['search', 'Searches by keyword for a'],
  ['archive', 'Archives an old'],
  ['restore', 'Restores an archived'],
  ['export', 'Exports to CSV each'],
  ['import', 'Imports from a CSV file each'],
  ['share', 'Shares with a colleague a'],
  ['assign', 'Assigns an owner to a'],
  ['approve', 'Approves a pending'],
  ['cancel', 'Cancels a scheduled'],
  ['schedule', 'Schedules for a later date a'],
  ['summarize', 'Summarizes in a few sentences a'],
  ['validate', 'Validates the fields of a'],
  ['sync', 'Synchronizes with the external system a'],
  ['tag', 'Adds labels to a'],
  ['count', 'Counts how many there are of each'],
];

function catalog(): Tool[] {
  return SUBJECTS.flatMap(([key, noun, detail]) =>
    ACTIONS.map(([verb, phrase]) =>
      defineTool({
        name: `${key}_${verb}`,
        description: `${phrase} ${noun} (${detail}).`,
        parameters: {
          type: 'object',
          properties: {
            id: { type: 'string', description: `Identifier of the ${noun}.` },
            fields: { type: 'object', description: `Fields of the ${noun} to read or write.`, additionalProperties: true },
            limit: { type: 'integer', minimum: 1, maximum: 100, description: 'Most results to return.' },
          },
          required: verb === 'list' || verb === 'count' || verb === 'search' ? [] : ['id'],
          additionalProperties: false,
        },
        execute: () => ({ ok: true }),
      }),
    ),
  );
}

/** Requests a user might type, each with the one tool it needs. */
const QUERIES: Array<[text: string, tool: string]> = [
  ['What is the weather forecast for Lisbon tomorrow, will it rain?', 'weather_get'],
  ['Please archive the invoice INV-2231 from last quarter.', 'invoice_archive'],
  ['Cancel my hotel reservation for next weekend.', 'hotel_cancel'],
  ['Where is my parcel? Track the shipment delivery status.', 'shipment_get'],
  ['Approve the pending leave request from Dana for vacation days.', 'leave_approve'],
  ['Export all expense reports to CSV for the auditors.', 'expense_export'],
  ['Create a new support ticket: the checkout page is broken, high priority.', 'ticket_create'],
  ['Summarize the production incident from last night for the postmortem.', 'incident_summarize'],
  ['Schedule a deployment of the payments service to production for Friday.', 'deploy_schedule'],
  ['How many SKUs are in stock in the warehouse inventory? Count them.', 'inventory_count'],
  ['Share the quarterly presentation deck with my colleague Sam.', 'slide_share'],
  ['Search the wiki for the article about onboarding.', 'wiki_search'],
  ['Restore the archived git repository for the old website.', 'repo_restore'],
  ['Update the customer account address for ACME Corp.', 'customer_update'],
  ['Set a countdown timer for 25 minutes.', 'timer_create'],
  ['Delete the photo album from the trip to Rome.', 'photo_delete'],
  ['Validate the fields of the legal contract before signing.', 'contract_validate'],
  ['Book a rental car at the airport for three days with insurance.', 'car_create'],
  ['Tag this product review as spam.', 'review_tag'],
  ['Sync the phone contacts with the address book on my laptop.', 'contact_sync'],
];

/**
 * Held-out requests: the same needs paraphrased without the words of the tool they need (its name,
 * description and parameters; checked by `checkHeldOut`), as users often put them. Recall on these
 * says what the embedding does with a request that shares no word with its tool.
 */
const HELD_OUT: Array<[text: string, tool: string]> = [
  ['Will I need an umbrella in Lisbon tomorrow?', 'weather_get'],
  ["Put away last quarter's bill INV-2231, we are done with it.", 'invoice_archive'],
  ["Call off my stay in Porto next weekend, I won't be going.", 'hotel_cancel'],
  ['Has the box I ordered from the web shop arrived yet, or is the courier still on the way?', 'shipment_get'],
  ['Dana wants two weeks off in August; give her the green light.', 'leave_approve'],
  ['The auditors want a file of everything staff claimed back for their trips.', 'expense_export'],
  ["Customers can't pay on the website right now; open a case with the IT team, it's urgent.", 'ticket_create'],
  ['Give me a short recap of what went down with the servers last night.', 'incident_summarize'],
  ['Ship the new payments code live on Friday, not before.', 'deploy_schedule'],
  ['What quantity of every item is left on our shelves?', 'inventory_count'],
  ['Send Sam the quarterly pitch so he can look at it before the board meeting.', 'slide_share'],
  ['Is there anything written down internally about how new hires get started?', 'wiki_search'],
  ["Bring back the old website's version-control project that we shelved last year.", 'repo_restore'],
  ['ACME Corp moved offices; change their address on file.', 'customer_update'],
  ['Ring me when the pasta has had its twenty-five.', 'timer_create'],
  ['Get rid of the snapshots from our trip to Rome.', 'photo_delete'],
  ['Check that nothing is missing in the deal paperwork before we sign it.', 'contract_validate'],
  ['I need wheels at the airport from Monday to Wednesday, with cover.', 'car_create'],
  ['Flag that one-star comment on the blender as junk.', 'review_tag'],
  ['Make the people saved on my mobile match the ones on my laptop.', 'contact_sync'],
];

/** Function words, which every text shares. */
const STOP = new Set([
  'with',
  'from',
  'that',
  'this',
  'there',
  'what',
  'their',
  'them',
  'they',
  'your',
  'into',
  'than',
  'have',
  'when',
  'which',
  'about',
]);

/** Content words of four letters or more, lower case, a trailing plural "s" dropped. */
const words = (text: string) =>
  new Set(
    (text.toLowerCase().match(/[a-z]{4,}/g) ?? [])
      .filter((w) => !STOP.has(w))
      .map((w) => (w.endsWith('s') && !w.endsWith('ss') ? w.slice(0, -1) : w)),
  );

/** Throws when a held-out request shares a word with the tool it needs (so it is not held out). */
function checkHeldOut(tools: readonly Tool[]): void {
  const byName = new Map(tools.map((t) => [t.name, t]));
  for (const [text, name] of HELD_OUT) {
    const tool = byName.get(name);
    if (!tool) throw new Error(`held-out request names an unknown tool ${name}`);
    const own = words(`${tool.name.replace(/_/g, ' ')} ${tool.description} ${JSON.stringify(tool.parameters)}`);
    const shared = [...words(text)].filter((w) => own.has(w));
    if (shared.length) throw new Error(`held-out request "${text}" shares ${shared.join(', ')} with ${name}`);
  }
}

/** A fake model that answers at once and keeps the tools of the last call (untimed accounting reads them). */
class ToolRecordingClient implements ChatClient {
  readonly specificationVersion = 'v1' as const;
  readonly provider = 'bench';
  readonly modelId = 'fixed-reply';
  lastTools: readonly Tool[] = [];
  async getResponse(_messages: Message[], options: ChatOptions): Promise<ChatResponse> {
    this.lastTools = options.tools ?? [];
    return { messages: [Message.assistant('Done.')], finishReason: 'stop' };
  }
  getStreamingResponse(): AsyncIterable<ChatResponseUpdate> {
    throw new Error('streaming is not used by this benchmark');
  }
}

interface Row {
  label: string;
  measurement: Measurement;
  /** Mean tokens of tool definitions per model call. */
  toolTokens: number;
  /** Mean tools per model call. */
  tools: number;
  /** Share of queries whose needed tool was sent. */
  recall: number;
  /** The same share over the held-out (paraphrased) requests. */
  heldOutRecall: number;
}

const tokenizer = createCharacterTokenizer();
/** JSON of name + description + parameters, 4 characters a token. */
const toolTokens = (tools: readonly Tool[]) => tools.reduce((sum, t) => sum + countToolTokens(t, tokenizer), 0);

/** Runs every query once (untimed) for the token and recall figures, then times runs over the queries round-robin. */
async function measureAgent(label: string, agent: Agent, client: ToolRecordingClient): Promise<Row> {
  let tokens = 0;
  let count = 0;
  let hits = 0;
  for (const [text, needed] of QUERIES) {
    await agent.run(text);
    tokens += toolTokens(client.lastTools);
    count += client.lastTools.length;
    if (client.lastTools.some((t) => t.name === needed)) hits++;
  }
  let heldOutHits = 0;
  for (const [text, needed] of HELD_OUT) {
    await agent.run(text);
    if (client.lastTools.some((t) => t.name === needed)) heldOutHits++;
  }
  let i = 0;
  settle();
  const measurement = await measure(
    label,
    () => QUERIES[i++ % QUERIES.length]![0],
    (text) => agent.run(text),
    { warmup: 50, minIterations: 20, maxIterations: 3000, budgetMs: 1500 },
  );
  return {
    label,
    measurement,
    toolTokens: tokens / QUERIES.length,
    tools: count / QUERIES.length,
    recall: hits / QUERIES.length,
    heldOutRecall: heldOutHits / HELD_OUT.length,
  };
}

/** Runs the benchmark and prints its tables. */
export async function contextualTools(): Promise<Row[]> {
  console.log(`\n## Contextual tool selection over ${TOOL_COUNT.toLocaleString('en-US')} tools (fake model, no network)\n`);
  console.log(
    `Node ${process.version}, ${process.platform}/${process.arch}. One stateless run per query (${QUERIES.length} queries, round-robin).`,
  );
  console.log('Tool tokens: character tokenizer (4 chars/token) over JSON of name + description + parameters, per model call.');
  console.log('"needed tool sent": share of queries whose one needed tool was among the tools sent; "held out": the same over');
  console.log(`${HELD_OUT.length} paraphrased requests that share no word (4+ letters) with the tool they need.`);
  console.log('Embeddings: createHashEmbedding() (512 dims, bag of words + character trigrams), a stand-in for a real model.\n');

  const tools = catalog();
  if (tools.length !== TOOL_COUNT) throw new Error(`expected ${TOOL_COUNT} tools, built ${tools.length}`);
  checkHeldOut(tools);

  const rows: Row[] = [];
  const allClient = new ToolRecordingClient();
  const all = await measureAgent(
    `all ${TOOL_COUNT.toLocaleString('en-US')} tools on every call`,
    createAgent({ client: allClient, tools }),
    allClient,
  );
  if (all.tools !== TOOL_COUNT) throw new Error('the all-tools agent did not send every tool');
  rows.push(all);

  const embeddings = createHashEmbedding();
  for (const n of TOP_N) {
    const client = new ToolRecordingClient();
    const provider = new ContextualToolsProvider({ tools, embeddings, maxTools: n });
    rows.push(
      await measureAgent(
        `ContextualToolsProvider maxTools ${n} (warm cache)`,
        createAgent({ client, contextProviders: [provider] }),
        client,
      ),
    );
  }

  // Cold start: a new provider's first run embeds all 1,000 tool descriptions once.
  settle();
  const cold = await measure(
    'first run of a new provider: embeds 1,000 tools',
    () =>
      createAgent({
        client: new ToolRecordingClient(),
        contextProviders: [new ContextualToolsProvider({ tools, embeddings, maxTools: 5 })],
      }),
    (agent) => agent.run(QUERIES[0]![0]),
    { warmup: 3, minIterations: 10, maxIterations: 200, budgetMs: 1500 },
  );

  printTable(
    [
      'pipeline',
      'ms/run (mean)',
      'ms/run (p50)',
      'ops/s',
      'runs',
      'tools/call',
      'tool tokens/call',
      'needed tool sent',
      'held out',
      'time vs all',
      'all / tokens',
    ],
    rows.map((r) => [
      r.label,
      fmtMs(r.measurement.meanMs),
      fmtMs(r.measurement.p50Ms),
      fmtOps(r.measurement.opsPerSec),
      String(r.measurement.iterations),
      r.tools.toFixed(1),
      Math.round(r.toolTokens).toLocaleString('en-US'),
      `${Math.round(r.recall * 100)}%`,
      `${Math.round(r.heldOutRecall * 100)}%`,
      r === all ? '1 (baseline)' : fmtRatio(r.measurement.meanMs / all.measurement.meanMs),
      r === all ? '1 (baseline)' : fmtRatio(all.toolTokens / r.toolTokens),
    ]),
  );
  console.log(
    `\nCold start (${cold.name}): ${fmtMs(cold.meanMs)} ms mean, ${fmtMs(cold.p50Ms)} ms p50 over ${cold.iterations} runs; paid once per provider instance.`,
  );
  console.log('"time vs all" is this row / the all-tools row (library work only; a real model also spends time per input token).');
  console.log('"all / tokens" is how many times more tool-definition tokens the all-tools row sends per call.\n');
  return rows;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await contextualTools();
}
