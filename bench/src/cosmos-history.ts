/**
 * Per-turn cost of conversation history on Azure Cosmos DB as the history grows: @ctx/cosmos
 * `CosmosHistoryProvider` beside LangChain's `AzureCosmsosDBNoSQLChatMessageHistory`
 * (@langchain/azure-cosmosdb 0.2.8 on @langchain/core 0.3, the range it declares: one document per session holding every message, read and
 * rewritten on every added message), on one Cosmos DB stand-in (@vercel/cosmosdb-server, started
 * in this process on 127.0.0.1) in one run.
 *
 * A turn is what a chat app does per user message: load the history the model will see, then store
 * the user message and the reply. ctx loads a window of the newest 20 (`maxMessages: 20`);
 * LangChain's history has no window. Requests and bytes are counted by a loopback proxy between a
 * second pair of clients and the stand-in; latency is measured on direct clients, the two sides taking turns. After every
 * measured turn an untimed step puts the session back to exactly N messages. Request units are
 * estimated from the documented cost model (printed below the tables). Prints tables; asserts
 * nothing. Usage: `pnpm --filter @ctx/bench bench:cosmos`.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CosmosClient, type Container } from '@azure/cosmos';
import { Message } from '@ctx/core';
import { CosmosHistoryProvider } from '@ctx/cosmos';
import { startCosmosStandIn, startFaultProxy, type ProxiedRequest } from '@ctx/cosmos-stand-in';

const SIZES = [10, 1_000, 10_000];
const WINDOW = 20;
const TEXT = 'The quick brown fox jumps over the lazy dog. '.repeat(4); // ~180 characters per message

// ---- LangChain's implementation -----------------------------------------------------------------
// @langchain/azure-cosmosdb 0.2.8 declares @langchain/core >=0.2.21 <0.4.0, while the other benches
// use @langchain/core 1.4. The workspace settings (pnpm-workspace.yaml) give this package its own
// @langchain/core 0.3, so it is loaded from its package entry and the messages it stores are built
// with the same @langchain/core it resolves; `loadLangChain` checks both at run time.
interface LangChainMessage {
  readonly content: unknown;
}
interface LangChainHistory {
  getMessages(): Promise<LangChainMessage[]>;
  addMessages(messages: LangChainMessage[]): Promise<void>;
}
type LangChainHistoryClass = new (input: {
  sessionId: string;
  userId: string;
  client: CosmosClient;
  databaseName: string;
  containerName: string;
}) => LangChainHistory;
/** What the benchmark takes from the `@langchain/core/messages` the Cosmos package resolves. */
interface LangChainMessages {
  HumanMessage: new (content: string) => LangChainMessage;
  AIMessage: new (content: string) => LangChainMessage;
  mapChatMessagesToStoredMessages(messages: LangChainMessage[]): unknown[];
}
const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
/** True when `version` (x.y.z) lies in `>=0.2.21 <0.4.0`, the peer range the package declares (checked against its package.json). */
function inDeclaredRange(version: string, range: string): boolean {
  if (range !== '>=0.2.21 <0.4.0') throw new Error(`@langchain/azure-cosmosdb now declares @langchain/core ${range}: update this check`);
  const [major, minor, patch] = version.split('.').map(Number) as [number, number, number];
  return major === 0 && (minor === 3 || (minor === 2 && patch >= 21));
}
async function loadLangChain(): Promise<{
  LangChainCosmosHistory: LangChainHistoryClass;
  lcCore: LangChainMessages;
  lcVersion: string;
  lcCoreVersion: string;
  benchCoreVersion: string;
}> {
  const require = createRequire(import.meta.url);
  const lcPackage = require.resolve('@langchain/azure-cosmosdb/package.json');
  const lcManifest = readJson(lcPackage) as { version: string; peerDependencies: Record<string, string> };
  const coreManifestPath = createRequire(lcPackage).resolve('@langchain/core/package.json');
  const coreManifest = readJson(coreManifestPath) as { version: string; exports: Record<string, { import: string }> };
  const benchCoreVersion = (readJson(require.resolve('@langchain/core/package.json')) as { version: string }).version;
  if (!inDeclaredRange(coreManifest.version, lcManifest.peerDependencies['@langchain/core'] ?? ''))
    throw new Error(
      `@langchain/azure-cosmosdb resolves @langchain/core ${coreManifest.version}, outside the range it declares: check the overrides in pnpm-workspace.yaml`,
    );
  const lcCore = (await import(
    pathToFileURL(join(dirname(coreManifestPath), coreManifest.exports['./messages']!.import)).href
  )) as LangChainMessages;
  const { AzureCosmsosDBNoSQLChatMessageHistory } = await import('@langchain/azure-cosmosdb');
  return {
    LangChainCosmosHistory: AzureCosmsosDBNoSQLChatMessageHistory as unknown as LangChainHistoryClass,
    lcCore,
    lcVersion: lcManifest.version,
    lcCoreVersion: coreManifest.version,
    benchCoreVersion,
  };
}

