import type { OutputUnit, Schema } from '@cfworker/json-schema';
import { ConfigurationError, describe } from '../errors.js';
import { isPlainObject } from '../messages/json.js';
import { dereference, validate } from './load-peer.js';
import type { ToolDefinition } from '../contracts/tool-definition.js';
import type { ToolArgumentsCheck, ToolValidator } from '../contracts/tool-validator.js';

/** The JSON Schema drafts `jsonSchemaValidator` understands. */
export type JsonSchemaDraft = '4' | '7' | '2019-09' | '2020-12';

/** Options of `jsonSchemaValidator`. */
export interface JsonSchemaValidatorOptions {
  /**
   * The draft a schema without a recognised `$schema` is read as. Default `'2020-12'` (what zod and
   * most schema libraries emit). Drafts 4 and 7 ignore the keywords beside a `$ref`; 2019-09 and
   * 2020-12 apply them.
   */
  draft?: JsonSchemaDraft;
  /** The most issues reported per call; the rest are counted. Default 20. */
  maxIssues?: number;
}

const TYPES = new Set(['array', 'boolean', 'integer', 'null', 'number', 'object', 'string']);
// Errors that only say "something below failed": the errors below say what.
const SUMMARY_KEYWORDS = new Set(['properties', 'patternProperties', 'items', 'prefixItems', '$ref', '$recursiveRef', 'allOf']);
// Keywords whose error names what a `false` subschema below it refused.
const REFUSING_KEYWORDS = new Set(['additionalProperties', 'unevaluatedProperties', 'additionalItems', 'unevaluatedItems']);

/**
 * A `ToolValidator` for `createAgent({ toolValidator })` built on `@cfworker/json-schema` (install it
 * beside `@ctx/core`): every tool whose `parameters` are a plain JSON Schema has its arguments
 * checked before `execute`, and the model gets an error result listing each issue as
 * `path: message`. Valid arguments reach `execute` unchanged: no defaults are filled in, nothing
 * is coerced. Each schema object is compiled once (a copy: the tool's schema is never touched).
 * @throws ConfigurationError (from `compile`, so at `createAgent` or when a run starts) naming the
 *   tool whose schema cannot be compiled: not an object, not JSON, an unresolvable `$ref`, a
 *   duplicate `$id`, an unknown `type`, an invalid `pattern` or a malformed `required`.
 */
export function jsonSchemaValidator(options: JsonSchemaValidatorOptions = {}): ToolValidator {
  const { draft = '2020-12', maxIssues = 20 } = options;
  if (!['4', '7', '2019-09', '2020-12'].includes(draft)) {
    throw new ConfigurationError(`jsonSchemaValidator: draft ${JSON.stringify(draft)} is not one of "4", "7", "2019-09", "2020-12".`);
  }
  if (!Number.isInteger(maxIssues) || maxIssues < 1) {
    throw new ConfigurationError(`jsonSchemaValidator: maxIssues must be a positive integer, got ${maxIssues}.`);
  }
  const compiled = new WeakMap<object, (args: unknown) => OutputUnit[]>();
  return {
    specificationVersion: 'v1',
    compile(tool: ToolDefinition): ToolArgumentsCheck {
      const schema: unknown = tool.parameters;
      if (!isPlainObject(schema)) {
        throw new ConfigurationError(`Tool "${tool.name}": \`parameters\` must be a JSON Schema object to be validated.`);
      }
      let errorsOf = compiled.get(schema);
      if (!errorsOf) {
        errorsOf = compileSchema(tool.name, schema, draftOf(schema) ?? draft);
        compiled.set(schema, errorsOf);
      }
      const check = errorsOf;
      return (args) => {
        const errors = check(args);
        if (errors.length === 0) return { success: true, value: args };
        return { success: false, issues: formatIssues(errors, maxIssues) };
      };
    },
  };
}

/** The draft a schema names in `$schema`, if it names one this validator knows. */
function draftOf(schema: Record<string, unknown>): JsonSchemaDraft | undefined {
  const uri = schema.$schema;
  if (typeof uri !== 'string') return undefined;
  if (uri.includes('draft-04')) return '4';
  if (uri.includes('draft-07')) return '7';
  if (uri.includes('2019-09')) return '2019-09';
  if (uri.includes('2020-12')) return '2020-12';
  return undefined;
}

