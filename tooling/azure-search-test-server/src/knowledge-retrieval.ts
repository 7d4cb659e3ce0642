import { checkRetrieveRequest, SCHEMA_API_VERSION } from './api-version.js';
import type { IndexStore } from './documents.js';
import { SearchServiceError } from './errors.js';
import { isObject } from './index-definition.js';
import { search, type Vectorize } from './search.js';
import type { JsonObject, JsonValue, KnowledgeBaseDefinition, KnowledgeSourceDefinition } from './types.js';

/** What a derived retrieval needs from the server besides the request. */
export interface RetrieveContext {
  /** The request's `api-version` (2026-04-01 or 2026-05-01-preview). */
  apiVersion: string;
  /** The index of a knowledge source, or undefined when it does not exist. */
  storeOf(indexName: string): IndexStore | undefined;
  vectorize: Vectorize;
  /** Knowledge sources made to fail (`server.failKnowledgeSource`): name -> the error they report. */
  failing: ReadonlyMap<string, { code: string; message: string }>;
}

/** The most documents one search of a knowledge source contributes (the service's default retrieval window). */
export const KNOWLEDGE_SOURCE_TOP = 50;

/** Tokens of a text, as the test server counts them for activity records and output limits: one per four characters. */
export function approximateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

interface SourceParams {
  includeReferences: boolean;
  includeReferenceSourceData: boolean;
  rerankerThreshold: number | undefined;
  filterAddOn: string | undefined;
}

/**
 * Answers a knowledge base `retrieve` from the documents of its knowledge sources' indexes, as the
 * service does in extractive mode: the request checked against the api-version's schema, each
 * query (an intent's `search`, or on a preview api-version the last user message, after a
 * `modelQueryPlanning` step) run on each knowledge source with its `filterAddOn`, semantic ranking
 * when the index has a semantic configuration (`rerankerThreshold` applies to the reranker score),
 * references for the documents kept, and the activity of every step. A knowledge source whose index
 * is missing, or that was made to fail, reports the error in its activity record and the answer is
 * a 206 with what the other sources returned.
 * @throws SearchServiceError 400 for an invalid request, 404 for an unknown knowledge base.
 */
export async function retrieve(
  knowledgeBase: KnowledgeBaseDefinition,
  body: JsonObject,
  context: RetrieveContext,
): Promise<{ status: number; body: JsonObject }> {
  checkRetrieveRequest(body, context.apiVersion);
  const queries = plannedQueries(body);
  const paramsBySource = sourceParams(knowledgeBase, body);
  const activity: JsonObject[] = [];
  const nextId = () => activity.length;
  const messages = body.messages as JsonObject[] | undefined;
  if (messages) {
    const input = messages.map((m) => messageText(m)).join('\n');
    activity.push({
      type: 'modelQueryPlanning',
      id: nextId(),
      inputTokens: approximateTokens(input),
      outputTokens: approximateTokens(queries.join('\n')),
      elapsedMs: 1,
    });
  }
  const references: JsonObject[] = [];
  const seen = new Set<string>();
  const extracts: JsonObject[] = [];
  let failed = false;
  for (const source of knowledgeBase.knowledgeSources) {
    const params = paramsBySource.get(source.name)!;
    for (const query of queries) {
      const id = nextId();
      const record: JsonObject = {
        type: 'searchIndex',
        id,
        knowledgeSourceName: source.name,
        queryTime: new Date().toISOString(),
        count: 0,
        elapsedMs: 1,
        searchIndexArguments: searchArguments(source, query, params.filterAddOn),
      };
      activity.push(record);
      const fault = context.failing.get(source.name);
      const store = context.storeOf(source.indexName);
      if (fault || !store) {
        failed = true;
        record.error = fault
          ? { code: fault.code, message: fault.message, details: [], additionalInfo: [] }
          : {
              code: '404',
              message: `The index '${source.indexName}' of knowledge source '${source.name}' was not found.`,
              details: [],
              additionalInfo: [],
            };
        continue;
      }
      const hits = await searchSource(store, source, query, params, context);
      record.count = hits.length;
      for (const hit of hits) {
        const key = String(hit.document[store.definition.key.name]);
        if (seen.has(`${source.name}\u0000${key}`)) continue;
        seen.add(`${source.name}\u0000${key}`);
        const refId = String(extracts.length);
        extracts.push({ ref_id: extracts.length, ...contentOf(hit.document, source) });
        if (!params.includeReferences) continue;
        const reference: JsonObject = { type: 'searchIndex', id: refId, activitySource: id };
        if (params.includeReferenceSourceData) reference.sourceData = hit.document;
        if (hit.rerankerScore !== undefined) reference.rerankerScore = hit.rerankerScore;
        reference.docKey = key;
        references.push(reference);
      }
    }
  }
  const effort = body.retrievalReasoningEffort as JsonObject | undefined;
  if (effort) activity.push({ type: 'agenticReasoning', id: nextId(), retrievalReasoningEffort: effort, reasoningTokens: 0 });
  const limit = (body.maxOutputSizeInTokens ?? body.maxOutputSize) as number | undefined;
  const kept = fitExtracts(extracts, limit);
  let text = JSON.stringify(kept);
  if (body.outputMode === 'answerSynthesis') {
    text = kept.map((e) => `${String(e.content)} [ref_id:${String(e.ref_id)}]`).join('\n');
    activity.push({
      type: 'modelAnswerSynthesis',
      id: nextId(),
      inputTokens: approximateTokens(JSON.stringify(kept)),
      outputTokens: approximateTokens(text),
      elapsedMs: 1,
    });
  }
  const keptIds = new Set(kept.map((e) => String(e.ref_id)));
  const reply: JsonObject = {
    response: [{ role: 'assistant', content: [{ type: 'text', text }] }],
    ...(body.includeActivity === false ? {} : { activity }),
    references: references.filter((r) => keptIds.has(String(r.id))),
  };
  return { status: failed ? 206 : 200, body: reply };
}