// ---- The documented cost model ------------------------------------------------------------------
/** Point read of an item of `kb` KB: 1 RU at 1 KB, 10 RU at 100 KB (linear between, 1 RU minimum). */
const readRu = (kb: number) => Math.max(1, 1 + (kb - 1) * (9 / 99));
/** Insert of an item of `kb` KB: ~5.5 RU at 1 KB, 50 RU at 100 KB (linear between, 5.5 RU minimum). */
const writeRu = (kb: number) => Math.max(5.5, 5.5 + (kb - 1) * (44.5 / 99));
/** Replacing an item costs twice the insert of the same item (upsert over an existing item, patch). */
const replaceRu = (kb: number) => 2 * writeRu(kb);
/** A single-partition query: ~2.5 RU plus 0.1 RU per KB returned (an estimate, see below). */
const queryRu = (kbReturned: number) => 2.5 + 0.1 * kbReturned;

/** Estimated request units of one proxied request, from its kind, its body and its answer. */
function estimateRu(r: ProxiedRequest): number {
  const kb = (bytes: number) => bytes / 1024;
  switch (r.kind) {
    case 'query-plan':
    case 'metadata':
      return 0;
    case 'query':
      return queryRu(kb(r.responseBytes));
    case 'read':
      return r.status === 404 ? 1 : readRu(kb(r.responseBytes));
    case 'create':
      return writeRu(kb(r.requestBytes));
    case 'upsert':
      return r.status === 201 ? writeRu(kb(r.requestBytes)) : replaceRu(kb(r.requestBytes));
    case 'replace':
      return replaceRu(kb(r.requestBytes));
    case 'patch':
      return replaceRu(kb(r.responseBytes));
    case 'delete':
      return writeRu(1);
    case 'batch':
    case 'bulk': {
      const ops = JSON.parse(r.body ?? '[]') as { operationType: string; resourceBody?: unknown }[];
      return ops.reduce((sum, op) => {
        const size = kb(Buffer.byteLength(JSON.stringify(op.resourceBody ?? {})));
        return sum + (op.operationType === 'Create' ? writeRu(size) : op.operationType === 'Read' ? readRu(size) : replaceRu(size));
      }, 0);
    }
  }
}

const WRITES = new Set(['create', 'upsert', 'replace', 'patch', 'batch', 'bulk', 'delete']);

interface TurnCost {
  requests: number;
  kinds: string;
  /** Mean milliseconds per turn spent in each request kind, as the proxy timed the stand-in's answers. */
  msByKind: Map<string, number>;
  bytesWritten: number;
  bytesSent: number;
  bytesReceived: number;
  ru: number;
}

function summarize(turns: ProxiedRequest[][]): TurnCost {
  const n = turns.length;
  const all = turns.flat();
  const msByKind = new Map<string, number>();
  for (const r of all) msByKind.set(r.kind, (msByKind.get(r.kind) ?? 0) + r.ms / n);
  return {
    requests: all.length / n,
    kinds: turns[0]!.map((r) => r.kind).join(' '),
    msByKind,
    bytesWritten: all.filter((r) => WRITES.has(r.kind)).reduce((s, r) => s + r.requestBytes, 0) / n,
    bytesSent: all.reduce((s, r) => s + r.requestBytes, 0) / n,
    bytesReceived: all.reduce((s, r) => s + r.responseBytes, 0) / n,
    ru: all.reduce((s, r) => s + estimateRu(r), 0) / n,
  };
}

