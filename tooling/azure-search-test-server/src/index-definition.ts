import { SearchServiceError } from './errors.js';
import type { JsonObject, JsonValue } from './types.js';

/** A field of an index, with every attribute filled in (the REST API's defaults where absent). */
export interface FieldDefinition {
  name: string;
  type: string;
  key: boolean;
  retrievable: boolean;
  searchable: boolean;
  filterable: boolean;
  sortable: boolean;
  facetable: boolean;
  /** Vector fields: their length. */
  dimensions?: number;
  /** Vector fields: the vector search profile. */
  vectorSearchProfile?: string;
  /** Complex fields: their sub-fields. */
  fields?: FieldDefinition[];
}

/** A semantic configuration: which fields the ranker reads, title first. */
export interface SemanticConfiguration {
  name: string;
  titleField: string | undefined;
  contentFields: string[];
  keywordsFields: string[];
}

/** An Azure OpenAI vectorizer: the service embeds `kind: 'text'` vector queries by calling it. */
export interface Vectorizer {
  name: string;
  kind: string;
  resourceUri?: string;
  deploymentId?: string;
  modelName?: string;
  apiKey?: string;
}

/** The checked definition of one index. */
export interface IndexDefinition {
  name: string;
  fields: FieldDefinition[];
  key: FieldDefinition;
  /** Vector field name -> similarity metric (`cosine`, `euclidean`, `dotProduct`) and vectorizer, if any. */
  vectorFields: Map<string, { field: FieldDefinition; metric: string; vectorizer: Vectorizer | undefined }>;
  semantic: { defaultConfiguration: string | undefined; configurations: Map<string, SemanticConfiguration> };
  /** The definition as the service echoes it back (defaults filled in, `@odata.etag`). */
  raw: JsonObject;
}

const INDEX_NAME = /^[a-z0-9](?:[a-z0-9-]{0,126}[a-z0-9])?$/;
const FIELD_NAME = /^[A-Za-z][A-Za-z0-9_]{0,127}$/;
const PRIMITIVES = new Set([
  'Edm.String',
  'Edm.Int32',
  'Edm.Int64',
  'Edm.Double',
  'Edm.Boolean',
  'Edm.DateTimeOffset',
  'Edm.GeographyPoint',
  'Edm.Single',
  'Edm.Half',
  'Edm.Int16',
  'Edm.SByte',
  'Edm.Byte',
  'Edm.ComplexType',
]);
const VECTOR_TYPES = new Set([
  'Collection(Edm.Single)',
  'Collection(Edm.Half)',
  'Collection(Edm.Int16)',
  'Collection(Edm.SByte)',
  'Collection(Edm.Byte)',
]);
const METRICS = new Set(['cosine', 'euclidean', 'dotProduct']);

function bad(message: string): SearchServiceError {
  return new SearchServiceError(400, message, 'InvalidRequestParameter');
}

/** Whether `name` is a valid index name (lower case letters, digits and dashes, at most 128). */
export function isValidIndexName(name: string): boolean {
  return INDEX_NAME.test(name) && !name.includes('--');
}

/**
 * Checks an index definition the way the service does for the parts the server implements, fills
 * in defaults, and returns it.
 * @throws SearchServiceError (400) for an invalid definition.
 */
