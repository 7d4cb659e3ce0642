import { ConfigurationError } from '@ctx/core';

/** A value that can be written as an OData literal. */
export type ODataValue = string | number | boolean | null | Date;

/**
 * A scope as field conditions, all of which must hold (joined with `and`):
 * - `{ tenantId: 'acme' }` -> `tenantId eq 'acme'`
 * - `{ tenantId: ['acme', 'globex'] }` -> `search.in(tenantId, 'acme|globex', '|')` (one of)
 * - `{ groups: { any: ['a', 'b'] } }` -> `groups/any(v: search.in(v, 'a|b', '|'))` (a collection
 *   field holding at least one of them)
 * - `{ deleted: null }` -> `deleted eq null`
 *
 * An empty list matches nothing (`false`). Field names are checked; values are escaped, so a value
 * can never change the structure of the filter.
 */
export type ScopeFields = Readonly<Record<string, ODataValue | readonly string[] | { readonly any: readonly string[] }>>;

/** A scope: a ready OData filter (build it with `odata`) or field conditions. */
export type SearchScope = string | ScopeFields;

const FIELD_PATH = /^[A-Za-z][A-Za-z0-9_]*(?:\/[A-Za-z][A-Za-z0-9_]*)*$/;
/** Delimiters tried for `search.in`, in order; the first one that no value contains is used. */
const DELIMITERS = ['|', ',', ';', '~', '^', '#', '!', '$', '%', '&', '*', '+', '@'];

/**
 * An OData literal for `value`: strings quoted with every `'` doubled (so no value can end the
 * literal early), finite numbers as they are, booleans, `null`, dates as UTC `DateTimeOffset`.
 * @throws ConfigurationError for anything else (NaN, Infinity, arrays, objects, bigint, undefined):
 *   never a silent `String(value)` that could inject syntax.
 */
export function odataLiteral(value: ODataValue): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return `'${value.replace(/'/g, "''")}'`;
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value))
        throw new ConfigurationError(`Cannot write ${value} as an OData literal; only finite numbers are allowed.`);
      return String(value);
    default:
      if (value instanceof Date) {
        if (Number.isNaN(value.getTime())) throw new ConfigurationError('Cannot write an invalid Date as an OData literal.');
        return value.toISOString();
      }
      throw new ConfigurationError(
        `Cannot write a value of type ${describeType(value)} as an OData literal; pass a string, finite number, boolean, null or Date.`,
      );
  }
}

/**
 * A tagged template that builds an OData filter with every interpolated value escaped as a literal:
 * ``odata`tenantId eq ${tenantId} and rating ge ${4}` `` gives `tenantId eq 'o''brien' and rating ge 4`.
 * Unlike the SDK's `odata`, it quotes every string itself (do not put quotes around a placeholder)
 * and refuses values that are not literals instead of interpolating them.
 * @throws ConfigurationError for a quoted placeholder or a value that is not a literal.
 */
export function odata(strings: TemplateStringsArray, ...values: readonly ODataValue[]): string {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    const before = strings[i] ?? '';
    const after = strings[i + 1] ?? '';
    if (/'\s*$/.test(before) && /^\s*'/.test(after)) {
      throw new ConfigurationError(
        `odata\`...\`: placeholder ${i + 1} is wrapped in quotes; remove them, odata quotes and escapes strings itself.`,
      );
    }
    out += odataLiteral(value) + after;
  });
  return out;
}

/**
 * Checks a field path (`tenantId`, `address/city`) for use in a filter.
 * @throws ConfigurationError when it is not a plain OData member path.
 */
export function checkFieldPath(path: string, owner = 'filter'): string {
  if (typeof path !== 'string' || !FIELD_PATH.test(path)) {
    throw new ConfigurationError(
      `${owner}: ${JSON.stringify(path)} is not a valid field name (letters, digits and "_", starting with a letter; "/" between sub-fields).`,
    );
  }
  return path;
}

/** `search.in(target, 'a|b', '|')` with a delimiter none of the values contains, else `(target eq 'a' or ...)`. */
function oneOf(target: string, values: readonly string[]): string {
  if (values.length === 0) return 'false';
  for (const v of values)
    if (typeof v !== 'string') throw new ConfigurationError(`scope: lists may only hold strings, got ${describeType(v)}.`);
  const delimiter = DELIMITERS.find((d) => values.every((v) => !v.includes(d)));
  if (delimiter !== undefined && values.every((v) => v !== '')) {
    return `search.in(${target}, ${odataLiteral(values.join(delimiter))}, ${odataLiteral(delimiter)})`;
  }
  return `(${values.map((v) => `${target} eq ${odataLiteral(v)}`).join(' or ')})`;
}

/**
 * Compiles a scope to an OData filter: a string is taken as it is (it is the caller's filter),
 * field conditions are compiled as `ScopeFields` describes. `{}` is no condition (`undefined`).
 * @throws ConfigurationError for invalid field names or values.
 */
export function scopeToFilter(scope: SearchScope): string | undefined {
  if (typeof scope === 'string') return scope.trim() === '' ? undefined : scope;
  if (typeof scope !== 'object' || scope === null || Array.isArray(scope)) {
    throw new ConfigurationError(`scope must return an OData filter string or an object of field conditions, got ${describeType(scope)}.`);
  }
  const parts: string[] = [];
  for (const [field, condition] of Object.entries(scope)) {
    checkFieldPath(field, 'scope');
    if (Array.isArray(condition)) {
      parts.push(oneOf(field, condition as readonly string[]));
    } else if (typeof condition === 'object' && condition !== null && !(condition instanceof Date)) {
      const any = (condition as { any?: unknown }).any;
      if (!Array.isArray(any) || Object.keys(condition).length !== 1) {
        throw new ConfigurationError(`scope: the condition on "${field}" must be a value, a list of strings, or { any: [...] }.`);
      }
      parts.push(any.length === 0 ? 'false' : `${field}/any(v: ${oneOf('v', any as string[])})`);
    } else {
      parts.push(`${field} eq ${odataLiteral(condition as ODataValue)}`);
    }
  }
  return parts.length ? parts.join(' and ') : undefined;
}

/** Joins filters with `and`, each in parentheses; `undefined` ones are left out. */
export function andFilters(...filters: readonly (string | undefined)[]): string | undefined {
  const present = filters.filter((f): f is string => typeof f === 'string' && f.trim() !== '');
  if (present.length <= 1) return present[0];
  return present.map((f) => `(${f})`).join(' and ');
}

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return String(value);
  return typeof value;
}
