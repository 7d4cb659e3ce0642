import { readFileSync } from 'node:fs';
import { isObject } from './index-definition.js';
import type { JsonObject, JsonValue } from './types.js';

const FIXTURES = new URL('../fixtures/', import.meta.url);

/** The recorded Microsoft examples in `fixtures/` (see `fixtures/SOURCES.md`). */
export type RecordedExampleName = 'SearchIndexSearchDocumentsPost' | 'SearchIndexSearchDocumentsSemanticPost';

/** One recorded example of `Documents_SearchPost`: the request it documents and the bodies the service answers. */
export interface RecordedExample {
  /** The request body of the example. */
  request: JsonObject;
  /** Response bodies by HTTP status (`'200'`, `'206'`). */
  responses: Record<string, JsonObject>;
}

function readJson(name: string): JsonObject {
  const value: unknown = JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8'));
  if (!isObject(value as JsonValue)) throw new Error(`${name}: not a JSON object.`);
  return value as JsonObject;
}

/** A recorded example of the REST specification, for `server.replay({ status, body })`. */
export function recordedExample(name: RecordedExampleName): RecordedExample {
  const example = readJson(`${name}.json`);
  const parameters = example.parameters as JsonObject;
  const responses: Record<string, JsonObject> = {};
  for (const [status, reply] of Object.entries(example.responses as JsonObject))
    responses[status] = (reply as JsonObject).body as JsonObject;
  return { request: parameters.body as JsonObject, responses };
}

let schema: JsonObject | undefined;

/** The OpenAPI excerpt of api-version 2026-04-01 (`fixtures/search-2026-04-01.excerpt.json`), read once. */
export function searchSchema(): JsonObject {
  schema ??= readJson('search-2026-04-01.excerpt.json');
  return schema;
}

/** The recorded examples of `KnowledgeRetrieval_Retrieve` in `fixtures/` (see `fixtures/SOURCES.md`). */
export type RecordedRetrieveExampleName =
  | 'KnowledgeBaseRetrieve'
  | 'KnowledgeBaseRetrieveWithIntents'
  | 'KnowledgeBaseRetrieve.2026-05-01-preview';

/** One recorded example of `KnowledgeRetrieval_Retrieve`: its parameters, the request body and the bodies the service answers. */
export interface RecordedRetrieveExample {
  /** `knowledgeBaseName`, `api-version`, `x-ms-query-source-authorization` (null when not sent) and the rest. */
  parameters: JsonObject;
  /** The request body (`retrievalRequest`). */
  request: JsonObject;
  /** Response bodies by HTTP status (`'200'`, `'206'`). */
  responses: Record<string, JsonObject>;
  /** The file's text, for comparisons of the serialization. */
  text: string;
}

/** A recorded knowledge base retrieval example of the REST specification, for `server.replay({ operation: 'retrieve', ... })`. */
export function recordedRetrieveExample(name: RecordedRetrieveExampleName): RecordedRetrieveExample {
  const text = readFileSync(new URL(`${name}.json`, FIXTURES), 'utf8');
  const example = readJson(`${name}.json`);
  const parameters = example.parameters as JsonObject;
  const responses: Record<string, JsonObject> = {};
  for (const [status, reply] of Object.entries(example.responses as JsonObject))
    responses[status] = (reply as JsonObject).body as JsonObject;
  return { parameters, request: parameters.retrievalRequest as JsonObject, responses, text };
}

const knowledgeSchemas = new Map<string, JsonObject>();

/** The OpenAPI excerpt of `KnowledgeRetrieval_Retrieve` for an api-version (`fixtures/knowledge-retrieval-*.excerpt.json`), read once. */
export function knowledgeRetrievalSchema(apiVersion: '2026-04-01' | '2026-05-01-preview'): JsonObject {
  let schema = knowledgeSchemas.get(apiVersion);
  if (!schema) {
    schema = readJson(`knowledge-retrieval-${apiVersion}.excerpt.json`);
    knowledgeSchemas.set(apiVersion, schema);
  }
  return schema;
}
