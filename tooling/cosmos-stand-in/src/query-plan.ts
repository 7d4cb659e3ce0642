import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

/** The SQL engine the stand-in runs queries with: plans are made from the grammar that executes them. */
const parseQuery = createRequire(require.resolve('@vercel/cosmosdb-server'))('@zeit/cosmosdb-query').default as (sql: string) => {
  ast: SqlAst;
};

/**
 * The SDK's own effective-partition-key hash (`hashPartitionKey` of `@azure/cosmos`, not part of
 * its public API), so the ranges the proxy routes by are the ranges the SDK computes.
 */
const { hashPartitionKey } = require(join(dirname(require.resolve('@azure/cosmos')), 'utils/hashing/hash.js')) as {
  hashPartitionKey: (values: unknown[], definition: PartitionKeyDefinitionLike) => string;
};

/** The partition key definition of a container, as the service returns it. */
export interface PartitionKeyDefinitionLike {
  paths: string[];
  kind?: string;
  version?: number;
}

/** A range of effective partition keys, as a query plan states it. */
export interface QueryRange {
  min: string;
  max: string;
  isMinInclusive: boolean;
  isMaxInclusive: boolean;
}

/** The query plan (`partitionedQueryExecutionInfo`) the gateway answers a query-plan request with. */
export interface QueryPlan {
  partitionedQueryExecutionInfoVersion: 2;
  queryInfo: {
    distinctType: 'None' | 'Ordered' | 'Unordered';
    top: number | null;
    offset: number | null;
    limit: number | null;
    orderBy: ('Ascending' | 'Descending')[];
    orderByExpressions: string[];
    groupByExpressions: string[];
    groupByAliases: string[];
    aggregates: string[];
    groupByAliasToAggregateType: Record<string, string>;
    rewrittenQuery: string;
    hasSelectValue: boolean;
    dCountInfo: null;
    hasNonStreamingOrderBy: boolean;
  };
  queryRanges: QueryRange[];
}

/** What a query needs from the gateway. */
export interface PlannedQuery {
  plan: QueryPlan;
  /** Whether a cross-partition run needs the SDK's pipeline (ORDER BY, TOP, aggregates, DISTINCT, GROUP BY, OFFSET). */
  needsPipeline: boolean;
  /** Why the emulation cannot plan it for a pipeline (aggregates, DISTINCT, GROUP BY, OFFSET), if it cannot. */
  unsupported?: string;
  /** The root alias of the FROM clause (`c` in `FROM c`, `r` in `FROM root r`). */
  alias: string;
}

// biome-ignore lint/suspicious/noExplicitAny: the stand-in's AST is untyped JSON.
type SqlAst = any;

const AGGREGATES: Record<string, string> = { COUNT: 'Count', SUM: 'Sum', MIN: 'Min', MAX: 'Max', AVG: 'Average' };

/** The whole effective partition key space. */
export const FULL_RANGE: QueryRange = { min: '', max: 'FF', isMinInclusive: true, isMaxInclusive: false };

/**
 * Plans a query as the gateway does for the JavaScript SDK: classifies it, and for ORDER BY writes
 * the rewritten per-partition query (`_rid`, `orderByItems`, `payload`, and the
 * `{documentdb-formattableorderbyquery-filter}` placeholder the SDK fills when it resumes).
 * @throws SyntaxError (from the stand-in's parser) for a query it cannot parse.
 */
