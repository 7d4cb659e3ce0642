import { Agent, type IncomingHttpHeaders } from 'node:http';
import { addCondition, aliasOf, effectivePartitionKey, planQuery, rangesOf, type PartitionKeyDefinitionLike } from './query-plan.js';
import { sendUpstream } from './upstream.js';

/** An answer the gateway emulation sends itself, without the stand-in. */
export interface GatewayAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** What to do with a request: answer it here, forward another body, or forward it as it is (`undefined`). */
export type GatewayDecision = { answer: GatewayAnswer } | { forward: Buffer } | undefined;

/** The gateway behaviour the stand-in lacks, in front of it. */
export interface GatewayEmulation {
  /** The partition key ranges every container is reported to have, as `[minInclusive, maxExclusive)`. */
  readonly ranges: readonly { id: string; minInclusive: string; maxExclusive: string }[];
  /** Decides what to do with one request. */
  handle(request: { method: string; path: string; headers: IncomingHttpHeaders; body: Buffer }): Promise<GatewayDecision>;
}

const COLLECTION = /^\/dbs\/([^/]+)\/colls\/([^/]+)\/(docs|pkranges)\/?$/;
const RANGE_RIDS = '@__standInRangeRids';

/**
 * Emulates what the Cosmos DB gateway does for queries and the stand-in does not, so the SDK runs
 * its real cross-partition query pipeline against the stand-in:
 *
 * - every container reports `partitionKeyRanges` physical partition key ranges (`GET .../pkranges`),
 *   splitting the effective-partition-key space evenly;
 * - a query-plan request (`x-ms-cosmos-is-query-plan-request`) is answered with a query plan
 *   (`partitionedQueryExecutionInfo`): ORDER BY expressions and the rewritten per-partition query,
 *   TOP, aggregates, and the ranges the partition key header covers;
 * - a query without a full partition key that needs the SDK's pipeline (ORDER BY, TOP, aggregates,
 *   DISTINCT, GROUP BY, OFFSET) is refused with 400 and the plan in `additionalErrorInfo`, as the
 *   gateway refuses it, so the SDK falls back to its pipeline;
 * - a query for one partition key range (`x-ms-documentdb-partitionkeyrangeid`, optionally narrowed
 *   by `x-ms-start-epk` / `x-ms-end-epk`) sees only the items whose effective partition key (the
 *   SDK's own hash of the item's partition key values) falls in that range: the proxy adds
 *   `ARRAY_CONTAINS(<their _rids>, c._rid)` to its WHERE clause.
 *
 * Cross-partition aggregates, DISTINCT, GROUP BY and OFFSET are planned but not run through the
 * pipeline (a 400 says so); single-partition queries go to the stand-in unchanged.
 */
