import { describe, expect, it } from 'vitest';
import { describeValue, findNonJson, isPlainObject, jsonProblem, MAX_JSON_DEPTH } from './json.js';

/** `[[...[leaf]...]]` with `levels` arrays. */
function nestedArrays(levels: number, leaf: unknown = 1): unknown {
  let value = leaf;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

function throwingProxy(): object {
  const fail = () => {
    throw new Error('trap');
  };
  return new Proxy({}, { get: fail, getPrototypeOf: fail, ownKeys: fail, has: fail, getOwnPropertyDescriptor: fail });
}

describe('describeValue', () => {
  it.each([
    [1n, 'a bigint'],
    [Symbol('s'), 'a symbol'],
    [Number.NaN, 'NaN'],
    [Number.NEGATIVE_INFINITY, '-Infinity'],
    [undefined, 'undefined'],
    [() => 1, 'a function'],
    [null, 'null'],
    [[1], 'an array'],
    [{ a: 1 }, 'an object'],
    [Object.create(null), 'an object'],
    [new Map(), 'a Map'],
    [new Date(0), 'a Date'],
    [new Error('x'), 'an Error'],
    ['x'.repeat(100), `"${'x'.repeat(40)}…"`],
  ])('describes %s as %s', (value, expected) => {
    expect(describeValue(value)).toBe(expected);
  });

  it('never throws, for a cycle, a throwing getter or a hostile Proxy', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(describeValue(cyclic)).toBe('an object');
    const revocable = Proxy.revocable({}, {});
    revocable.revoke();
    expect(describeValue(revocable.proxy)).toBe('a value that throws when inspected');
    expect(describeValue(throwingProxy())).toBe('a value that throws when inspected');
    const tricky = Object.create({
      get constructor() {
        throw new Error('getter');
      },
    });
    expect(describeValue(tricky)).toBe('an object with a custom prototype');
  });
});

describe('isPlainObject', () => {
  it('is false, not a throw, for a revoked or hostile Proxy', () => {
    const revocable = Proxy.revocable({}, {});
    revocable.revoke();
    expect(isPlainObject(revocable.proxy)).toBe(false);
    expect(isPlainObject(throwingProxy())).toBe(false);
  });
});

describe('jsonProblem', () => {
  it(`accepts ${MAX_JSON_DEPTH} levels of nesting and refuses ${MAX_JSON_DEPTH + 1}, naming the path`, () => {
    expect(jsonProblem(nestedArrays(MAX_JSON_DEPTH))).toBeUndefined();
    const problem = jsonProblem(nestedArrays(MAX_JSON_DEPTH + 1));
    expect(problem?.[0]).toEqual(Array(MAX_JSON_DEPTH).fill(0));
    expect(problem?.[1]).toContain(`nested deeper than ${MAX_JSON_DEPTH} levels`);
    expect(jsonProblem(nestedArrays(MAX_JSON_DEPTH - 2), 2)).toBeUndefined();
    expect(jsonProblem(nestedArrays(MAX_JSON_DEPTH - 1), 2)?.[1]).toContain('nested deeper');
  });

  it('checks 100,000 levels of nesting without a RangeError', () => {
    const problem = jsonProblem(nestedArrays(100_000));
    expect(problem?.[1]).toContain('nested deeper');
    expect(findNonJson({ a: nestedArrays(100_000) })).toBe(`$.a${'[0]'.repeat(MAX_JSON_DEPTH - 1)}`);
  });

  it('names a cycle where the value meets its ancestor', () => {
    const cyclic: Record<string, unknown> = { list: [] };
    (cyclic.list as unknown[]).push({ back: cyclic });
    expect(jsonProblem(cyclic)).toEqual([['list', 0, 'back'], expect.stringContaining('is a cycle')]);
    expect(findNonJson({ ok: 1, nested: cyclic })).toBe('$.nested.list[0].back');
  });

  it('accepts the same object twice when it is no cycle', () => {
    const shared = { a: 1 };
    expect(jsonProblem({ x: shared, y: [shared, shared] })).toBeUndefined();
  });

  it('names what is not JSON in its problem', () => {
    expect(jsonProblem({ n: Number.NaN })).toEqual([['n'], 'is not JSON (NaN)']);
    expect(jsonProblem({ m: new Map() })).toEqual([['m'], 'is not JSON (a Map)']);
    expect(jsonProblem([1, 2n])).toEqual([[1], 'is not JSON (a bigint)']);
    expect(jsonProblem({ u: undefined })).toEqual([['u'], 'is not JSON (undefined)']);
  });

  it('reports a getter or a Proxy that throws at its path instead of throwing', () => {
    const withGetter = {
      ok: 1,
      get bad(): number {
        throw new Error('boom');
      },
    };
    expect(jsonProblem({ a: withGetter })).toEqual([['a', 'bad'], 'could not be read (Error: boom)']);
    expect(jsonProblem({ p: throwingProxy() })).toEqual([['p'], 'is not JSON (a value that throws when inspected)']);
    const lying = new Proxy(
      {},
      {
        ownKeys: () => {
          throw new Error('keys');
        },
      },
    );
    expect(jsonProblem({ l: lying })).toEqual([['l'], 'could not be read (Error: keys)']);
  });
});
