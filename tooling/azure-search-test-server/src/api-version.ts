import { invalidParameter, invalidRequest } from './errors.js';
import { knowledgeRetrievalSchema, searchSchema } from './fixtures.js';
import { isObject } from './index-definition.js';
import type { JsonObject, JsonValue } from './types.js';

/** The api-version whose search request is checked against the service's own schema (what `@azure/search-documents` 13 sends). */
export const SCHEMA_API_VERSION = '2026-04-01';

/**
 * Search parameters accepted for other api-versions (older stable ones such as 2025-09-01, and
 * previews), which are not checked against a schema here.
 */
const OTHER_VERSIONS = new Set([
  'count',
  'facets',
  'filter',
  'highlight',
  'highlightPostTag',
  'highlightPreTag',
  'minimumCoverage',
  'orderby',
  'queryType',
  'scoringStatistics',
  'sessionId',
  'scoringParameters',
  'scoringProfile',
  'debug',
  'search',
  'searchFields',
  'searchMode',
  'select',
  'skip',
  'top',
  'semanticConfiguration',
  'semanticErrorHandling',
  'semanticMaxWaitInMilliseconds',
  'semanticQuery',
  'answers',
  'captions',
  'vectorQueries',
  'vectorFilterMode',
  'queryLanguage',
  'speller',
  'semanticFields',
  'hybridSearch',
  'queryRewrites',
]);

/** `answers` and `captions` grammar (the descriptions of `QueryAnswerType` and `QueryCaptionType`). */
const SEMANTIC_OPTION: Record<'answers' | 'captions', RegExp> = {
  answers:
    /^(none|extractive(\|(count-\d+|threshold-(0(\.\d+)?|1(\.0+)?)|maxcharlength-\d+)(,(count-\d+|threshold-(0(\.\d+)?|1(\.0+)?)|maxcharlength-\d+))*)?)$/,
  captions: /^(none|extractive(\|(highlight-(true|false)|maxcharlength-\d+)(,(highlight-(true|false)|maxcharlength-\d+))*)?)$/,
};

/**
 * Checks a search request body as the service does for `apiVersion`: for 2026-04-01 against the
 * `SearchRequest` definition of the service's OpenAPI document (names, types, enums, minimums,
 * vector query kinds and their properties, so what this version does not have, such as
 * `queryLanguage`, `hybridSearch` or a vector query's `threshold`, is a 400); for other versions,
 * only the parameter names.
 * @throws SearchServiceError (400) naming the parameter.
 */
export function checkSearchRequest(body: JsonObject, apiVersion: string): void {
  if (apiVersion !== SCHEMA_API_VERSION) {
    for (const name of Object.keys(body)) if (!OTHER_VERSIONS.has(name)) throw unknownParameter(name);
    return;
  }
  const definitions = searchSchema().definitions as JsonObject;
  checkObject(body, definitions.SearchRequest as JsonObject, '', definitions, 'search');
  for (const name of ['answers', 'captions'] as const) {
    const value = body[name];
    if (typeof value === 'string' && !SEMANTIC_OPTION[name].test(value))
      throw invalidParameter(name, `Invalid value '${value}' for '${name}'.`);
  }
}

/** The api-versions whose `KnowledgeRetrieval_Retrieve` request schema is bundled (see `fixtures/SOURCES.md`). */
export const KNOWLEDGE_API_VERSIONS = ['2026-04-01', '2026-05-01-preview'] as const;

/**
 * Checks a knowledge base `retrieve` request body against the `KnowledgeBaseRetrievalRequest`
 * definition of `apiVersion` (required fields, types, enums, the subtypes of `kind` and `type`);
 * a field the version does not have (`messages` on 2026-04-01, `maxOutputSizeInTokens` on the
 * preview) is refused, as the service refuses it.
 * @throws SearchServiceError (400) naming the parameter, or for an api-version without knowledge bases.
 */
export function checkRetrieveRequest(body: JsonObject, apiVersion: string): void {
  if (!(KNOWLEDGE_API_VERSIONS as readonly string[]).includes(apiVersion))
    throw invalidParameter(
      'api-version',
      `Invalid or unsupported api-version '${apiVersion}' for knowledge retrieval; supported: ${KNOWLEDGE_API_VERSIONS.join(', ')}.`,
    );
  const definitions = knowledgeRetrievalSchema(apiVersion as (typeof KNOWLEDGE_API_VERSIONS)[number]).definitions as JsonObject;
  checkObject(body, definitions.KnowledgeBaseRetrievalRequest as JsonObject, '', definitions, 'retrieve');
}