/** The queries of a request: each semantic intent's `search`, or the last user message's text (the planning step). */
function plannedQueries(body: JsonObject): string[] {
  const intents = body.intents as JsonObject[] | undefined;
  const messages = body.messages as JsonObject[] | undefined;
  if (intents && intents.length > 0) return intents.map((i) => String(i.search));
  if (messages && messages.length > 0) {
    const user = [...messages].reverse().find((m) => (m.role ?? 'user') === 'user');
    const text = user ? messageText(user).trim() : '';
    if (text === '') throw new SearchServiceError(400, `The retrieval request has no user message with text to plan queries from.`);
    return [text];
  }
  throw new SearchServiceError(
    400,
    `The retrieval request needs 'intents'${body.messages === undefined ? ' (or, on a preview api-version, messages)' : ''} to run queries.`,
  );
}

function messageText(message: JsonObject): string {
  return ((message.content as JsonObject[] | undefined) ?? [])
    .filter((c) => c.type === 'text')
    .map((c) => String(c.text))
    .join('\n');
}

/** The runtime parameters of each knowledge source of the base (defaults: references with source data, no threshold, no filter). */
function sourceParams(knowledgeBase: KnowledgeBaseDefinition, body: JsonObject): Map<string, SourceParams> {
  const out = new Map<string, SourceParams>(
    knowledgeBase.knowledgeSources.map((s) => [
      s.name,
      { includeReferences: true, includeReferenceSourceData: false, rerankerThreshold: undefined, filterAddOn: undefined },
    ]),
  );
  const given = (body.knowledgeSourceParams as JsonObject[] | undefined) ?? [];
  given.forEach((p, i) => {
    const name = String(p.knowledgeSourceName);
    const params = out.get(name);
    if (!params)
      throw new SearchServiceError(
        400,
        `knowledgeSourceParams[${i}]: the knowledge source '${name}' is not part of knowledge base '${knowledgeBase.name}'.`,
      );
    if (p.kind !== 'searchIndex')
      throw new SearchServiceError(
        400,
        `knowledgeSourceParams[${i}]: the knowledge source '${name}' is of kind 'searchIndex', not '${String(p.kind)}'.`,
      );
    if (typeof p.includeReferences === 'boolean') params.includeReferences = p.includeReferences;
    if (typeof p.includeReferenceSourceData === 'boolean') params.includeReferenceSourceData = p.includeReferenceSourceData;
    if (typeof p.rerankerThreshold === 'number') params.rerankerThreshold = p.rerankerThreshold;
    if (typeof p.filterAddOn === 'string') params.filterAddOn = p.filterAddOn;
  });
  return out;
}

