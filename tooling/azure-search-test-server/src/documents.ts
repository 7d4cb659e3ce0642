import { invalidRequest } from './errors.js';
import { isObject, type FieldDefinition, type IndexDefinition } from './index-definition.js';
import { analyze } from './text-analysis.js';
import type { JsonObject, JsonValue } from './types.js';

/** One stored document with its analyzed searchable fields. */
export interface StoredDocument {
  key: string;
  document: JsonObject;
  /** Searchable string field -> its tokens (lower-cased terms, in order). */
  terms: Map<string, string[]>;
}

/** An index and its documents, in insertion order. */
export class IndexStore {
  definition: IndexDefinition;
  readonly documents = new Map<string, StoredDocument>();

  constructor(definition: IndexDefinition) {
    this.definition = definition;
  }

  /** Re-analyzes every document after the definition changed (fields added). */
  redefine(definition: IndexDefinition): void {
    this.definition = definition;
    for (const stored of this.documents.values()) stored.terms = analyzeDocument(definition, stored.document);
  }
}

const KEY = /^[A-Za-z0-9_\-=]{1,1024}$/;
const ACTIONS = new Set(['upload', 'merge', 'mergeOrUpload', 'delete']);
const MAX_BATCH = 32_000;

/** One entry of the `value` array of an indexing reply. */
interface IndexingResult extends JsonObject {
  key: string;
  status: boolean;
  errorMessage: string | null;
  statusCode: number;
}

/**
 * Applies a `docs/search.index` batch: checks the whole batch first (unknown properties, wrong
 * types, vector lengths, missing keys are a 400 for the batch, as on the service), then applies
 * each action and reports it per document (`statusCode` 200/201, 404 for a merge of a missing
 * document, 400 for an invalid key). Returns the reply body and 200 or 207 (some failed).
 */
export function applyBatch(store: IndexStore, body: JsonObject | undefined): { status: number; body: JsonObject } {
  const value = body?.value;
  if (!Array.isArray(value)) throw invalidRequest(`The request must contain a 'value' array of index actions.`);
  if (value.length === 0) throw invalidRequest(`The batch must contain at least one index action.`);
  if (value.length > MAX_BATCH) throw invalidRequest(`The batch contains ${value.length} actions; at most ${MAX_BATCH} are allowed.`);
  const { definition } = store;
  const keyName = definition.key.name;
  const actions = value.map((item, i) => {
    if (!isObject(item)) throw invalidRequest(`The index action at position ${i} must be an object.`);
    const action = item['@search.action'] ?? 'upload';
    if (typeof action !== 'string' || !ACTIONS.has(action))
      throw invalidRequest(`The index action '${String(action)}' is not one of upload, merge, mergeOrUpload, delete.`);
    const document: JsonObject = {};
    for (const [name, fieldValue] of Object.entries(item)) {
      if (name === '@search.action') continue;
      const field = definition.fields.find((f) => f.name === name);
      if (!field)
        throw invalidRequest(
          `The property '${name}' does not exist on type 'search.documentFields'. Make sure to only use property names that are defined by the type.`,
        );
      if (action !== 'delete') checkValue(field, fieldValue, name);
      document[name] = fieldValue;
    }
    const key = document[keyName];
    if (typeof key !== 'string')
      throw invalidRequest(`The key field '${keyName}' is missing or not a string in the index action at position ${i}.`);
    return { action, key, document };
  });

  const results: IndexingResult[] = [];
  for (const { action, key, document } of actions) {
    if (!KEY.test(key)) {
      results.push({
        key,
        status: false,
        statusCode: 400,
        errorMessage: `Invalid document key: '${key}'. Keys can only contain letters, digits, underscore (_), dash (-), or equal sign (=).`,
      });
      continue;
    }
    const existing = store.documents.get(key);
    if (action === 'delete') {
      store.documents.delete(key);
      results.push({ key, status: true, statusCode: 200, errorMessage: null });
      continue;
    }
    if (action === 'merge' && !existing) {
      results.push({ key, status: false, statusCode: 404, errorMessage: 'Document not found.' });
      continue;
    }
    const merged = action === 'upload' || !existing ? document : { ...existing.document, ...document };
    store.documents.set(key, { key, document: merged, terms: analyzeDocument(definition, merged) });
    results.push({ key, status: true, statusCode: existing ? 200 : 201, errorMessage: null });
  }
  return { status: results.every((r) => r.status) ? 200 : 207, body: { value: results } };
}