interface Side {
  turn: () => Promise<void>;
  reset: () => Promise<void>;
}
/**
 * p50 and mean wall time of each side's `turn` (each followed by an untimed `reset`), the sides
 * taking turns (the one that goes first alternating) so load on the shared machine hits both alike.
 */
async function timeInTurns(sides: [Side, Side], { warmup = 3, min = 5, max = 300, budgetMs = 5000 } = {}) {
  for (let i = 0; i < warmup; i++)
    for (const side of sides) {
      await side.turn();
      await side.reset();
    }
  const samples: [number[], number[]] = [[], []];
  const t0 = performance.now();
  for (let i = 0; i < max && (i < min || performance.now() - t0 < budgetMs); i++) {
    for (const k of i % 2 ? [1, 0] : [0, 1]) {
      const s = performance.now();
      await sides[k]!.turn();
      samples[k]!.push(performance.now() - s);
      await sides[k]!.reset();
    }
  }
  return samples.map((list) => {
    list.sort((x, y) => x - y);
    return { p50: list[Math.floor(list.length / 2)]!, mean: list.reduce((x, y) => x + y, 0) / list.length, n: list.length };
  }) as [{ p50: number; mean: number; n: number }, { p50: number; mean: number; n: number }];
}

const fmt = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2));
const fmtBytes = (b: number) =>
  b >= 1024 * 1024 ? `${(b / 1024 / 1024).toFixed(2)} MB` : b >= 1024 ? `${(b / 1024).toFixed(1)} KB` : `${Math.round(b)} B`;
const ratio = (a: number, b: number) => `${(a / b).toFixed(a / b >= 100 ? 0 : 1)}x`;

/** One measured history size. */
export interface Row {
  size: number;
  lcDocBytes: number;
  ctx: TurnCost & { p50: number; mean: number; n: number };
  lc: TurnCost & { p50: number; mean: number; n: number };
}

