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

/** A path below some base, as property names and indexes. */
export type PathSegments = (string | number)[];

/** Formats `segments` below `base`: `$.a["x y"][3]`. */
export function formatPath(base: string, segments: readonly (string | number)[]): string {
  let path = base;
  for (const segment of segments) path = pathJoin(path, segment);
  return path;
}

/**
 * Returns the path of the first place in `value` that is not plain JSON (a function, `undefined`,
 * a non-finite number, a class instance, a cycle), or `undefined` when it is all JSON.
 */
export function findNonJson(value: unknown, path = '$'): string | undefined {
  const segments = nonJsonSegments(value, new Set());
  return segments && formatPath(path, segments);
}

/** Like `findNonJson`, relative segments; builds them only on failure, so valid data costs no strings. */
export function nonJsonSegments(value: unknown, seen: Set<object> = new Set()): PathSegments | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return undefined;
    case 'number':
      return Number.isFinite(value) ? undefined : [];
    case 'object': {
      if (value === null) return undefined;
      if (seen.has(value)) return [];
      seen.add(value);
      let found: PathSegments | undefined;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length && !found; i++) {
          found = nonJsonSegments(value[i], seen);
          found?.unshift(i);
        }
      } else if (isPlainObject(value)) {
        for (const key in value) {
          found = nonJsonSegments(value[key], seen);
          if (found) {
            found.unshift(key);
            break;
          }
        }
      } else {
        found = [];
      }
      seen.delete(value);
      return found;
    }
    default:
      return [];
  }
}