export function parseIndexDefinition(body: JsonObject, etag: string): IndexDefinition {
  const name = body.name;
  if (typeof name !== 'string' || !isValidIndexName(name)) {
    throw bad(
      `The request is invalid. Details: index name '${String(name)}' is invalid: index names may contain only lower case letters, digits or dashes, cannot start or end with dashes, and are limited to 128 characters.`,
    );
  }
  if (!Array.isArray(body.fields) || body.fields.length === 0)
    throw bad(`The request is invalid. Details: index : The index must contain at least one field.`);
  const fields = parseFields(body.fields, '');
  const keys = fields.filter((f) => f.key);
  if (keys.length !== 1)
    throw bad(
      `The request is invalid. Details: index.fields : The index must contain exactly one key field of type 'Edm.String'; found ${keys.length}.`,
    );
  const key = keys[0]!;
  if (key.type !== 'Edm.String')
    throw bad(`The request is invalid. Details: index.fields : The key field '${key.name}' must be of type 'Edm.String'.`);

  const vectorSearch = (isObject(body.vectorSearch) ? body.vectorSearch : {}) as JsonObject;
  const algorithms = new Map<string, string>();
  for (const a of asObjects(vectorSearch.algorithms)) {
    const params = (
      isObject(a.hnswParameters) ? a.hnswParameters : isObject(a.exhaustiveKnnParameters) ? a.exhaustiveKnnParameters : {}
    ) as JsonObject;
    const metric = typeof params.metric === 'string' ? params.metric : 'cosine';
    if (!METRICS.has(metric))
      throw bad(
        `The request is invalid. Details: vectorSearch.algorithms : the metric '${metric}' is not supported by the test server (cosine, euclidean, dotProduct).`,
      );
    algorithms.set(String(a.name), metric);
  }
  const vectorizers = new Map<string, Vectorizer>();
  for (const v of asObjects(vectorSearch.vectorizers)) {
    const params = (isObject(v.azureOpenAIParameters) ? v.azureOpenAIParameters : {}) as JsonObject;
    const vectorizer: Vectorizer = { name: String(v.name), kind: String(v.kind) };
    if (typeof params.resourceUri === 'string') vectorizer.resourceUri = params.resourceUri;
    if (typeof params.deploymentId === 'string') vectorizer.deploymentId = params.deploymentId;
    if (typeof params.modelName === 'string') vectorizer.modelName = params.modelName;
    if (typeof params.apiKey === 'string') vectorizer.apiKey = params.apiKey;
    vectorizers.set(vectorizer.name, vectorizer);
  }
  const profiles = new Map<string, { algorithm: string; vectorizer: string | undefined }>();
  for (const p of asObjects(vectorSearch.profiles)) {
    const algorithm = String(p.algorithm);
    if (!algorithms.has(algorithm))
      throw bad(
        `The request is invalid. Details: vectorSearch.profiles : The profile '${String(p.name)}' refers to the algorithm '${algorithm}', which is not defined.`,
      );
    const vectorizer = typeof p.vectorizer === 'string' ? p.vectorizer : undefined;
    if (vectorizer !== undefined && !vectorizers.has(vectorizer))
      throw bad(
        `The request is invalid. Details: vectorSearch.profiles : The profile '${String(p.name)}' refers to the vectorizer '${vectorizer}', which is not defined.`,
      );
    profiles.set(String(p.name), { algorithm, vectorizer });
  }
  const vectorFields: IndexDefinition['vectorFields'] = new Map();
  for (const field of fields) {
    if (!VECTOR_TYPES.has(field.type) || field.dimensions === undefined) continue;
    const profile = field.vectorSearchProfile === undefined ? undefined : profiles.get(field.vectorSearchProfile);
    if (!profile)
      throw bad(
        `The request is invalid. Details: index.fields : The vector field '${field.name}' must refer to a defined vector search profile ('${String(field.vectorSearchProfile)}').`,
      );
    vectorFields.set(field.name, {
      field,
      metric: algorithms.get(profile.algorithm)!,
      vectorizer: profile.vectorizer === undefined ? undefined : vectorizers.get(profile.vectorizer),
    });
  }

  const semanticRaw = (isObject(body.semantic) ? body.semantic : {}) as JsonObject;
  const configurations = new Map<string, SemanticConfiguration>();
  const topLevel = new Map(fields.map((f) => [f.name, f]));
  const textField = (ref: JsonValue | undefined, config: string): string | undefined => {
    if (!isObject(ref)) return undefined;
    const fieldName = String(ref.fieldName);
    const field = topLevel.get(fieldName);
    if (!field || (field.type !== 'Edm.String' && field.type !== 'Collection(Edm.String)')) {
      throw bad(
        `The request is invalid. Details: semantic.configurations : The semantic configuration '${config}' refers to '${fieldName}', which is not a string field of the index.`,
      );
    }
    return fieldName;
  };
  for (const c of asObjects(semanticRaw.configurations)) {
    const configName = String(c.name);
    const prioritized = (isObject(c.prioritizedFields) ? c.prioritizedFields : {}) as JsonObject;
    const config: SemanticConfiguration = {
      name: configName,
      titleField: textField(prioritized.titleField, configName),
      contentFields: asObjects(prioritized.prioritizedContentFields).map((f) => textField(f, configName)!),
      keywordsFields: asObjects(prioritized.prioritizedKeywordsFields).map((f) => textField(f, configName)!),
    };
    if (config.titleField === undefined && config.contentFields.length === 0 && config.keywordsFields.length === 0) {
      throw bad(
        `The request is invalid. Details: semantic.configurations : The semantic configuration '${configName}' must name at least one field.`,
      );
    }
    configurations.set(configName, config);
  }
  const defaultConfiguration = typeof semanticRaw.defaultConfiguration === 'string' ? semanticRaw.defaultConfiguration : undefined;
  if (defaultConfiguration !== undefined && !configurations.has(defaultConfiguration)) {
    throw bad(
      `The request is invalid. Details: semantic.defaultConfiguration : '${defaultConfiguration}' is not a semantic configuration of the index.`,
    );
  }

  const raw: JsonObject = { ...body, '@odata.etag': etag, fields: fields.map(fieldToJson) };
  return { name, fields, key, vectorFields, semantic: { defaultConfiguration, configurations }, raw };
}