export function createGatewayEmulation(target: string, partitionKeyRanges: number): GatewayEmulation {
  if (!Number.isInteger(partitionKeyRanges) || partitionKeyRanges < 1 || partitionKeyRanges > 64)
    throw new RangeError(`partitionKeyRanges must be an integer from 1 to 64, got ${partitionKeyRanges}`);
  const upstream = new URL(target);
  const agent = new Agent({ keepAlive: true });
  // Effective partition keys of V2 hashes start with 0-3 (the top two bits are cleared): split 00-40 evenly.
  const bounds = Array.from({ length: partitionKeyRanges - 1 }, (_, i) =>
    Math.floor(((i + 1) * 64) / partitionKeyRanges)
      .toString(16)
      .toUpperCase()
      .padStart(2, '0'),
  );
  const ranges = [...bounds, 'FF'].map((max, i) => ({ id: String(i), minInclusive: i === 0 ? '' : bounds[i - 1]!, maxExclusive: max }));

  const call = async (method: string, path: string, headers: Record<string, string>, body?: string) => {
    const reply = await sendUpstream(agent, upstream, { method, path, headers, ...(body !== undefined ? { body } : {}) });
    return { status: reply.status, json: JSON.parse(reply.body.toString('utf8') || '{}') as Record<string, unknown> };
  };

  const definitionOf = async (db: string, coll: string): Promise<PartitionKeyDefinitionLike | undefined> => {
    const { status, json } = await call('GET', `/dbs/${db}/colls/${coll}`, { 'x-ms-version': '2020-07-15' });
    return status === 200 ? ((json.partitionKey as PartitionKeyDefinitionLike | undefined) ?? { paths: ['/id'] }) : undefined;
  };

  /** The `_rid`s of the items whose effective partition key lies in `[min, max)` (one unpaged scan of the container). */
  const ridsIn = async (db: string, coll: string, definition: PartitionKeyDefinitionLike, min: string, max: string) => {
    const fields = definition.paths.map(
      (p, i) =>
        `c${p
          .split('/')
          .filter(Boolean)
          .map((s) => `[${JSON.stringify(s)}]`)
          .join('')} AS p${i}`,
    );
    const { status, json } = await call(
      'POST',
      `/dbs/${db}/colls/${coll}/docs`,
      { 'content-type': 'application/query+json', 'x-ms-documentdb-isquery': 'true', 'x-ms-documentdb-query-enablecrosspartition': 'true' },
      JSON.stringify({ query: `SELECT c._rid, ${fields.join(', ')} FROM c`, parameters: [] }),
    );
    if (status !== 200) throw new Error(`the stand-in answered ${status} to the partition scan`);
    const rids: string[] = [];
    for (const doc of (json.Documents as Record<string, unknown>[] | undefined) ?? []) {
      const epk = effectivePartitionKey(
        definition.paths.map((_, i) => doc[`p${i}`]),
        definition,
      );
      if (epk >= min && epk < max) rids.push(String(doc._rid));
    }
    return rids;
  };

  const json = (status: number, value: unknown, extra: Record<string, string> = {}): { answer: GatewayAnswer } => ({
    answer: {
      status,
      headers: {
        'content-type': 'application/json',
        'x-ms-activity-id': '00000000-0000-0000-0000-000000000000',
        'x-ms-request-charge': '0',
        ...extra,
      },
      body: Buffer.from(JSON.stringify(value)),
    },
  });

  return {
    ranges,
    async handle({ method, path, headers, body }) {
      const match = COLLECTION.exec(path.split('?', 1)[0]!);
      if (!match) return undefined;
      const [, db, coll, kind] = match as unknown as [string, string, string, string];
      if (kind === 'pkranges') {
        if (method !== 'GET') return undefined;
        const { json: collection } = await call('GET', `/dbs/${db}/colls/${coll}`, { 'x-ms-version': '2020-07-15' });
        const rid = String(collection._rid ?? '');
        const list = ranges.map((r, i) => ({
          ...r,
          ridPrefix: i,
          throughputFraction: 1 / ranges.length,
          status: 'online',
          parents: [],
          _rid: `${rid}${i}`,
          _self: `dbs/${db}/colls/${coll}/pkranges/${i}/`,
          _etag: `"range-${i}"`,
          _ts: 0,
        }));
        return json(200, { _rid: rid, PartitionKeyRanges: list, _count: list.length }, { 'x-ms-item-count': String(list.length) });
      }
      const flag = (name: string) => String(headers[name] ?? '').toLowerCase() === 'true';
      const isPlan = flag('x-ms-cosmos-is-query-plan-request');
      if (method !== 'POST' || !(isPlan || flag('x-ms-documentdb-isquery') || headers['content-type'] === 'application/query+json'))
        return undefined;
      const spec = JSON.parse(body.toString('utf8') || '{}') as { query?: string; parameters?: { name: string; value: unknown }[] };
      if (typeof spec.query !== 'string') return undefined;
      const definition = await definitionOf(db, coll);
      if (!definition) return undefined; // the stand-in answers the 404 itself
      const headerKey = headers['x-ms-documentdb-partitionkey'];
      const partitionKey = typeof headerKey === 'string' ? (JSON.parse(headerKey) as unknown[]) : undefined;
      const rangeId = headers['x-ms-documentdb-partitionkeyrangeid'];
      if (!isPlan && typeof rangeId === 'string') {
        // Not parsed here: the stand-in's parser takes time exponential in the nesting of parentheses,
        // and the per-range queries the SDK sends nest the original WHERE clause two levels deeper.
        const range = ranges.find((r) => r.id === rangeId.split(',').at(-1));
        if (!range)
          return json(410, { code: 'Gone', message: `Partition key range ${rangeId} does not exist.` }, { 'x-ms-substatus': '1002' });
        const start = headers['x-ms-start-epk'];
        const end = headers['x-ms-end-epk'];
        const min = typeof start === 'string' && start > range.minInclusive ? start : range.minInclusive;
        const max = typeof end === 'string' && end < range.maxExclusive ? end : range.maxExclusive;
        const rids = await ridsIn(db, coll, definition, min, max);
        const query = addCondition(spec.query, `ARRAY_CONTAINS(${RANGE_RIDS}, ${aliasOf(spec.query)}._rid)`);
        return {
          forward: Buffer.from(
            JSON.stringify({ ...spec, query, parameters: [...(spec.parameters ?? []), { name: RANGE_RIDS, value: rids }] }),
          ),
        };
      }
      const crossPartition = partitionKey === undefined || partitionKey.length < definition.paths.length;
      if (!isPlan && !crossPartition) return undefined;
      let planned: ReturnType<typeof planQuery>;
      try {
        planned = planQuery(spec.query, spec.parameters ?? [], rangesOf(partitionKey, definition));
      } catch (error) {
        return json(400, { code: 'BadRequest', message: `Syntax error: ${(error as Error).message}` });
      }
      if (isPlan) return json(200, planned.plan);
      if (!planned.needsPipeline) return undefined;
      if (planned.unsupported) {
        return json(400, {
          code: 'BadRequest',
          message: `The stand-in's gateway emulation does not run cross-partition queries with ${planned.unsupported}.`,
        });
      }
      return json(
        400,
        {
          code: 'BadRequest',
          message:
            'The provided cross partition query can not be directly served by the gateway. This is a first chance (internal) exception that all newer clients will know how to handle gracefully.',
          additionalErrorInfo: JSON.stringify(planned.plan),
        },
        { 'x-ms-substatus': '1004' },
      );
    },
  };
}