function unknownParameter(path: string, operation = 'search'): Error {
  return invalidRequest(
    `parameters : The parameter '${path}' in the request payload is not a valid parameter for the operation '${operation}'.`,
  );
}

function resolve(schema: JsonObject, definitions: JsonObject): JsonObject {
  const ref = schema.$ref;
  return typeof ref === 'string' ? (definitions[ref.replace('#/definitions/', '')] as JsonObject) : schema;
}

/** Properties of an object definition, including those of the types it extends (`allOf`). */
function propertiesOf(definition: JsonObject, definitions: JsonObject): Map<string, JsonObject> {
  const out = new Map<string, JsonObject>();
  for (const parent of (definition.allOf as JsonObject[] | undefined) ?? [])
    for (const [name, schema] of propertiesOf(resolve(parent, definitions), definitions)) out.set(name, schema);
  for (const [name, schema] of Object.entries((definition.properties as JsonObject | undefined) ?? {})) out.set(name, schema as JsonObject);
  return out;
}

function requiredOf(definition: JsonObject, definitions: JsonObject): string[] {
  const parents = ((definition.allOf as JsonObject[] | undefined) ?? []).flatMap((p) => requiredOf(resolve(p, definitions), definitions));
  return [...parents, ...((definition.required as string[] | undefined) ?? [])];
}

/** The subtype of a discriminated definition (`VectorQuery` by `kind`) that `value` names. */
function subtype(definition: JsonObject, name: string, value: JsonObject, path: string, definitions: JsonObject): JsonObject {
  const discriminator = definition.discriminator;
  if (typeof discriminator !== 'string') return definition;
  const kind = value[discriminator];
  for (const candidate of Object.values(definitions) as JsonObject[]) {
    const extendsBase = ((candidate.allOf as JsonObject[] | undefined) ?? []).some((p) => p.$ref === `#/definitions/${name}`);
    if (extendsBase && candidate['x-ms-discriminator-value'] === kind) return candidate;
  }
  throw invalidParameter(path, `The ${discriminator} '${String(kind)}' of '${path}' is not valid.`);
}

function checkObject(value: JsonObject, definition: JsonObject, path: string, definitions: JsonObject, operation: string): void {
  const props = propertiesOf(definition, definitions);
  for (const name of requiredOf(definition, definitions)) {
    if (value[name] === undefined || value[name] === null)
      throw invalidParameter(join(path, name), `The parameter '${join(path, name)}' is required.`);
  }
  for (const [name, item] of Object.entries(value)) {
    const schema = props.get(name);
    if (!schema) throw unknownParameter(join(path, name), operation);
    if (item === null) continue;
    checkValue(item, schema, join(path, name), definitions, operation);
  }
}

function checkValue(value: JsonValue, schema: JsonObject, path: string, definitions: JsonObject, operation: string): void {
  const ref = typeof schema.$ref === 'string' ? schema.$ref.replace('#/definitions/', '') : undefined;
  const definition = resolve(schema, definitions);
  const type = definition.type;
  const bad = (what: string) => invalidParameter(path, `The parameter '${path}' ${what}.`);
  if (Array.isArray(definition.enum)) {
    if (typeof value !== 'string') throw bad('must be a string');
    if (path !== 'answers' && path !== 'captions' && !definition.enum.includes(value))
      throw bad(`has an invalid value '${value}'; expected one of ${definition.enum.join(', ')}`);
    return;
  }
  if (type === 'string' && typeof value !== 'string') throw bad('must be a string');
  if (type === 'boolean' && typeof value !== 'boolean') throw bad('must be a boolean');
  if (type === 'integer' && !Number.isInteger(value)) throw bad('must be an integer');
  if (type === 'number' && typeof value !== 'number') throw bad('must be a number');
  if (typeof definition.minimum === 'number' && typeof value === 'number' && value < definition.minimum)
    throw bad(`must be at least ${definition.minimum}`);
  if (type === 'array') {
    if (!Array.isArray(value)) throw bad('must be an array');
    value.forEach((item, i) => {
      if (item !== null) checkValue(item, definition.items as JsonObject, `${path}[${i}]`, definitions, operation);
    });
    return;
  }
  if (type === 'object' && definition.properties !== undefined) {
    if (!isObject(value)) throw bad('must be an object');
    const concrete = ref ? subtype(definition, ref, value, path, definitions) : definition;
    checkObject(value, concrete, path, definitions, operation);
  }
}

function join(path: string, name: string): string {
  return path === '' ? name : `${path}.${name}`;
}
