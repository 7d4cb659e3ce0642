import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as cfworker from '@cfworker/json-schema';
import { describe, expect, it, vi } from 'vitest';
import { ConfigurationError } from '../errors.js';
import type { JsonObject } from '../contracts/json.js';
import type { ToolValidation } from '../contracts/run-view.js';
import * as entry from './index.js';
import { jsonSchemaValidator } from './json-schema-validator.js';

vi.mock('@cfworker/json-schema', async (importOriginal) => {
  const original = await importOriginal<typeof import('@cfworker/json-schema')>();
  return { ...original, dereference: vi.fn(original.dereference) };
});

const weather: JsonObject = {
  type: 'object',
  properties: { city: { type: 'string' }, units: { type: 'string', enum: ['c', 'f'], default: 'c' } },
  required: ['city'],
  additionalProperties: false,
};

const check = (parameters: JsonObject, args: unknown, name = 'get_weather') =>
  jsonSchemaValidator().compile({ name, parameters })(args) as ToolValidation<unknown>;

describe('jsonSchemaValidator', () => {
  it('rejects {"town": 42} for a tool declared { city: string }, naming city and town', () => {
    expect(check(weather, { town: 42 })).toEqual({
      success: false,
      issues: ['Instance does not have required property "city"', 'Property "town" does not match additional properties schema'],
    });
  });

  it('names the path and the expected type of each wrong value, as Standard Schema issues do (path: message)', () => {
    const schema: JsonObject = {
      type: 'object',
      properties: {
        city: { type: 'string' },
        days: { type: 'array', items: { type: 'integer', minimum: 1 } },
        'a/b~c': { type: 'object', properties: { 'ü x': { type: 'boolean' } } },
      },
    };
    expect(check(schema, { city: 42, days: [1, 0, 'x'], 'a/b~c': { 'ü x': 'yes' } })).toEqual({
      success: false,
      issues: [
        'city: Instance type "number" is invalid. Expected "string"',
        'days.1: 0 is less than 1',
        'days.2: Instance type "string" is invalid. Expected "integer"',
        'a/b~c.ü x: Instance type "string" is invalid. Expected "boolean"',
      ],
    });
  });

  it('passes valid arguments through unchanged: the same object, no defaults filled in, nothing coerced', () => {
    const args = { city: 'Lisbon' };
    const result = check(weather, args);
    expect(result).toEqual({ success: true, value: { city: 'Lisbon' } });
    expect((result as { value: unknown }).value).toBe(args);
    expect(check({ type: 'object', properties: { n: { type: 'number' } } }, { n: '4' })).toMatchObject({ success: false });
  });

  it('follows $ref within the schema, anyOf, and formats', () => {
    const schema: JsonObject = {
      type: 'object',
      properties: { who: { $ref: '#/$defs/person' }, id: { anyOf: [{ type: 'string', format: 'uuid' }, { type: 'integer' }] } },
      $defs: { person: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
    };
    expect(check(schema, { who: { name: 'Ana' }, id: 7 })).toEqual({ success: true, value: { who: { name: 'Ana' }, id: 7 } });
    const result = check(schema, { who: {}, id: 'not-a-uuid' }) as { issues: string[] };
    expect(result.issues).toContain('who: Instance does not have required property "name"');
    expect(result.issues).toContain('id: String does not match format "uuid"');
  });

  it('reads the draft a schema names in $schema (draft 7 ignores the siblings of $ref, 2020-12 applies them)', () => {
    const schema: JsonObject = {
      type: 'object',
      properties: { code: { $ref: '#/definitions/code', maxLength: 2 } },
      definitions: { code: { type: 'string' } },
    };
    expect(check({ $schema: 'http://json-schema.org/draft-07/schema#', ...schema }, { code: 'abc' })).toMatchObject({ success: true });
    expect(check(schema, { code: 'abc' })).toEqual({ success: false, issues: ['code: String is too long (3 > 2)'] });
    expect(jsonSchemaValidator({ draft: '7' }).compile({ name: 't', parameters: schema })({ code: 'abc' })).toMatchObject({
      success: true,
    });
  });

  it('lists at most maxIssues issues and counts the rest', () => {
    const schema: JsonObject = { type: 'array', items: { type: 'string' } };
    const result = jsonSchemaValidator({ maxIssues: 2 }).compile({ name: 't', parameters: schema })([1, 2, 3, 4]) as { issues: string[] };
    expect(result.issues).toEqual([
      '0: Instance type "number" is invalid. Expected "string"',
      '1: Instance type "number" is invalid. Expected "string"',
      '…and 2 more',
    ]);
  });

  it('compiles each schema object once, however many tools and runs share it', () => {
    const dereference = vi.mocked(cfworker.dereference);
    dereference.mockClear();
    const validator = jsonSchemaValidator();
    const shared: JsonObject = { type: 'object', properties: { q: { type: 'string' } } };
    validator.compile({ name: 'a', parameters: shared });
    validator.compile({ name: 'b', parameters: shared });
    validator.compile({ name: 'a', parameters: shared });
    expect(dereference).toHaveBeenCalledTimes(1);
    validator.compile({ name: 'c', parameters: { ...shared } });
    expect(dereference).toHaveBeenCalledTimes(2);
  });

  it('never touches the tool schema: a frozen one works and what the model sees is unchanged', () => {
    const frozen = Object.freeze({
      type: 'object',
      properties: Object.freeze({ who: Object.freeze({ $ref: '#/$defs/name' }) }),
      $defs: Object.freeze({ name: Object.freeze({ type: 'string' }) }),
    }) as JsonObject;
    const before = JSON.stringify(frozen);
    expect(check(frozen, { who: 3 })).toMatchObject({ success: false });
    expect(Object.getOwnPropertyNames(frozen.properties as object)).toEqual(['who']);
    expect(JSON.stringify(frozen)).toBe(before);
  });

  it.each([
    [
      'an unresolvable $ref',
      { type: 'object', properties: { a: { $ref: '#/$defs/missing' } } },
      /\$ref "#\/\$defs\/missing" at #\/properties\/a does not resolve/,
    ],
    [
      'an unknown type',
      { type: 'object', properties: { a: { type: 'strin' } } },
      /"type" "strin" at #\/properties\/a is not a JSON Schema type/,
    ],
    [
      'an invalid pattern',
      { type: 'object', properties: { a: { type: 'string', pattern: '([a-z' } } },
      /the pattern "\(\[a-z" .*is not a valid regular expression/,
    ],
    ['a malformed required', { type: 'object', required: 'city' }, /"required" must be an array of property names/],
    ['a duplicate $id', { type: 'object', properties: { a: { $id: 'x' }, b: { $id: 'x' } } }, /Duplicate schema URI/],
  ])('refuses to compile a schema with %s: a ConfigurationError naming the tool', (_, parameters, problem) => {
    let thrown: unknown;
    try {
      jsonSchemaValidator().compile({ name: 'broken_tool', parameters: parameters as JsonObject });
    } catch (error) {
      thrown = error;
    }
    expect(ConfigurationError.isInstance(thrown)).toBe(true);
    expect((thrown as Error).message).toMatch(/^Tool "broken_tool": its JSON Schema cannot be compiled: /);
    expect((thrown as Error).message).toMatch(problem);
    expect((thrown as Error).message).toMatch(/Fix the tool's `parameters`\.$/);
  });

  it('refuses parameters that are not a JSON object, and bad options', () => {
    expect(() => jsonSchemaValidator().compile({ name: 'odd', parameters: [] as unknown as JsonObject })).toThrow(
      new ConfigurationError('Tool "odd": `parameters` must be a JSON Schema object to be validated.'),
    );
    expect(() => jsonSchemaValidator({ draft: '6' as never })).toThrow(ConfigurationError);
    expect(() => jsonSchemaValidator({ maxIssues: 0 })).toThrow(/maxIssues must be a positive integer/);
  });
});

describe('@ctx/core/json-schema', () => {
  it('exports jsonSchemaValidator, and only this entry loads @cfworker/json-schema', () => {
    expect(Object.keys(entry)).toEqual(['jsonSchemaValidator']);
    const src = resolve(dirname(fileURLToPath(import.meta.url)), '..');
    const importers = (readdirSync(src, { recursive: true }) as string[])
      .filter((f) => f.endsWith('.ts') && !f.includes('.test'))
      .filter((f) => /'@cfworker\/json-schema'/.test(readFileSync(join(src, f), 'utf8')))
      .map((f) => relative(src, join(src, f)))
      .sort();
    expect(importers).toEqual(
      ['json-schema-validator.ts', 'load-peer.cjs.ts', 'load-peer.ts', 'missing-peer.ts'].map((f) => join('json-schema', f)),
    );
    // The main entry never reaches this folder, so it keeps zero runtime dependencies.
    const reached = new Set<string>();
    const visit = (file: string) => {
      if (reached.has(file)) return;
      reached.add(file);
      for (const [, spec] of readFileSync(file, 'utf8').matchAll(/from '(\.{1,2}\/[^']+)'/g)) {
        visit(resolve(dirname(file), spec!.replace(/\.js$/, '.ts')));
      }
    };
    visit(join(src, 'index.ts'));
    expect([...reached].filter((f) => f.includes(`${join(src, 'json-schema')}`))).toEqual([]);
  });
});
