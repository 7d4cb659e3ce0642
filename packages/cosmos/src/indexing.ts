import type { CompositePath, IndexingPolicy } from '@azure/cosmos';

/** A property path a query needs a range index on (its ORDER BY), and what needs it. */
export interface RangeIndexNeed {
  /** An index path of one scalar property, e.g. `/seq/?`. */
  path: string;
  /** What fails without it, for the error message, e.g. `window reads (ORDER BY c.seq)`. */
  usedBy: string;
}

/** The range indexes the history queries sort by: without them Cosmos DB refuses the query (400). */
export const HISTORY_RANGE_INDEXES: readonly RangeIndexNeed[] = [
  { path: '/seq/?', usedBy: 'every window read and export (ORDER BY c.seq)' },
  { path: '/updatedAt/?', usedBy: 'listSessions (ORDER BY c.updatedAt)' },
];

/** A composite index a query sorting by several properties needs, and what needs it. */
export interface CompositeIndexNeed {
  /** The paths and orders, as the query's ORDER BY lists them (e.g. `/updatedAtMs` descending). */
  paths: readonly CompositePath[];
  /** What fails without it, for the error message. */
  usedBy: string;
}

/**
 * The composite indexes `CosmosSessionStore.list` sorts by (newest first, then by session id):
 * Cosmos DB refuses an ORDER BY on two or more properties without a composite index of exactly
 * those paths, all in the query's orders or all reversed.
 */
export const SESSION_LIST_COMPOSITE_INDEXES: readonly CompositeIndexNeed[] = [
  {
    paths: [
      { path: '/updatedAtMs', order: 'descending' },
      { path: '/sessionId', order: 'descending' },
    ],
    usedBy: 'list() of every session',
  },
  {
    paths: [
      { path: '/userId', order: 'descending' },
      { path: '/updatedAtMs', order: 'descending' },
      { path: '/sessionId', order: 'descending' },
    ],
    usedBy: 'list({ userId })',
  },
];

/**
 * The composite index needs a policy does not meet. A need is met by a composite index of the same
 * paths in the same sequence whose orders are all the same as the need's or all reversed (an
 * absent order is ascending). No policy at all has no composite index.
 */
export function missingCompositeIndexes(policy: IndexingPolicy | undefined, needs: readonly CompositeIndexNeed[]): CompositeIndexNeed[] {
  if (policy?.indexingMode === 'none') return [...needs];
  const indexes = policy?.compositeIndexes ?? [];
  return needs.filter((need) => !indexes.some((index) => servesOrder(index, need.paths)));
}

function servesOrder(index: readonly CompositePath[], paths: readonly CompositePath[]): boolean {
  if (index.length !== paths.length || index.some((p, i) => p.path !== paths[i]!.path)) return false;
  const same = (p: CompositePath, i: number) => (p.order ?? 'ascending') === (paths[i]!.order ?? 'ascending');
  return index.every(same) || !index.some(same);
}

/**
 * The needs a container's indexing policy does not meet: a path is range-indexed when indexing is
 * on and the most specific of its `includedPaths` / `excludedPaths` that matches it is included
 * (`/a/?` is more specific than `/a/*`, which is more specific than `/*`; an exclusion wins a tie),
 * and that entry does not restrict it to a legacy non-range index kind. No policy at all is
 * Cosmos DB's default (everything indexed).
 */
export function missingRangeIndexes(policy: IndexingPolicy | undefined, needs: readonly RangeIndexNeed[]): RangeIndexNeed[] {
  if (!policy) return [];
  if (policy.indexingMode === 'none') return [...needs];
  return needs.filter((need) => !isRangeIndexed(policy, need.path));
}

function isRangeIndexed(policy: IndexingPolicy, path: string): boolean {
  const target = segments(path).slice(0, -1);
  let best: { score: number; included: boolean; kinds?: readonly { kind?: unknown }[] } | undefined;
  const consider = (rulePath: string, included: boolean, kinds?: readonly { kind?: unknown }[]) => {
    const rule = segments(rulePath);
    const last = rule.at(-1);
    const prefix = rule.slice(0, -1);
    const matches =
      last === '?'
        ? prefix.length === target.length && prefix.every((s, i) => s === target[i])
        : last === '*' && prefix.every((s, i) => s === target[i]) && prefix.length <= target.length;
    if (!matches) return;
    const score = prefix.length * 2 + (last === '?' ? 1 : 0);
    if (!best || score > best.score || (score === best.score && !included)) best = { score, included, ...(kinds ? { kinds } : {}) };
  };
  for (const p of policy.includedPaths ?? []) consider(p.path, true, (p as { indexes?: { kind?: unknown }[] }).indexes);
  for (const p of policy.excludedPaths ?? []) consider(p.path, false);
  if (!best) return (policy.includedPaths ?? []).length === 0 && (policy.excludedPaths ?? []).length === 0;
  if (!best.included) return false;
  return !best.kinds?.length || best.kinds.some((k) => String(k.kind).toLowerCase() === 'range');
}

/** `/a/"b c"/?` as `['a', 'b c', '?']`. */
function segments(path: string): string[] {
  return path
    .split('/')
    .filter((s) => s !== '')
    .map((s) => (s.startsWith('"') && s.endsWith('"') && s.length >= 2 ? s.slice(1, -1) : s));
}