export function planQuery(sql: string, parameters: readonly { name: string; value: unknown }[], ranges: QueryRange[]): PlannedQuery {
  const body = parsed(sql).body;
  const clauses = splitClauses(sql);
  const source = body.from?.source;
  const alias: string = source?.alias?.name ?? source?.expression?.expression?.name ?? 'root';
  const select = body.select;
  const hasSelectValue = select?.type === 'select_specification' && select.value != null;
  const top = body.top ? resolveNumber(body.top.value, parameters) : null;
  const sorts: SqlAst[] = body.orderBy?.expressions ?? [];
  const aggregates = findAggregates(select);
  const unsupported = aggregates.length
    ? 'aggregates'
    : body.distinct || /^\s*(TOP\s+\S+\s+)?DISTINCT\b/i.test(clauses.select)
      ? 'DISTINCT'
      : body.groupBy
        ? 'GROUP BY'
        : body.offsetLimit
          ? 'OFFSET LIMIT'
          : undefined;
  const orderByTexts = clauses.orderBy ? splitTopLevel(clauses.orderBy, ',').map((e) => e.replace(/\s+(ASC|DESC)\s*$/i, '').trim()) : [];
  let rewrittenQuery = '';
  if (sorts.length > 0 && !unsupported) {
    const topText = /^\s*TOP\s+(\S+)/i.exec(clauses.select)?.[0] ?? '';
    const list = topText ? clauses.select.slice(topText.length) : clauses.select;
    const items = orderByTexts.map((e) => `{"item": ${e}}`).join(', ');
    const filter = clauses.where
      ? `(${clauses.where}) AND ({documentdb-formattableorderbyquery-filter})`
      : '{documentdb-formattableorderbyquery-filter}';
    rewrittenQuery = `SELECT${topText ? ` ${topText.trim()}` : ''} ${alias}._rid, [${items}] AS orderByItems, ${payloadOf(list, alias)} AS payload FROM ${clauses.from} WHERE ${filter} ORDER BY ${clauses.orderBy}`;
  }
  return {
    alias,
    needsPipeline: sorts.length > 0 || top !== null || unsupported !== undefined,
    ...(unsupported ? { unsupported } : {}),
    plan: {
      partitionedQueryExecutionInfoVersion: 2,
      queryInfo: {
        distinctType: unsupported === 'DISTINCT' ? 'Unordered' : 'None',
        top,
        offset: null,
        limit: null,
        orderBy: sorts.map((s: SqlAst) => (String(s.order ?? 'ASC').toUpperCase() === 'DESC' ? 'Descending' : 'Ascending')),
        orderByExpressions: orderByTexts,
        groupByExpressions: [],
        groupByAliases: [],
        aggregates,
        groupByAliasToAggregateType: {},
        rewrittenQuery,
        hasSelectValue,
        dCountInfo: null,
        hasNonStreamingOrderBy: false,
      },
      queryRanges: ranges,
    },
  };
}

/**
 * The query with `condition` (an expression binding at least as tightly as AND, such as a function
 * call) added to its WHERE clause: the filter restricting it to one partition key range. The
 * existing clause is put in parentheses only when it needs them (a top-level OR or `?`), because
 * the stand-in's parser takes time exponential in the nesting depth of parentheses: one more level
 * around the WHERE clause of the SDK's per-range ORDER BY queries doubles the time to parse them
 * (about a second on this machine).
 */
export function addCondition(sql: string, condition: string): string {
  const c = splitClauses(sql);
  const where = c.where ? `${condition} AND ${bindsLooserThanAnd(c.where) ? `(${c.where})` : c.where}` : condition;
  return `SELECT ${c.select} FROM ${c.from} WHERE ${where}${c.tail ? ` ${c.tail}` : ''}`;
}

/**
 * The root alias of a query's FROM clause (`c` in `FROM c`, `r` in `FROM root r` or `FROM root AS r`),
 * read from the text without parsing the query.
 */
export function aliasOf(sql: string): string {
  const [, collection = 'root', alias] = /^\s*([A-Za-z_]\w*)(?:\s+(?:AS\s+)?([A-Za-z_]\w*))?/i.exec(splitClauses(sql).from) ?? [];
  return alias && !/^(JOIN|IN)$/i.test(alias) ? alias : collection;
}

/** Whether an expression has a top-level OR, ternary or coalescing operator, so `x AND expression` would regroup it. */
function bindsLooserThanAnd(expression: string): boolean {
  let found = false;
  scanTopLevel(expression, (i) => {
    if (expression[i] === '?' || (/^OR\b/i.test(expression.slice(i, i + 3)) && (i === 0 || /[^\w@$.]/.test(expression[i - 1]!))))
      found = true;
    return 0;
  });
  return found;
}

const ASTS = new Map<string, SqlAst>();

/** The stand-in's AST of a query, remembered for the last 64 queries (a query-plan request and the refused query that follows it share one). */
function parsed(sql: string): SqlAst {
  let ast = ASTS.get(sql);
  if (ast === undefined) {
    ast = parseQuery(sql).ast;
    if (ASTS.size >= 64) ASTS.delete(ASTS.keys().next().value!);
    ASTS.set(sql, ast);
  }
  return ast;
}

/**
 * The effective partition key of a partition key value (all components) or prefix (fewer), by
 * the SDK's hash. A prefix of a hierarchical key covers `[epk, epk + "FF")`.
 */
export function effectivePartitionKey(values: readonly unknown[], definition: PartitionKeyDefinitionLike): string {
  return hashPartitionKey([...values], definition);
}

/** The ranges a query covers: one partition key value, a prefix of a hierarchical key, or everything. */
export function rangesOf(partitionKey: unknown[] | undefined, definition: PartitionKeyDefinitionLike): QueryRange[] {
  if (partitionKey === undefined) return [FULL_RANGE];
  const epk = effectivePartitionKey(partitionKey, definition);
  if (partitionKey.length < definition.paths.length) return [{ min: epk, max: `${epk}FF`, isMinInclusive: true, isMaxInclusive: false }];
  return [{ min: epk, max: epk, isMinInclusive: true, isMaxInclusive: true }];
}

