/** A JSON primitive. */
export type JsonPrimitive = string | number | boolean | null;

/** Any value that survives `JSON.parse(JSON.stringify(value))` unchanged. */
export type JsonValue = JsonPrimitive | JsonValue[] | JsonObject;

/** A JSON object. */
export interface JsonObject {
  [key: string]: JsonValue;
}

/** Whether `value` is a plain object (not an array, not null, not a class instance). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Formats a property access for a JSON path: `$.a.b`, `$.a["x y"]`, `$.a[3]`. */
export function pathJoin(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

/**
 * Returns the path of the first place in `value` that is not plain JSON (a function, `undefined`,
 * a non-finite number, a class instance, a cycle), or `undefined` when it is all JSON.
 */
export function findNonJson(value: unknown, path = '$', seen: Set<object> = new Set()): string | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return undefined;
    case 'number':
      return Number.isFinite(value) ? undefined : path;
    case 'object': {
      if (value === null) return undefined;
      if (seen.has(value)) return path;
      seen.add(value);
      let found: string | undefined;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length && found === undefined; i++) found = findNonJson(value[i], pathJoin(path, i), seen);
      } else if (isPlainObject(value)) {
        for (const key of Object.keys(value)) {
          found = findNonJson(value[key], pathJoin(path, key), seen);
          if (found !== undefined) break;
        }
      } else {
        found = path;
      }
      seen.delete(value);
      return found;
    }
    default:
      return path;
  }
}