function compileSchema(toolName: string, schema: Record<string, unknown>, draft: JsonSchemaDraft): (args: unknown) => OutputUnit[] {
  const fail = (problem: string, cause?: unknown): never => {
    throw new ConfigurationError(
      `Tool "${toolName}": its JSON Schema cannot be compiled: ${problem}. Fix the tool's \`parameters\`.`,
      cause === undefined ? undefined : { cause },
    );
  };
  let copy: Schema;
  try {
    // A deep copy: the validator annotates the schema objects it reads, and the tool's own schema
    // (perhaps frozen, perhaps shared) must stay as the model sees it.
    copy = JSON.parse(JSON.stringify(schema)) as Schema;
  } catch (error) {
    return fail(`it is not JSON (${describe(error)})`, error);
  }
  let lookup: Record<string, Schema | boolean>;
  try {
    lookup = dereference(copy);
  } catch (error) {
    return fail(describe(error), error);
  }
  for (const [uri, sub] of Object.entries(lookup)) {
    if (typeof sub === 'object') checkSubschema(sub, uri, lookup, fail);
  }
  return (args) => {
    try {
      return validate(args, copy, draft, lookup, false).errors;
    } catch (error) {
      return fail(describe(error), error);
    }
  };
}

/** The static checks the validator would otherwise only fail at validation time, or never. */
function checkSubschema(sub: Schema, uri: string, lookup: Record<string, Schema | boolean>, fail: (problem: string) => never): void {
  const where = uri.includes('#') ? uri.slice(uri.indexOf('#')) : '#';
  const at = where === '#' ? '' : ` at ${where}`;
  if (sub.$ref !== undefined) {
    const target = typeof sub.$ref === 'string' ? lookup[sub.__absolute_ref__ ?? sub.$ref] : undefined;
    if (target === undefined) fail(`$ref ${JSON.stringify(sub.$ref)}${at} does not resolve (only refs within the schema are supported)`);
  }
  if (sub.type !== undefined) {
    const types = Array.isArray(sub.type) ? sub.type : [sub.type];
    for (const t of types) if (!TYPES.has(t as string)) fail(`"type" ${JSON.stringify(t)}${at} is not a JSON Schema type`);
  }
  if (sub.required !== undefined && (!Array.isArray(sub.required) || sub.required.some((r) => typeof r !== 'string'))) {
    fail(`"required"${at} must be an array of property names`);
  }
  const patterns = [...(sub.pattern !== undefined ? [sub.pattern] : []), ...Object.keys(sub.patternProperties ?? {})];
  for (const pattern of patterns) {
    try {
      new RegExp(pattern as string, 'u');
    } catch {
      fail(`the pattern ${JSON.stringify(pattern)}${at} is not a valid regular expression`);
    }
  }
}

/** The validator's errors as `path: message`, summaries of nested errors left out. */
function formatIssues(errors: readonly OutputUnit[], maxIssues: number): string[] {
  const issues: string[] = [];
  for (const error of errors) {
    if (SUMMARY_KEYWORDS.has(error.keyword)) continue;
    // "False boolean schema" below `additionalProperties: false` and the like: the error above names the property.
    if (
      error.keyword === 'false' &&
      errors.some((e) => REFUSING_KEYWORDS.has(e.keyword) && e.instanceLocation === parentOf(error.instanceLocation))
    )
      continue;
    const path = pathOf(error.instanceLocation);
    const message = error.error.replace(/\.$/, '');
    const issue = path ? `${path}: ${message}` : message;
    if (!issues.includes(issue)) issues.push(issue);
  }
  if (issues.length === 0) issues.push(...errors.map((e) => e.error.replace(/\.$/, '')).slice(0, 1));
  if (issues.length > maxIssues) return [...issues.slice(0, maxIssues), `…and ${issues.length - maxIssues} more`];
  return issues;
}

/** `#/days/1` as `days.1`, the way Standard Schema issues name a path. */
function pathOf(instanceLocation: string): string {
  return instanceLocation
    .replace(/^#\/?/, '')
    .split('/')
    .filter((s) => s !== '')
    .map((s) => decodeSegment(s).replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
}

function parentOf(instanceLocation: string): string {
  return instanceLocation.slice(0, Math.max(1, instanceLocation.lastIndexOf('/')));
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