function searchArguments(source: KnowledgeSourceDefinition, query: string, filter: string | undefined): JsonObject {
  return {
    search: query,
    ...(filter === undefined ? {} : { filter }),
    sourceDataFields: (source.sourceDataFields ?? []).map((name) => ({ name })),
    searchFields: [{ name: '*' }],
    ...(source.semanticConfigurationName ? { semanticConfigurationName: source.semanticConfigurationName } : {}),
  };
}

/** One search of a knowledge source's index: semantic when the index has a configuration, the threshold applied. */
async function searchSource(
  store: IndexStore,
  source: KnowledgeSourceDefinition,
  query: string,
  params: SourceParams,
  context: RetrieveContext,
): Promise<{ document: JsonObject; rerankerScore: number | undefined }[]> {
  const semantic = store.definition.semantic;
  const configuration = source.semanticConfigurationName ?? semantic.defaultConfiguration ?? [...semantic.configurations.keys()][0];
  const request: JsonObject = {
    search: query,
    top: KNOWLEDGE_SOURCE_TOP,
    ...(params.filterAddOn === undefined ? {} : { filter: params.filterAddOn }),
    ...(source.sourceDataFields ? { select: [store.definition.key.name, ...source.sourceDataFields].join(',') } : {}),
    ...(configuration ? { queryType: 'semantic', semanticConfiguration: configuration } : {}),
  };
  const result = await search(store, request, context.vectorize, {
    apiVersion: SCHEMA_API_VERSION,
    nextLink: 'http://127.0.0.1/',
    coverage: 100,
    semanticFailure: undefined,
  });
  const out: { document: JsonObject; rerankerScore: number | undefined }[] = [];
  for (const hit of result.body.value as JsonObject[]) {
    const rerankerScore = typeof hit['@search.rerankerScore'] === 'number' ? hit['@search.rerankerScore'] : undefined;
    if (params.rerankerThreshold !== undefined && (rerankerScore ?? 0) < params.rerankerThreshold) continue;
    const document: JsonObject = {};
    for (const [name, value] of Object.entries(hit)) if (!name.startsWith('@search.')) document[name] = value as JsonValue;
    out.push({ document, rerankerScore });
  }
  return out;
}

/** The extract of one document: its title and content fields, as the service's extractive output holds them. */
function contentOf(document: JsonObject, source: KnowledgeSourceDefinition): JsonObject {
  const title = document[source.titleField ?? 'title'];
  const content = document[source.contentField ?? 'content'];
  return {
    ...(typeof title === 'string' ? { title } : {}),
    content: typeof content === 'string' ? content : JSON.stringify(document),
  };
}

/** The leading extracts that fit `limit` tokens (all of them without a limit; at least none). */
function fitExtracts(extracts: JsonObject[], limit: number | undefined): JsonObject[] {
  if (limit === undefined) return extracts;
  const kept: JsonObject[] = [];
  for (const extract of extracts) {
    if (approximateTokens(JSON.stringify([...kept, extract])) > limit) break;
    kept.push(extract);
  }
  return kept;
}

/** Whether a value is a knowledge base definition the server can hold. */
export function checkKnowledgeBase(definition: KnowledgeBaseDefinition): KnowledgeBaseDefinition {
  if (!isObject(definition as unknown as JsonValue) || typeof definition.name !== 'string' || definition.name === '')
    throw new TypeError('A knowledge base needs a name.');
  if (!Array.isArray(definition.knowledgeSources) || definition.knowledgeSources.length === 0)
    throw new TypeError(`Knowledge base '${definition.name}' needs at least one knowledge source.`);
  for (const source of definition.knowledgeSources)
    if (typeof source.name !== 'string' || typeof source.indexName !== 'string')
      throw new TypeError(`Each knowledge source of '${definition.name}' needs a name and an indexName.`);
  return structuredClone(definition);
}