function checkValue(field: FieldDefinition, value: JsonValue, path: string): void {
  if (value === null) return;
  const element = /^Collection\((.+)\)$/.exec(field.type)?.[1];
  if (element !== undefined) {
    if (!Array.isArray(value))
      throw invalidRequest(
        `Cannot convert a value of type '${jsonType(value)}' to the expected type '${field.type}' for the property '${path}'.`,
      );
    if (field.dimensions !== undefined && value.length !== field.dimensions) {
      throw invalidRequest(
        `The vector field '${path}' dimensionality must match the field definition's 'dimensions' property. Expected: '${field.dimensions}'. Actual: '${value.length}'.`,
      );
    }
    for (const item of value) {
      if (item === null && field.dimensions === undefined) continue;
      checkScalar({ ...field, type: element }, item, path);
    }
    return;
  }
  checkScalar(field, value, path);
}

function checkScalar(field: FieldDefinition, value: JsonValue, path: string): void {
  const fail = () =>
    invalidRequest(
      `Cannot convert the literal '${typeof value === 'object' ? JSON.stringify(value) : String(value)}' to the expected type '${field.type}' for the property '${path}'.`,
    );
  switch (field.type) {
    case 'Edm.String':
      if (typeof value !== 'string') throw fail();
      return;
    case 'Edm.Boolean':
      if (typeof value !== 'boolean') throw fail();
      return;
    case 'Edm.Int32':
    case 'Edm.Int64':
    case 'Edm.Int16':
    case 'Edm.SByte':
    case 'Edm.Byte':
      if (typeof value !== 'number' || !Number.isInteger(value)) throw fail();
      return;
    case 'Edm.Double':
      if (typeof value !== 'number' && !(typeof value === 'string' && /^(NaN|INF|-INF)$/.test(value))) throw fail();
      return;
    case 'Edm.Single':
    case 'Edm.Half':
      if (typeof value !== 'number' || !Number.isFinite(value)) throw fail();
      return;
    case 'Edm.DateTimeOffset':
      if (typeof value !== 'string' || Number.isNaN(Date.parse(value))) throw fail();
      return;
    case 'Edm.GeographyPoint':
      if (!isObject(value) || value.type !== 'Point' || !Array.isArray(value.coordinates)) throw fail();
      return;
    case 'Edm.ComplexType': {
      if (!isObject(value)) throw fail();
      for (const [name, sub] of Object.entries(value)) {
        const subField = field.fields?.find((f) => f.name === name);
        if (!subField)
          throw invalidRequest(
            `The property '${name}' does not exist on type '${path}'. Make sure to only use property names that are defined by the type.`,
          );
        checkValue(subField, sub, `${path}/${name}`);
      }
      return;
    }
    default:
      return;
  }
}

function jsonType(value: JsonValue): string {
  return Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value;
}

/** Tokens of every searchable top-level string field of `document`. */
export function analyzeDocument(definition: IndexDefinition, document: JsonObject): Map<string, string[]> {
  const terms = new Map<string, string[]>();
  for (const field of definition.fields) {
    if (!field.searchable || (field.type !== 'Edm.String' && field.type !== 'Collection(Edm.String)')) continue;
    const value = document[field.name];
    const text =
      typeof value === 'string' ? value : Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string').join('\n') : '';
    terms.set(field.name, analyze(text));
  }
  return terms;
}

/** The document as the service returns it: only retrievable fields, `select`ed ones when given. */
export function project(definition: IndexDefinition, document: JsonObject, select: readonly string[] | undefined): JsonObject {
  const out: JsonObject = {};
  for (const field of definition.fields) {
    if (!field.retrievable) continue;
    if (select && !select.includes(field.name)) continue;
    out[field.name] = document[field.name] ?? null;
  }
  return out;
}
