/**
 * The deepest nesting of objects and arrays ctx accepts in what it stores (a session, a message):
 * the root is level 1. Cosmos DB refuses documents nested deeper than this, and a bound keeps every
 * check of stored data from exhausting the stack.
 */
export const MAX_JSON_DEPTH = 128;

/** Whether `value` is a plain object (not an array, not null, not a class instance). Never throws, even for a hostile Proxy. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  try {
    if (Array.isArray(value)) return false;
    const proto = Object.getPrototypeOf(value);
    return proto === Object.prototype || proto === null;
  } catch {
    return false;
  }
}

/** Formats a property access for a JSON path: `$.a.b`, `$.a["x y"]`, `$.a[3]`. */
export function pathJoin(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

/** A path below some base, as property names and indexes. */
export type PathSegments = (string | number)[];

/** What is wrong, and where below the value checked. Segments are built only on failure. */
export type Problem = [segments: PathSegments, problem: string];

/** Formats `segments` below `base`: `$.a["x y"][3]`. */
export function formatPath(base: string, segments: readonly (string | number)[]): string {
  let path = base;
  for (const segment of segments) path = pathJoin(path, segment);
  return path;
}

/** Prepends `segment` to the path of `problem` (if any) and returns it. */
export function at(segment: string | number, problem: Problem | undefined): Problem | undefined {
  problem?.[0].unshift(segment);
  return problem;
}

/**
 * A short description of any value for an error message ("NaN", "a Map", "an array", `"text"`).
 * Never throws: not for a bigint, a symbol, a null-prototype object, a getter that throws or a
 * hostile Proxy. Strings are quoted and cut at 40 characters.
 */
export function describeValue(value: unknown): string {
  try {
    switch (typeof value) {
      case 'string':
        return JSON.stringify(value.length <= 40 ? value : `${value.slice(0, 40)}…`);
      case 'number':
      case 'boolean':
        return String(value);
      case 'bigint':
        return 'a bigint';
      case 'symbol':
        return 'a symbol';
      case 'undefined':
        return 'undefined';
      case 'function':
        return 'a function';
      default: {
        if (value === null) return 'null';
        if (Array.isArray(value)) return 'an array';
        const proto: unknown = Object.getPrototypeOf(value);
        if (proto === Object.prototype || proto === null) return 'an object';
        const ctor: unknown = typeof proto === 'object' ? Object.getOwnPropertyDescriptor(proto, 'constructor')?.value : undefined;
        const name: unknown = typeof ctor === 'function' ? Object.getOwnPropertyDescriptor(ctor, 'name')?.value : undefined;
        if (typeof name !== 'string' || !/^[A-Za-z_$][\w$]{0,39}$/.test(name)) return 'an object with a custom prototype';
        return `${/^[AEIOU]/.test(name) ? 'an' : 'a'} ${name}`;
      }
    }
  } catch {
    return 'a value that throws when inspected';
  }
}

/**
 * Returns the path of the first place in `value` that is not plain JSON (a function, `undefined`,
 * a non-finite number, a class instance, a cycle, nesting deeper than `MAX_JSON_DEPTH` levels, a
 * property that throws when read), or `undefined` when it is all JSON. Never throws.
 */
export function findNonJson(value: unknown, path = '$'): string | undefined {
  const problem = jsonProblem(value);
  return problem && formatPath(path, problem[0]);
}

/**
 * What is not plain JSON in `value`, or `undefined`. `depth` is how many objects and arrays
 * already enclose `value` (for the `MAX_JSON_DEPTH` limit). Recursion is bounded by that limit, so
 * neither deep nesting nor a cycle can exhaust the stack, and valid data costs no strings. Never
 * throws: a property that throws when read is a problem at its path.
 */
export function jsonProblem(value: unknown, depth = 0): Problem | undefined {
  const problem = walk(value, depth);
  if (problem?.[1] === TOO_DEEP) {
    const cycle = cycleIn(value, problem[0]);
    if (cycle) return [cycle, 'is a cycle (a value that contains itself); JSON cannot hold one'];
  }
  return problem;
}

const TOO_DEEP = `is nested deeper than ${MAX_JSON_DEPTH} levels (the most ctx stores, and Cosmos DB's own limit); flatten it`;

function walk(value: unknown, depth: number): Problem | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return undefined;
    case 'number':
      return Number.isFinite(value) ? undefined : [[], `is not JSON (${describeValue(value)})`];
    case 'object': {
      if (value === null) return undefined;
      if (depth >= MAX_JSON_DEPTH) return [[], TOO_DEEP];
      let reading: string | number | undefined;
      try {
        if (Array.isArray(value)) {
          for (let i = 0; i < value.length; i++) {
            reading = i;
            const child = value[i];
            reading = undefined;
            const found = walk(child, depth + 1);
            if (found) return at(i, found);
          }
          return undefined;
        }
        if (!isPlainObject(value)) return [[], `is not JSON (${describeValue(value)})`];
        for (const key in value) {
          reading = key;
          const child = value[key];
          reading = undefined;
          const found = walk(child, depth + 1);
          if (found) return at(key, found);
        }
        return undefined;
      } catch (error) {
        // A getter or a Proxy trap threw while reading `reading` (or listing the keys).
        return [reading === undefined ? [] : [reading], `could not be read (${describeThrown(error)})`];
      }
    }
    default:
      return [[], `is not JSON (${describeValue(value)})`];
  }
}

/** The path (below `root`) where following `segments` first meets an object that encloses it, if any. */
function cycleIn(root: unknown, segments: PathSegments): PathSegments | undefined {
  const ancestors: unknown[] = [root];
  let node = root;
  try {
    for (let i = 0; i < segments.length; i++) {
      node = (node as Record<string | number, unknown>)[segments[i]!];
      if (ancestors.includes(node)) return segments.slice(0, i + 1);
      ancestors.push(node);
    }
  } catch {
    // Reading the path again threw: report the depth instead.
  }
  return undefined;
}

/** A short description of a thrown value (its name and message when it is an Error). Never throws. */
export function describeThrown(error: unknown): string {
  try {
    if (error instanceof Error) {
      const text = `${error.name}: ${error.message}`;
      return text.length <= 200 ? text : `${text.slice(0, 200)}…`;
    }
  } catch {
    // A Proxy posing as an error: describe it as a value.
  }
  return describeValue(error);
}

/**
 * Whether two JSON values are equal: same types, arrays element by element, objects key by key in
 * any order (a key holding `undefined` counts as absent, as in JSON text).
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  const keys = (o: Record<string, unknown>) => Object.keys(o).filter((k) => o[k] !== undefined);
  const ka = keys(ra);
  if (ka.length !== keys(rb).length) return false;
  for (const k of ka) if (!Object.hasOwn(rb, k) || !jsonEqual(ra[k], rb[k])) return false;
  return true;
}

/**
 * The JSON object a model answered with, a fenced ```json block accepted: for providers that ask a
 * cheap model for structured updates. `fail(problem)` throws for anything else (problem: "is not
 * valid JSON (...)" or "is not a JSON object").
 */
export function parseJsonAnswer(text: string, fail: (problem: string) => never): Record<string, unknown> {
  const body = text.trim().replace(/^```(?:json)?\s*([\s\S]*?)\s*```$/i, '$1');
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (error) {
    return fail(`is not valid JSON (${(error as Error).message})`);
  }
  return isPlainObject(value) ? value : fail('is not a JSON object');
}