function parseFields(list: JsonValue[], prefix: string): FieldDefinition[] {
  const seen = new Set<string>();
  return list.map((value) => {
    if (!isObject(value)) throw bad(`The request is invalid. Details: index.fields : every field must be an object.`);
    const name = value.name;
    if (typeof name !== 'string' || !FIELD_NAME.test(name)) {
      throw bad(
        `The request is invalid. Details: index.fields : Invalid field name '${String(name)}': field names must start with a letter and contain only letters, digits or underscores.`,
      );
    }
    if (seen.has(name))
      throw bad(`The request is invalid. Details: index.fields : The field '${prefix}${name}' is defined more than once.`);
    seen.add(name);
    const type = String(value.type);
    const element = /^Collection\((.+)\)$/.exec(type)?.[1] ?? type;
    if (!PRIMITIVES.has(element))
      throw bad(`The request is invalid. Details: index.fields : The field '${prefix}${name}' has the unknown type '${type}'.`);
    const complex = element === 'Edm.ComplexType';
    const isString = element === 'Edm.String';
    const isVector = VECTOR_TYPES.has(type) && value.dimensions !== undefined && value.dimensions !== null;
    const flag = (k: string, fallback: boolean): boolean => (typeof value[k] === 'boolean' ? (value[k] as boolean) : fallback);
    const field: FieldDefinition = {
      name,
      type,
      key: flag('key', false),
      retrievable: flag('retrievable', true),
      searchable: flag('searchable', isString || isVector),
      filterable: flag('filterable', !complex && !isVector),
      sortable: flag('sortable', !complex && !isVector && !type.startsWith('Collection(')),
      facetable: flag('facetable', !complex && !isVector && element !== 'Edm.GeographyPoint'),
    };
    if (complex) {
      if (!Array.isArray(value.fields) || value.fields.length === 0)
        throw bad(`The request is invalid. Details: index.fields : The complex field '${prefix}${name}' must have sub-fields.`);
      field.fields = parseFields(value.fields, `${prefix}${name}/`);
    }
    if (isVector) {
      const dimensions = value.dimensions;
      if (typeof dimensions !== 'number' || !Number.isInteger(dimensions) || dimensions < 2 || dimensions > 4096) {
        throw bad(
          `The request is invalid. Details: index.fields : The vector field '${prefix}${name}' must have 'dimensions' between 2 and 4096.`,
        );
      }
      if (field.filterable || field.sortable || field.facetable)
        throw bad(
          `The request is invalid. Details: index.fields : The vector field '${prefix}${name}' cannot be filterable, sortable or facetable.`,
        );
      field.dimensions = dimensions;
      if (typeof value.vectorSearchProfile === 'string') field.vectorSearchProfile = value.vectorSearchProfile;
    } else if (field.searchable && !isString) {
      throw bad(`The request is invalid. Details: index.fields : The field '${prefix}${name}' of type '${type}' cannot be searchable.`);
    }
    return field;
  });
}

function fieldToJson(field: FieldDefinition): JsonObject {
  const out: JsonObject = { name: field.name, type: field.type };
  if (field.fields) {
    out.fields = field.fields.map(fieldToJson);
    return out;
  }
  Object.assign(out, {
    key: field.key,
    retrievable: field.retrievable,
    searchable: field.searchable,
    filterable: field.filterable,
    sortable: field.sortable,
    facetable: field.facetable,
  });
  if (field.dimensions !== undefined) out.dimensions = field.dimensions;
  if (field.vectorSearchProfile !== undefined) out.vectorSearchProfile = field.vectorSearchProfile;
  return out;
}

/** The field at a path of names, walking complex fields. */
export function lookupField(fields: readonly FieldDefinition[], path: readonly string[]): FieldDefinition | undefined {
  let list: readonly FieldDefinition[] | undefined = fields;
  let found: FieldDefinition | undefined;
  for (const segment of path) {
    found = list?.find((f) => f.name === segment);
    if (!found) return undefined;
    list = found.fields;
  }
  return found;
}

export function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function asObjects(value: JsonValue | undefined): JsonObject[] {
  return Array.isArray(value) ? value.filter(isObject) : [];
}
