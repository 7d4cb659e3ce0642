import type { StoredMemory } from './types.js';

/** A filter the platform would refuse with a 400; `message` says why. */
export class FilterError extends Error {
  override name = 'FilterError';
}

/** A compiled filter. */
export type Predicate = (memory: StoredMemory) => boolean;

const ENTITY_FIELDS = new Set(['user_id', 'agent_id', 'app_id', 'run_id']);
const TIME_FIELDS = new Set(['created_at', 'updated_at']);
const LOGICAL = new Set(['AND', 'OR', 'NOT']);
const ENTITY_OPS = new Set(['eq', 'ne', 'in']);
const TIME_OPS = new Set(['gt', 'gte', 'lt', 'lte', 'eq', 'ne']);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Compiles the platform's filter grammar (v2 memory filters): a root object whose keys are `AND`,
 * `OR`, `NOT` (each a list of filter objects) or fields, several keys at one level meaning AND.
 * Entity fields (`user_id`, `agent_id`, `app_id`, `run_id`) take a string (equality), `'*'` (any
 * non-null value) or one of `{ eq }`, `{ ne }`, `{ in: [...] }`; `created_at` / `updated_at` take
 * `gt`, `gte`, `lt`, `lte`, `eq`, `ne` with ISO dates; `categories` takes `{ in }` or `{ contains }`;
 * `keywords` takes `{ contains }` or `{ icontains }` on the memory text; `metadata` takes an object
 * whose keys must equal. Anything else is a `FilterError` (the platform answers 400).
 */
export function compileFilter(filters: unknown, path = 'filters'): Predicate {
  if (!isPlainObject(filters)) throw new FilterError(`${path} must be an object.`);
  const parts: Predicate[] = [];
  for (const [key, value] of Object.entries(filters)) {
    const at = `${path}.${key}`;
    if (LOGICAL.has(key)) {
      if (!Array.isArray(value) || value.length === 0) throw new FilterError(`${at} must be a non-empty list of filter objects.`);
      const subs = value.map((sub, i) => compileFilter(sub, `${at}[${i}]`));
      if (key === 'AND') parts.push((m) => subs.every((p) => p(m)));
      else if (key === 'OR') parts.push((m) => subs.some((p) => p(m)));
      else parts.push((m) => !subs.some((p) => p(m)));
    } else if (ENTITY_FIELDS.has(key)) {
      parts.push(entityCondition(key as keyof StoredMemory, value, at));
    } else if (TIME_FIELDS.has(key)) {
      parts.push(timeCondition(key as 'created_at' | 'updated_at', value, at));
    } else if (key === 'categories') {
      parts.push(categoriesCondition(value, at));
    } else if (key === 'keywords') {
      parts.push(keywordsCondition(value, at));
    } else if (key === 'metadata') {
      if (!isPlainObject(value)) throw new FilterError(`${at} must be an object of metadata keys and values.`);
      const wanted = Object.entries(value);
      parts.push((m) =>
        wanted.every(
          ([k, v]) => m.metadata !== null && Object.hasOwn(m.metadata, k) && JSON.stringify(m.metadata[k]) === JSON.stringify(v),
        ),
      );
    } else {
      throw new FilterError(
        `Invalid filter key '${key}' at ${path}. Allowed: AND, OR, NOT, user_id, agent_id, app_id, run_id, created_at, updated_at, categories, keywords, metadata.`,
      );
    }
  }
  return (m) => parts.every((p) => p(m));
}

function entityCondition(field: keyof StoredMemory, value: unknown, at: string): Predicate {
  const get = (m: StoredMemory) => m[field] as string | null;
  if (typeof value === 'string') {
    if (value === '*') return (m) => get(m) !== null;
    return (m) => get(m) === value;
  }
  if (!isPlainObject(value)) throw new FilterError(`${at} must be a string, "*", or an object with eq, ne or in.`);
  const ops = Object.entries(value);
  if (ops.length === 0) throw new FilterError(`${at} needs an operator (eq, ne, in).`);
  const parts: Predicate[] = [];
  for (const [op, operand] of ops) {
    if (!ENTITY_OPS.has(op)) throw new FilterError(`Unsupported operator '${op}' at ${at}; use eq, ne or in.`);
    if (op === 'in') {
      if (!Array.isArray(operand) || operand.some((v) => typeof v !== 'string'))
        throw new FilterError(`${at}.in must be a list of strings.`);
      parts.push((m) => operand.includes(get(m)));
    } else {
      if (typeof operand !== 'string') throw new FilterError(`${at}.${op} must be a string.`);
      parts.push(op === 'eq' ? (m) => get(m) === operand : (m) => get(m) !== operand);
    }
  }
  return (m) => parts.every((p) => p(m));
}

function timeCondition(field: 'created_at' | 'updated_at', value: unknown, at: string): Predicate {
  if (!isPlainObject(value)) throw new FilterError(`${at} must be an object with gt, gte, lt, lte, eq or ne.`);
  const parts: Predicate[] = [];
  for (const [op, operand] of Object.entries(value)) {
    if (!TIME_OPS.has(op)) throw new FilterError(`Unsupported operator "${op}" at ${at}.`);
    const limit = typeof operand === 'string' ? Date.parse(operand) : Number.NaN;
    if (Number.isNaN(limit)) throw new FilterError(`${at}.${op} must be an ISO 8601 date.`);
    const t = (m: StoredMemory) => Date.parse(m[field]);
    const compare: Record<string, Predicate> = {
      gt: (m) => t(m) > limit,
      gte: (m) => t(m) >= limit,
      lt: (m) => t(m) < limit,
      lte: (m) => t(m) <= limit,
      eq: (m) => t(m) === limit,
      ne: (m) => t(m) !== limit,
    };
    parts.push(compare[op]!);
  }
  return (m) => parts.every((p) => p(m));
}

function categoriesCondition(value: unknown, at: string): Predicate {
  if (isPlainObject(value) && Array.isArray(value.in) && Object.keys(value).length === 1) {
    const list = value.in;
    return (m) => m.categories.some((c) => list.includes(c));
  }
  if (isPlainObject(value) && typeof value.contains === 'string' && Object.keys(value).length === 1) {
    const needle = value.contains;
    return (m) => m.categories.some((c) => c.includes(needle));
  }
  throw new FilterError(`${at} must be { in: [...] } or { contains: "..." }.`);
}

function keywordsCondition(value: unknown, at: string): Predicate {
  if (isPlainObject(value) && typeof value.contains === 'string' && Object.keys(value).length === 1) {
    const needle = value.contains;
    return (m) => m.memory.includes(needle);
  }
  if (isPlainObject(value) && typeof value.icontains === 'string' && Object.keys(value).length === 1) {
    const needle = value.icontains.toLowerCase();
    return (m) => m.memory.toLowerCase().includes(needle);
  }
  throw new FilterError(`${at} must be { contains: "..." } or { icontains: "..." }.`);
}

/** Whether the filter names at least one entity field somewhere (the platform requires one for search and list). */
export function hasEntityCondition(filters: unknown): boolean {
  if (Array.isArray(filters)) return filters.some(hasEntityCondition);
  if (!isPlainObject(filters)) return false;
  return Object.entries(filters).some(([key, value]) => ENTITY_FIELDS.has(key) || (LOGICAL.has(key) && hasEntityCondition(value)));
}