/** Runs the benchmark on its own stand-in and prints its tables; resolves to the measured rows. */
export async function cosmosHistory(): Promise<Row[]> {
  const started = performance.now();
  const { LangChainCosmosHistory, lcCore, lcVersion, lcCoreVersion, benchCoreVersion } = await loadLangChain();
  console.log(
    `@langchain/azure-cosmosdb ${lcVersion} runs on the @langchain/core it resolves: ${lcCoreVersion} (the other benches: ${benchCoreVersion})`,
  );
  // ---- Setup --------------------------------------------------------------------------------------
  const standIn = await startCosmosStandIn();
  const proxy = await startFaultProxy(standIn.endpoint, { recordBodies: true });
  const connect = (endpoint: string) =>
    new CosmosClient({ endpoint, key: standIn.key, connectionPolicy: { enableEndpointDiscovery: false } });
  const direct = connect(standIn.endpoint);
  const counted = connect(proxy.endpoint);
  console.log(
    `# Cosmos DB history: per-turn cost as history grows (stand-in @vercel/cosmosdb-server on ${standIn.endpoint}, in process)\n`,
  );

  const databaseId = 'bench';
  const state = {};
  const ctxMessage = (i: number) => (i % 2 ? Message.assistant(`${TEXT} #${i}`) : Message.user(`${TEXT} #${i}`));
  const lcMessage = (i: number) => (i % 2 ? new lcCore.AIMessage(`${TEXT} #${i}`) : new lcCore.HumanMessage(`${TEXT} #${i}`));

  const rows: Row[] = [];

  for (const size of SIZES) {
    const containerId = `ctx-${size}`;
    const sessionId = `session-${size}`;
    // ---- ctx: one item per message, window of 20 ----
    const ctx = new CosmosHistoryProvider({ client: direct, databaseId, containerId, createIfNotExists: true, maxMessages: WINDOW });
    const ctxCounted = new CosmosHistoryProvider({ client: counted, databaseId, containerId, maxMessages: WINDOW });
    for (let i = 0; i < size; i += 100)
      await ctx.append(
        sessionId,
        Array.from({ length: Math.min(100, size - i) }, (_, j) => ctxMessage(i + j)),
      );
    let turnNo = 0;
    let lastTurn: Message[] = [];
    const ctxTurn = async (provider: CosmosHistoryProvider) => {
      const window = await provider.getMessages(sessionId, { state, limit: WINDOW });
      if (window.length !== Math.min(WINDOW, size)) throw new Error(`ctx window has ${window.length} messages`);
      lastTurn = [Message.user(`${TEXT} turn ${++turnNo}`), Message.assistant(`${TEXT} reply ${turnNo}`)];
      await provider.saveMessages(sessionId, lastTurn, { state });
    };
    const ctxContainer: Container = direct.database(databaseId).container(containerId);
    const ctxReset = async () => {
      for (const m of lastTurn)
        await ctxContainer.item((await ctx.itemIds(sessionId, m.id)).message, ctx.partitionValue(sessionId)).delete();
    };

    // ---- LangChain: one document per session ----
    const lcContainerName = `langchain-${size}`;
    const lc = new LangChainCosmosHistory({
      sessionId,
      userId: 'bench-user',
      client: direct,
      databaseName: databaseId,
      containerName: lcContainerName,
    });
    const lcCounted = new LangChainCosmosHistory({
      sessionId,
      userId: 'bench-user',
      client: counted,
      databaseName: databaseId,
      containerName: lcContainerName,
    });
    await lc.getMessages(); // creates its database and container (partition key /userId), as the library does
    const lcContainer = direct.database(databaseId).container(lcContainerName);
    const seedDoc = {
      id: sessionId,
      userId: 'bench-user',
      context: {},
      messages: lcCore.mapChatMessagesToStoredMessages(Array.from({ length: size }, (_, i) => lcMessage(i))),
    };
    const lcDocBytes = Buffer.byteLength(JSON.stringify(seedDoc));
    await lcContainer.items.upsert(seedDoc);
    const lcTurn = async (history: LangChainHistory) => {
      const all = await history.getMessages();
      if (all.length !== size) throw new Error(`LangChain loaded ${all.length} messages`);
      turnNo++;
      await history.addMessages([new lcCore.HumanMessage(`${TEXT} turn ${turnNo}`), new lcCore.AIMessage(`${TEXT} reply ${turnNo}`)]);
    };
    const lcReset = async () => {
      await lcContainer.items.upsert(seedDoc);
    };

    // Warm both code paths once (metadata caches, JIT), then count and time.
    await ctxTurn(ctxCounted);
    await ctxReset();
    await lcTurn(lcCounted);
    await lcReset();
    const count = async (turn: () => Promise<void>, reset: () => Promise<void>) => {
      const turns: ProxiedRequest[][] = [];
      for (let i = 0; i < 5; i++) {
        proxy.resetLog();
        await turn();
        turns.push([...proxy.requests]);
        await reset();
      }
      return summarize(turns);
    };
    const ctxCost = await count(() => ctxTurn(ctxCounted), ctxReset);
    const lcCost = await count(() => lcTurn(lcCounted), lcReset);
    const [ctxTime, lcTime] = await timeInTurns(
      [
        { turn: () => ctxTurn(ctx), reset: ctxReset },
        { turn: () => lcTurn(lc), reset: lcReset },
      ],
      size >= 10_000 ? { warmup: 1, min: 10, max: 20, budgetMs: 8000 } : {},
    );
    rows.push({ size, lcDocBytes, ctx: { ...ctxCost, ...ctxTime }, lc: { ...lcCost, ...lcTime } });
    console.log(`measured ${size.toLocaleString('en')} stored messages (${((performance.now() - started) / 1000).toFixed(1)} s)`);
  }

  // ---- Report ---------------------------------------------------------------------------------------
  console.log('\n## Per turn: load the history, store the user message and the reply\n');
  console.log(
    '| stored messages | ctx requests | LangChain requests | LC / ctx | ctx bytes written | LangChain bytes written | LC / ctx | ctx bytes received | LangChain bytes received |',
  );
  console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of rows) {
    console.log(
      `| ${r.size.toLocaleString('en')} | ${r.ctx.requests} | ${r.lc.requests} | ${ratio(r.lc.requests, r.ctx.requests)} | ${fmtBytes(r.ctx.bytesWritten)} | ${fmtBytes(r.lc.bytesWritten)} | ${ratio(r.lc.bytesWritten, r.ctx.bytesWritten)} | ${fmtBytes(r.ctx.bytesReceived)} | ${fmtBytes(r.lc.bytesReceived)} |`,
    );
  }
  console.log(
    '\n| stored messages | ctx p50 ms (mean) | LangChain p50 ms (mean) | LC / ctx (p50) | ctx est. RU | LangChain est. RU | LC / ctx (RU) |',
  );
  console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of rows) {
    console.log(
      `| ${r.size.toLocaleString('en')} | ${fmt(r.ctx.p50)} (${fmt(r.ctx.mean)}) | ${fmt(r.lc.p50)} (${fmt(r.lc.mean)}) | ${ratio(r.lc.p50, r.ctx.p50)} | ${r.ctx.ru.toFixed(1)} | ${r.lc.ru.toFixed(1)} | ${ratio(r.lc.ru, r.ctx.ru)} |`,
    );
  }
  const first = rows[0]!;
  const last = rows.at(-1)!;
  console.log(
    `\nctx at ${last.size.toLocaleString('en')} vs ${first.size} stored messages: requests ${ratio(last.ctx.requests, first.ctx.requests)}, bytes written ${ratio(last.ctx.bytesWritten, first.ctx.bytesWritten)}, est. RU ${ratio(last.ctx.ru, first.ctx.ru)} (flat = 1.0x); LangChain: requests ${ratio(last.lc.requests, first.lc.requests)}, bytes written ${ratio(last.lc.bytesWritten, first.lc.bytesWritten)}, est. RU ${ratio(last.lc.ru, first.lc.ru)}.`,
  );
  console.log('\nRequests of one turn (as the proxy saw them):');
  console.log(`  ctx:       ${first.ctx.kinds}`);
  console.log(`  LangChain: ${first.lc.kinds}`);
  const byKind = (cost: TurnCost) => [...cost.msByKind].map(([kind, ms]) => `${kind} ${fmt(ms)}`).join(', ');
  console.log(`\nWhere the stand-in spends a turn at ${last.size.toLocaleString('en')} messages (ms, through the proxy):`);
  console.log(`  ctx:       ${byKind(last.ctx)}`);
  console.log(`  LangChain: ${byKind(last.lc)}`);
  console.log('\nLangChain document per session (all messages in one item):');
  for (const r of rows) {
    const over = r.lcDocBytes > 2 * 1024 * 1024;
    console.log(
      `  ${r.size.toLocaleString('en')} messages: ${fmtBytes(r.lcDocBytes)}${over ? ' (over the 2 MB item limit: real Cosmos DB rejects the write with 413; the stand-in does not enforce it)' : ''}`,
    );
  }
  console.log(`
Cost model (request units, estimates):
  point read of an item: 1 RU at 1 KB, 10 RU at 100 KB (documented), linear between, 1 RU minimum
  insert of an item: ~5.5 RU at 1 KB, 50 RU at 100 KB (documented), linear between, 5.5 RU minimum
  replace (upsert over an existing item) = 2 x insert (documented); patch = a replace of the whole item (assumed)
  transactional batch = the sum of its operations (documented)
  single-partition query = ~2.5 RU + 0.1 RU per KB returned (assumed; check x-ms-request-charge on a real account)
  query plan requests (gateway metadata) are not counted
  Indexing is not modelled: ctx's container indexes 7 short properties, LangChain's default policy indexes every
  property of every message, so real charges favour ctx further.
Latency is the stand-in in this process (it scans a container for every query and parses whole documents), not
Cosmos DB's: the request and byte counts are what carries over to a real account.
LangChain: @langchain/azure-cosmosdb ${lcVersion} (AzureCosmsosDBNoSQLChatMessageHistory) on @langchain/core ${lcCoreVersion}, on @azure/cosmos shared with ctx, Node ${process.version}.
Samples per row: ctx ${rows.map((r) => r.ctx.n).join('/')}, LangChain ${rows.map((r) => r.lc.n).join('/')}.`);

  direct.dispose();
  counted.dispose();
  await proxy.stop();
  await standIn.stop();
  console.log(`Cosmos DB history bench wall time: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return rows;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await cosmosHistory();
