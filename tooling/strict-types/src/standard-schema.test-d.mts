// Standard Schemas as apps write them, through the built declaration files, under the strictest
// options (tsconfig.json), with TypeScript 5.9 (check.mjs's program) and 7 (its native compiler):
// every library's schema is a `defineTool` `parameters` and a `WorkingMemoryProvider` `schema`,
// and `execute` sees the schema's output type. A mismatch is a compile error (TS2322 at `check`).
import type { StandardJSONSchemaV1, StandardSchemaV1 as SpecSchema } from '@standard-schema/spec';
import { type } from 'arktype';
import { defineTool, type InferOutput, InMemoryWorkingMemoryStore, type StandardSchemaV1, WorkingMemoryProvider } from '@ctx/core';
import * as v from 'valibot';
import { z } from 'zod';
import { z as z3 } from 'zod-v3';

/**
 * `true` only when A and B are the same type. TypeScript 7 also tells `{ a?: T }` from
 * `{ a?: T | undefined }` under exactOptionalPropertyTypes; 5.9 takes them as one.
 */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

/** What every schema below parses: `days` arrives as a string and leaves as a number. */
interface Forecast {
  city: string;
  days: number;
}

/** The JSON Schema for libraries that offer none on `~standard` (zod 3, valibot). */
const forecastJsonSchema = {
  type: 'object',
  properties: { city: { type: 'string' }, days: { type: 'string' }, units: { enum: ['c', 'f'] } },
  required: ['city', 'days'],
};

const store = new InMemoryWorkingMemoryStore();

// zod 4: an optional member is `units?: 'c' | 'f' | undefined`.
const zod4 = z.object({ city: z.string(), days: z.string().transform(Number), units: z.enum(['c', 'f']).optional() });
type Zod4Args = { city: string; days: number; units?: 'c' | 'f' | undefined };
export const zod4Tool = defineTool({
  name: 'forecast',
  parameters: zod4,
  execute: (args) => {
    const check: Equal<typeof args, Zod4Args> = true;
    return check && args.days;
  },
});
export const zod4ToolArgs: Equal<Parameters<NonNullable<typeof zod4Tool.execute>>[0], Zod4Args> = true;
export const zod4Memory = new WorkingMemoryProvider({ schema: zod4, store });

// zod 3.24, the first 3.x with Standard Schema.
const zod3 = z3.object({ city: z3.string(), days: z3.string().transform(Number), units: z3.enum(['c', 'f']).optional() });
type Zod3Args = { city: string; days: number; units?: 'c' | 'f' | undefined };
export const zod3Tool = defineTool({
  name: 'forecast',
  parameters: zod3,
  jsonSchema: forecastJsonSchema,
  execute: (args) => {
    const check: Equal<typeof args, Zod3Args> = true;
    return check && args.days;
  },
});
export const zod3ToolArgs: Equal<Parameters<NonNullable<typeof zod3Tool.execute>>[0], Zod3Args> = true;
export const zod3Memory = new WorkingMemoryProvider({ schema: zod3, jsonSchema: forecastJsonSchema, store });

// valibot 1.
const valibot = v.object({
  city: v.string(),
  days: v.pipe(v.string(), v.transform(Number)),
  units: v.optional(v.picklist(['c', 'f'])),
});
type ValibotArgs = { city: string; days: number; units?: 'c' | 'f' | undefined };
export const valibotTool = defineTool({
  name: 'forecast',
  parameters: valibot,
  jsonSchema: forecastJsonSchema,
  execute: (args) => {
    const check: Equal<typeof args, ValibotArgs> = true;
    return check && args.days;
  },
});
export const valibotToolArgs: Equal<Parameters<NonNullable<typeof valibotTool.execute>>[0], ValibotArgs> = true;
export const valibotMemory = new WorkingMemoryProvider({ schema: valibot, jsonSchema: forecastJsonSchema, store });

// arktype 2: an optional member is `units?: 'c' | 'f'`, as exactOptionalPropertyTypes reads it.
const ark = type({ city: 'string', days: 'string.numeric.parse', 'units?': "'c' | 'f'" });
type ArkArgs = { city: string; days: number; units?: 'c' | 'f' };
export const arkTool = defineTool({
  name: 'forecast',
  parameters: ark,
  execute: (args) => {
    const check: Equal<typeof args, ArkArgs> = true;
    return check && args.days;
  },
});
export const arkToolArgs: Equal<Parameters<NonNullable<typeof arkTool.execute>>[0], ArkArgs> = true;
export const arkMemory = new WorkingMemoryProvider({ schema: ark, store });

// Any implementation typed by the spec's own package, for any input and output types, with and
// without Standard JSON Schema (declared optional the way the spec's optional members are).
export function fromSpec<I, O>(schema: SpecSchema<I, O>): StandardSchemaV1<I, O> {
  return schema;
}
export function fromSpecWithJsonSchema<I, O>(schema: SpecSchema<I, O> & StandardJSONSchemaV1<I, O>): StandardSchemaV1<I, O> {
  return schema;
}
export function fromSpecMaybeJsonSchema<I, O>(schema: {
  readonly '~standard': SpecSchema.Props<I, O> & { readonly jsonSchema?: StandardJSONSchemaV1.Converter | undefined };
}): StandardSchemaV1<I, O> {
  return schema;
}
// ...and core's type goes wherever the spec's does.
export function toSpec<I, O>(schema: StandardSchemaV1<I, O>): SpecSchema<I, O> {
  return schema;
}
export const specOutput: Equal<InferOutput<SpecSchema<string, Forecast>>, Forecast> = true;
export const specTool = defineTool({
  name: 'forecast',
  parameters: {} as SpecSchema<unknown, Forecast>,
  jsonSchema: forecastJsonSchema,
  execute: (args) => {
    const check: Equal<typeof args, Forecast> = true;
    return check && args.days;
  },
});
export const specMemory = new WorkingMemoryProvider({ schema: {} as SpecSchema<unknown, Forecast>, store });