/** The payload expression of the rewritten ORDER BY query: what the original query selected. */
function payloadOf(list: string, alias: string): string {
  const trimmed = list.trim();
  if (trimmed === '*') return alias;
  const value = /^VALUE\s+([\s\S]+)$/i.exec(trimmed);
  if (value) return value[1]!.trim();
  let unnamed = 0;
  const fields = splitTopLevel(trimmed, ',').map((part) => {
    const as = /^([\s\S]+?)\s+AS\s+([A-Za-z_][\w]*)\s*$/i.exec(part.trim());
    const expression = (as ? as[1]! : part).trim();
    const name = as
      ? as[2]!
      : (/\.([A-Za-z_]\w*)\s*$/.exec(expression)?.[1] ?? /\["([^"]+)"\]\s*$/.exec(expression)?.[1] ?? `$${++unnamed}`);
    return `${JSON.stringify(name)}: ${expression}`;
  });
  return `{${fields.join(', ')}}`;
}

function findAggregates(select: SqlAst): string[] {
  const found: string[] = [];
  const visit = (node: SqlAst, depth: number) => {
    if (!node || typeof node !== 'object' || depth > 64) return;
    if (node.type === 'select_query') return; // subqueries aggregate on their own
    if (node.type === 'scalar_function_expression' && !node.udf) {
      const name = AGGREGATES[String(node.name?.name ?? '').toUpperCase()];
      if (name) found.push(name);
    }
    for (const value of Object.values(node)) visit(value, depth + 1);
  };
  visit(select, 0);
  return found;
}

function resolveNumber(node: SqlAst, parameters: readonly { name: string; value: unknown }[]): number | null {
  if (node?.type === 'number_constant') return Number(node.value);
  if (node?.type === 'parameter_name') {
    const value = parameters.find((p) => p.name === node.name)?.value;
    return typeof value === 'number' ? value : null;
  }
  return null;
}

interface Clauses {
  /** Everything between SELECT and FROM (TOP, DISTINCT, VALUE included). */
  select: string;
  from: string;
  where?: string;
  orderBy?: string;
  /** GROUP BY / ORDER BY / OFFSET ... as written, after WHERE. */
  tail: string;
}

const KEYWORDS = /^(SELECT|FROM|WHERE|GROUP\s+BY|ORDER\s+BY|OFFSET)\b/i;

/** Splits a query at its top-level clause keywords (outside strings, parentheses, brackets and braces). */
function splitClauses(sql: string): Clauses {
  const marks: { keyword: string; at: number; end: number }[] = [];
  scanTopLevel(sql, (i) => {
    if (i > 0 && /[\w@$.]/.test(sql[i - 1]!)) return 0;
    const match = KEYWORDS.exec(sql.slice(i));
    if (!match) return 0;
    marks.push({ keyword: match[1]!.toUpperCase().replace(/\s+/g, ' '), at: i, end: i + match[0].length });
    return match[0].length;
  });
  const text = (keyword: string): string | undefined => {
    const index = marks.findIndex((m) => m.keyword === keyword);
    if (index < 0) return undefined;
    return sql.slice(marks[index]!.end, marks[index + 1]?.at ?? sql.length).trim();
  };
  const tailStart = marks.find((m) => ['GROUP BY', 'ORDER BY', 'OFFSET'].includes(m.keyword))?.at ?? sql.length;
  const where = text('WHERE');
  const orderBy = text('ORDER BY');
  return {
    select: text('SELECT') ?? '*',
    from: text('FROM') ?? '',
    ...(where !== undefined ? { where } : {}),
    ...(orderBy !== undefined ? { orderBy } : {}),
    tail: sql.slice(tailStart).trim(),
  };
}

/** Splits `text` at top-level occurrences of `separator`. */
function splitTopLevel(text: string, separator: string): string[] {
  const parts: string[] = [];
  let start = 0;
  scanTopLevel(text, (i) => {
    if (text[i] !== separator) return 0;
    parts.push(text.slice(start, i));
    start = i + 1;
    return 1;
  });
  parts.push(text.slice(start));
  return parts.map((p) => p.trim()).filter(Boolean);
}

/** Calls `visit` at every top-level position of `sql`; `visit` returns how many characters it consumed. */
function scanTopLevel(sql: string, visit: (index: number) => number): void {
  let depth = 0;
  for (let i = 0; i < sql.length; ) {
    const ch = sql[i]!;
    if (ch === "'" || ch === '"') {
      i++;
      while (i < sql.length && sql[i] !== ch) i += sql[i] === '\\' ? 2 : 1;
      i++;
      continue;
    }
    if (ch === '(' || ch === '[' || ch === '{') depth++;
    else if (ch === ')' || ch === ']' || ch === '}') depth--;
    else if (depth === 0) {
      const used = visit(i);
      if (used > 0) {
        i += used;
        continue;
      }
    }
    i++;
  }
}
