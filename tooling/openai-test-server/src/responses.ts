import {
  dropConnection,
  isGone,
  sendError,
  sendJson,
  sendMalformedJson,
  sendReplay,
  sleep,
  startEventStream,
  writeEvent,
  type ErrorFields,
  type Exchange,
} from './exchange.js';
import { randomBytes } from 'node:crypto';
import { newId, obfuscation, unixSeconds } from './ids.js';
import { echoText, failureError, resolveReply, type PlannedTurn, type ReplySource } from './replies.js';
import { contentText, countTokens, isObject, PER_MESSAGE_TOKENS, splitArguments, splitIntoDeltas } from './tokens.js';
import type { ConversationItem, JsonObject, ScriptedFailure, ScriptedReplay } from './types.js';

/** A response the service stored (requests without `store: false`), with its own input and output items. */
interface StoredResponse {
  response: JsonObject;
  input: ConversationItem[];
  output: ConversationItem[];
  previousResponseId: string | null;
}

/** A Conversations API conversation and its items, oldest first. */
interface StoredConversation {
  conversation: JsonObject;
  items: ConversationItem[];
}

/** What the service remembers between calls: stored responses and conversations. */
export class ResponsesStore {
  readonly responses = new Map<string, StoredResponse>();
  readonly conversations = new Map<string, StoredConversation>();
  /** The `encrypted_content` this server issued, to the reasoning item id it was issued for. */
  readonly encrypted = new Map<string, string>();
  /** The `encrypted_content` of the compaction items this server issued (or replayed), to the item's id. */
  readonly compactions = new Map<string, string>();

  /** Whether an item with this id is held: in a stored response (input or output) or a conversation. */
  hasItem(id: string): boolean {
    const held = (items: ConversationItem[]) => items.some((item) => item.id === id);
    for (const stored of this.responses.values()) if (held(stored.input) || held(stored.output)) return true;
    for (const stored of this.conversations.values()) if (held(stored.items)) return true;
    return false;
  }

  /** The input and output items of every response from the first of the chain to `responseId`. */
  chain(responseId: string): ConversationItem[] {
    const links: StoredResponse[] = [];
    let id: string | null = responseId;
    while (id !== null) {
      const stored = this.responses.get(id);
      if (stored === undefined) {
        throw new Error(
          `No stored response '${id}' in the OpenAI test server: it was never created, was created with store: false, or was deleted.`,
        );
      }
      links.unshift(stored);
      id = stored.previousResponseId;
    }
    return structuredClone(links.flatMap((link) => [...link.input, ...link.output]));
  }

  /** The items of a conversation, oldest first. */
  conversationItems(conversationId: string): ConversationItem[] {
    const stored = this.conversations.get(conversationId);
    if (stored === undefined) throw new Error(`No conversation '${conversationId}' in the OpenAI test server.`);
    return structuredClone(stored.items);
  }

  clear(): void {
    this.responses.clear();
    this.conversations.clear();
    this.encrypted.clear();
    this.compactions.clear();
  }
}

/** `POST /responses`. */
export async function handleCreateResponse(
  ex: Exchange,
  body: JsonObject,
  source: ReplySource,
  store: ResponsesStore,
  deployment: string | undefined,
): Promise<void> {
  const request = readModelAndInput(ex, body, store, deployment);
  if (request === undefined) return;
  const { model, input } = request;
  const previousResponseId = typeof body.previous_response_id === 'string' ? body.previous_response_id : null;
  const conversationId = conversationIdOf(body.conversation);
  if (previousResponseId !== null && conversationId !== null) {
    sendError(ex, 400, {
      message: "Mutually exclusive parameters: Ensure you are only providing one of: 'previous_response_id' or 'conversation'.",
      code: 'mutually_exclusive_parameters',
    });
    return;
  }
  let history: ConversationItem[] = [];
  if (previousResponseId !== null) {
    if (!store.responses.has(previousResponseId)) {
      sendError(ex, 400, {
        message: `Previous response with id '${previousResponseId}' not found.`,
        param: 'previous_response_id',
        code: 'previous_response_not_found',
      });
      return;
    }
    history = store.chain(previousResponseId);
  }
  const conversation = conversationId === null ? undefined : store.conversations.get(conversationId);
  if (conversationId !== null) {
    if (conversation === undefined) {
      sendError(ex, 404, { message: `Conversation with id '${conversationId}' not found.`, param: 'conversation' });
      return;
    }
    history = structuredClone(conversation.items);
  }
  const management = compactThreshold(body.context_management);
  if (typeof management === 'object') {
    sendError(ex, 400, management);
    return;
  }
  // A compaction item stands for everything before it: the service reads from the newest one on
  // (calls are still paired over everything sent, so a call may sit before the item, its output after).
  const context = fromNewestCompaction([...history, ...input.items]);
  const pairingError = checkFunctionCallPairing([...history, ...input.items]);
  if (pairingError !== undefined) {
    sendError(ex, 400, pairingError);
    return;
  }

  const format = isObject(body.text) && isObject(body.text.format) ? body.text.format.type : undefined;
  const jsonMode = format === 'json_object' || format === 'json_schema';
  const resolved = await resolveReply(source, ex, echoText(lastUserText(input.items) ?? lastUserText(history) ?? '', jsonMode));
  const stream = body.stream === true;
  switch (resolved.kind) {
    case 'gone':
      return;
    case 'error': {
      const { status, ...fields } = resolved.reply.error;
      sendError(ex, status, fields, resolved.reply.headers);
      return;
    }
    case 'malformed':
      if (stream) sendMalformedStream(ex, resolved.mode);
      else sendMalformedJson(ex, resolved.mode);
      return;
    case 'replay':
      registerEncrypted(resolved.replay, store);
      sendReplay(ex, resolved.replay, 'responses');
      return;
    case 'failure': {
      const failed = responseObject(body, {
        id: ex.serviceId('resp'),
        model,
        createdAt: unixSeconds(),
        status: 'failed',
        output: [],
        incompleteDetails: null,
        conversationId,
        usage: null,
        error: { code: resolved.failure.code, message: resolved.failure.message },
      });
      if (stream) streamFailure(ex, failed, resolved.failure);
      else sendJson(ex, 200, failed);
      return;
    }
    case 'turn':
      break;
  }

  const turn = resolved.turn;
  const inputTokens = turn.inputTokensOverride ?? countInputTokens(context, body.instructions, body.tools);
  const include = Array.isArray(body.include) ? body.include : [];
  const output = outputItems(turn, include.includes('reasoning.encrypted_content') ? store : undefined);
  // Past the threshold the service compacts, and the compaction item follows the output (as recorded).
  if (management !== undefined && inputTokens > management) output.push(compactionItem(store));
  const incomplete = turn.finishReason === 'length' || turn.finishReason === 'content_filter';
  const response = responseObject(body, {
    id: ex.serviceId('resp'),
    model,
    createdAt: unixSeconds(),
    status: incomplete ? 'incomplete' : 'completed',
    output,
    incompleteDetails: incomplete ? { reason: turn.finishReason === 'length' ? 'max_output_tokens' : 'content_filter' } : null,
    conversationId,
    usage: {
      input_tokens: inputTokens,
      input_tokens_details: { cached_tokens: turn.cachedTokens },
      output_tokens: turn.outputTokens,
      output_tokens_details: { reasoning_tokens: turn.reasoningTokens },
      total_tokens: inputTokens + turn.outputTokens,
    },
  });

  // Persist before replying, so a follow-up call made right after the reply finds the response.
  if (body.store !== false) {
    store.responses.set(String(response.id), {
      response: structuredClone(response),
      input: structuredClone(input.items),
      output: structuredClone(output),
      previousResponseId,
    });
  }
  conversation?.items.push(...structuredClone(input.items), ...structuredClone(output));

  if (stream) await streamResponse(ex, response, output, turn.streamDelayMs, streamObfuscated(body));
  else sendJson(ex, 200, response);
}

/** `GET /responses/{id}`. */
export function handleGetResponse(ex: Exchange, id: string, store: ResponsesStore): void {
  const stored = store.responses.get(id);
  if (stored === undefined) sendError(ex, 404, responseNotFound(id));
  else sendJson(ex, 200, stored.response);
}

/** `DELETE /responses/{id}`. */
export function handleDeleteResponse(ex: Exchange, id: string, store: ResponsesStore): void {
  if (!store.responses.delete(id)) sendError(ex, 404, responseNotFound(id));
  else sendJson(ex, 200, { id, object: 'response.deleted', deleted: true });
}

/** `GET /responses/{id}/input_items`: the response's own input items, a cursor page (default order `desc`). */
export function handleListInputItems(ex: Exchange, id: string, store: ResponsesStore): void {
  const stored = store.responses.get(id);
  if (stored === undefined) sendError(ex, 404, responseNotFound(id));
  else sendJson(ex, 200, listPage(stored.input, ex.recorded.query));
}

/** `POST /conversations`: `{ items?, metadata? }`. */
export function handleCreateConversation(ex: Exchange, body: JsonObject, store: ResponsesStore): void {
  const items = normalizeItems(body.items ?? [], 'items');
  if ('error' in items) {
    sendError(ex, 400, items.error);
    return;
  }
  const conversation = {
    id: newId('conv'),
    object: 'conversation',
    created_at: unixSeconds(),
    metadata: isObject(body.metadata) ? body.metadata : {},
  };
  store.conversations.set(conversation.id, { conversation, items: items.items });
  sendJson(ex, 200, conversation);
}

/** `GET /conversations/{id}`. */
export function handleGetConversation(ex: Exchange, id: string, store: ResponsesStore): void {
  const stored = store.conversations.get(id);
  if (stored === undefined) sendError(ex, 404, conversationNotFound(id));
  else sendJson(ex, 200, stored.conversation);
}

/** `DELETE /conversations/{id}`. */
export function handleDeleteConversation(ex: Exchange, id: string, store: ResponsesStore): void {
  if (!store.conversations.delete(id)) sendError(ex, 404, conversationNotFound(id));
  else sendJson(ex, 200, { id, object: 'conversation.deleted', deleted: true });
}

/** `GET /conversations/{id}/items`: a cursor page (default order `desc`). */
export function handleListConversationItems(ex: Exchange, id: string, store: ResponsesStore): void {
  const stored = store.conversations.get(id);
  if (stored === undefined) sendError(ex, 404, conversationNotFound(id));
  else sendJson(ex, 200, listPage(stored.items, ex.recorded.query));
}

/** `POST /conversations/{id}/items`: `{ items }`, appended in order. */
export function handleCreateConversationItems(ex: Exchange, id: string, body: JsonObject, store: ResponsesStore): void {
  const stored = store.conversations.get(id);
  if (stored === undefined) {
    sendError(ex, 404, conversationNotFound(id));
    return;
  }
  const items = normalizeItems(body.items, 'items');
  if ('error' in items) {
    sendError(ex, 400, items.error);
    return;
  }
  stored.items.push(...items.items);
  sendJson(ex, 200, {
    object: 'list',
    data: items.items,
    first_id: items.items[0]?.id ?? null,
    last_id: items.items.at(-1)?.id ?? null,
    has_more: false,
  });
}

function responseNotFound(id: string): ErrorFields {
  return { message: `Response with id '${id}' not found.`, param: null };
}

function conversationNotFound(id: string): ErrorFields {
  return { message: `Conversation with id '${id}' not found.`, param: null };
}

function conversationIdOf(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (isObject(value) && typeof value.id === 'string') return value.id;
  return null;
}

const ID_PREFIX: Record<string, string> = {
  message: 'msg',
  function_call: 'fc',
  function_call_output: 'fco',
  reasoning: 'rs',
};

/**
 * Input in the shape the service stores it: a string becomes a user message, `{ role, content }`
 * gets `type: 'message'`, string content becomes `input_text` (or `output_text` for the
 * assistant) parts, and items without an id get one.
 */
function normalizeItems(value: unknown, param: string): { items: ConversationItem[] } | { error: ErrorFields } {
  if (value === undefined || value === null) return { items: [] };
  if (typeof value === 'string') {
    return { items: [{ id: newId('msg'), type: 'message', role: 'user', content: [{ type: 'input_text', text: value }] }] };
  }
  if (!Array.isArray(value)) {
    return { error: { message: `Invalid type for '${param}': expected a string or an array of items.`, param, code: 'invalid_type' } };
  }
  const items: ConversationItem[] = [];
  for (const [index, raw] of value.entries()) {
    if (!isObject(raw)) {
      return {
        error: { message: `Invalid type for '${param}[${index}]': expected an object.`, param: `${param}[${index}]`, code: 'invalid_type' },
      };
    }
    const item = structuredClone(raw);
    const type = typeof item.type === 'string' ? item.type : typeof item.role === 'string' ? 'message' : undefined;
    if (type === undefined) {
      return {
        error: {
          message: `Missing required parameter: '${param}[${index}].type'.`,
          param: `${param}[${index}].type`,
          code: 'missing_required_parameter',
        },
      };
    }
    item.type = type;
    if (type === 'message' && typeof item.content === 'string') {
      item.content =
        item.role === 'assistant'
          ? [{ type: 'output_text', text: item.content, annotations: [] }]
          : [{ type: 'input_text', text: item.content }];
    }
    if (typeof item.id !== 'string' && type !== 'item_reference') item.id = newId(ID_PREFIX[type] ?? 'item');
    items.push(item as ConversationItem);
  }
  return { items };
}

/** The text of the last user message among `items`, or `undefined`. */
function lastUserText(items: ConversationItem[]): string | undefined {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i];
    if (item !== undefined && item.type === 'message' && item.role === 'user') return contentText(item.content);
  }
  return undefined;
}

/**
 * The service's rule: every `function_call_output` answers a `function_call` in the context,
 * and every `function_call` in the context has an output.
 */
function checkFunctionCallPairing(context: ConversationItem[]): ErrorFields | undefined {
  const calls = new Set<string>();
  const outputs = new Set<string>();
  for (const item of context) {
    if (item.type === 'function_call') calls.add(String(item.call_id));
    if (item.type === 'function_call_output') outputs.add(String(item.call_id));
  }
  for (const id of outputs) {
    if (!calls.has(id)) return { message: `No tool call found for function call output with call_id ${id}.`, param: 'input' };
  }
  for (const id of calls) {
    if (!outputs.has(id)) return { message: `No tool output found for function call ${id}.`, param: 'input' };
  }
  return undefined;
}

/**
 * Replayed traffic is what the service issued: the `encrypted_content` of its finished reasoning
 * items (in `output_item.done`, the final response, or a plain body) verifies when sent back.
 */
function registerEncrypted(replay: ScriptedReplay['replay'], store: ResponsesStore): void {
  const items: unknown[] = [];
  const outputOf = (response: unknown) => (isObject(response) && Array.isArray(response.output) ? response.output : []);
  if ('body' in replay) items.push(...outputOf(replay.body));
  if ('events' in replay) {
    for (const event of replay.events) {
      if (event.type === 'response.output_item.done') items.push(event.item);
      if (event.type === 'response.completed' || event.type === 'response.incomplete') items.push(...outputOf(event.response));
    }
  }
  for (const item of items) {
    if (isObject(item) && item.type === 'reasoning' && typeof item.encrypted_content === 'string') {
      store.encrypted.set(item.encrypted_content, String(item.id));
    }
    if (isObject(item) && item.type === 'compaction' && typeof item.encrypted_content === 'string') {
      store.compactions.set(item.encrypted_content, String(item.id));
    }
  }
}

/** Whether stream deltas carry `obfuscation` (the service's default; `stream_options.include_obfuscation: false` turns it off). */
function streamObfuscated(body: JsonObject): boolean {
  return !(isObject(body.stream_options) && body.stream_options.include_obfuscation === false);
}

const notPersisted = (id: string): ErrorFields => ({
  message: `Item with id '${id}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`,
  param: 'input',
});

/**
 * The service's checks of input items that refer to what it may hold: an `item_reference`, or a
 * reasoning item without `encrypted_content`, must name an item the service stored (a `store: false`
 * response stores nothing); `encrypted_content` must be what the service issued for that item; and a
 * reasoning item must be followed by the item it led to.
 */
function checkInputItems(items: ConversationItem[], store: ResponsesStore): ErrorFields | undefined {
  for (const [index, item] of items.entries()) {
    const id = String(item.id);
    if (item.type === 'item_reference' && !store.hasItem(id)) return notPersisted(id);
    if (item.type === 'compaction') {
      const issued = typeof item.encrypted_content === 'string' ? store.compactions.get(item.encrypted_content) : undefined;
      if (issued === undefined || (typeof item.id === 'string' && item.id.startsWith('cmp_') && item.id !== issued)) {
        return {
          message: `The encrypted content for compaction item ${id} could not be verified.`,
          param: 'input',
          code: 'invalid_encrypted_content',
        };
      }
      continue;
    }
    if (item.type !== 'reasoning') continue;
    if (typeof item.encrypted_content === 'string') {
      if (store.encrypted.get(item.encrypted_content) !== id) {
        return {
          message: `The encrypted content for item ${id} could not be verified.`,
          param: 'input',
          code: 'invalid_encrypted_content',
        };
      }
    } else if (!store.hasItem(id)) {
      return notPersisted(id);
    }
    const next = items[index + 1];
    if (next === undefined || next.type === 'reasoning' || (next.type === 'message' && next.role !== 'assistant')) {
      return { message: `Item '${id}' of type 'reasoning' was provided without its required following item.`, param: 'input' };
    }
  }
  return undefined;
}

function itemText(item: ConversationItem): string {
  switch (item.type) {
    case 'message':
      return contentText(item.content);
    case 'function_call':
      return String(item.name ?? '') + String(item.arguments ?? '');
    case 'function_call_output':
      return typeof item.output === 'string' ? item.output : contentText(item.output);
    case 'reasoning':
      return contentText(item.summary);
    default:
      return JSON.stringify(item);
  }
}

/** Four tokens per item plus its text, plus the instructions and tool definitions. */
function countInputTokens(context: ConversationItem[], instructions: unknown, tools: unknown): number {
  let total = 0;
  for (const item of context) total += PER_MESSAGE_TOKENS + (item.type === 'compaction' ? COMPACTION_TOKENS : countTokens(itemText(item)));
  if (typeof instructions === 'string') total += PER_MESSAGE_TOKENS + countTokens(instructions);
  if (Array.isArray(tools) && tools.length > 0) total += countTokens(JSON.stringify(tools));
  return total;
}

/** The turn's output items; reasoning carries `encrypted_content` (recorded in `encrypting`) when the request included it. */
function outputItems(turn: PlannedTurn, encrypting: ResponsesStore | undefined): ConversationItem[] {
  const incomplete = turn.finishReason === 'length' || turn.finishReason === 'content_filter';
  return turn.output.map((planned): ConversationItem => {
    switch (planned.type) {
      case 'reasoning': {
        const id = newId('rs');
        const item: ConversationItem = {
          id,
          type: 'reasoning',
          summary: planned.summary ? [{ type: 'summary_text', text: planned.summary }] : [],
        };
        if (encrypting) {
          const encrypted = `gAAAAA${randomBytes(48).toString('base64url')}`;
          item.encrypted_content = encrypted;
          encrypting.encrypted.set(encrypted, id);
        }
        return item;
      }
      case 'message': {
        const content: JsonObject[] = [];
        if (planned.text !== undefined)
          content.push({ type: 'output_text', text: planned.text, annotations: planned.annotations ?? [], logprobs: [] });
        if (planned.refusal !== undefined) content.push({ type: 'refusal', refusal: planned.refusal });
        return {
          id: newId('msg'),
          type: 'message',
          status: incomplete ? 'incomplete' : 'completed',
          content,
          ...(planned.phase ? { phase: planned.phase } : {}),
          role: 'assistant',
        };
      }
      case 'function_call':
        return {
          id: newId('fc'),
          type: 'function_call',
          status: 'completed',
          arguments: planned.arguments,
          call_id: planned.id,
          name: planned.name,
        };
      case 'hosted':
        return structuredClone(planned.item);
    }
  });
}

/** The progress events the service sends between a hosted tool item's `added` and `done`, by item type. */
const HOSTED_TOOL_STAGES: Record<string, string[]> = {
  web_search_call: ['in_progress', 'searching', 'completed'],
  file_search_call: ['in_progress', 'searching', 'completed'],
  code_interpreter_call: ['in_progress', 'interpreting', 'completed'],
  image_generation_call: ['in_progress', 'generating', 'completed'],
  mcp_call: ['in_progress', 'completed'],
  mcp_list_tools: ['in_progress', 'completed'],
};

interface ResponseFields {
  id: string;
  model: string;
  createdAt: number;
  status: 'in_progress' | 'completed' | 'incomplete' | 'failed';
  output: ConversationItem[];
  incompleteDetails: JsonObject | null;
  conversationId: string | null;
  usage: JsonObject | null;
  /** `{ code, message }` of a failed response. */
  error?: JsonObject;
}

/** A `response` object with every field the SDK's `Response` type declares, echoing the request's settings. */
function responseObject(body: JsonObject, fields: ResponseFields): JsonObject {
  const reasoning = isObject(body.reasoning) ? body.reasoning : {};
  return {
    id: fields.id,
    object: 'response',
    created_at: fields.createdAt,
    status: fields.status,
    background: body.background === true,
    completed_at: fields.status === 'in_progress' ? null : unixSeconds(),
    conversation: fields.conversationId === null ? null : { id: fields.conversationId },
    error: fields.error ?? null,
    incomplete_details: fields.incompleteDetails,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    max_tool_calls: body.max_tool_calls ?? null,
    model: fields.model,
    output: fields.output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    prompt_cache_key: body.prompt_cache_key ?? null,
    reasoning: { effort: reasoning.effort ?? null, summary: reasoning.summary ?? null },
    safety_identifier: body.safety_identifier ?? null,
    service_tier: 'default',
    store: body.store !== false,
    temperature: body.temperature ?? 1,
    text: body.text ?? { format: { type: 'text' }, verbosity: 'medium' },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_logprobs: body.top_logprobs ?? 0,
    top_p: body.top_p ?? 1,
    truncation: body.truncation ?? 'disabled',
    usage: fields.usage,
    user: body.user ?? null,
    metadata: body.metadata ?? {},
  };
}

/** The SSE events of a streamed response, in the order the service sends them. */
function responseEvents(response: JsonObject, output: ConversationItem[], obfuscate: boolean): JsonObject[] {
  const events: JsonObject[] = [];
  const push = (type: string, fields: JsonObject): void => {
    events.push({
      type,
      sequence_number: events.length,
      ...fields,
      ...(obfuscate && 'delta' in fields ? { obfuscation: obfuscation() } : {}),
    });
  };
  const inProgress = { ...response, status: 'in_progress', completed_at: null, output: [], usage: null, incomplete_details: null };
  push('response.created', { response: inProgress });
  push('response.in_progress', { response: inProgress });

  output.forEach((item, outputIndex) => {
    const itemId = String(item.id);
    const at = { item_id: itemId, output_index: outputIndex };
    if (item.type === 'reasoning') {
      const text = contentText(item.summary);
      // As recorded: the encrypted content sent in `added` differs from the final one.
      const added =
        typeof item.encrypted_content === 'string' ? { encrypted_content: `gAAAAA${randomBytes(24).toString('base64url')}` } : {};
      push('response.output_item.added', { output_index: outputIndex, item: { ...item, summary: [], ...added } });
      if (text !== '') {
        push('response.reasoning_summary_part.added', { ...at, summary_index: 0, part: { type: 'summary_text', text: '' } });
        for (const delta of splitIntoDeltas(text)) {
          push('response.reasoning_summary_text.delta', { ...at, summary_index: 0, delta });
        }
        push('response.reasoning_summary_text.done', { ...at, summary_index: 0, text });
        push('response.reasoning_summary_part.done', { ...at, summary_index: 0, part: { type: 'summary_text', text } });
      }
    } else if (item.type === 'message') {
      push('response.output_item.added', { output_index: outputIndex, item: { ...item, status: 'in_progress', content: [] } });
      const parts = Array.isArray(item.content) ? (item.content as JsonObject[]) : [];
      parts.forEach((part, contentIndex) => {
        const partAt = { ...at, content_index: contentIndex };
        if (part.type === 'output_text') {
          const text = String(part.text);
          const annotations = Array.isArray(part.annotations) ? (part.annotations as JsonObject[]) : [];
          push('response.content_part.added', { ...partAt, part: { ...part, text: '', annotations: [] } });
          // Each annotation right after the delta that completes the span it cites, as recorded.
          let sent = 0;
          let next = 0;
          const annotate = (upTo: number) => {
            for (; next < annotations.length && Number(annotations[next]!.end_index ?? 0) <= upTo; next++) {
              push('response.output_text.annotation.added', { ...partAt, annotation_index: next, annotation: annotations[next]! });
            }
          };
          for (const delta of splitIntoDeltas(text)) {
            push('response.output_text.delta', { ...partAt, delta, logprobs: [] });
            sent += delta.length;
            annotate(sent);
          }
          annotate(Number.POSITIVE_INFINITY);
          push('response.output_text.done', { ...partAt, text, logprobs: [] });
        } else {
          const refusal = String(part.refusal);
          push('response.content_part.added', { ...partAt, part: { ...part, refusal: '' } });
          for (const delta of splitIntoDeltas(refusal)) push('response.refusal.delta', { ...partAt, delta });
          push('response.refusal.done', { ...partAt, refusal });
        }
        push('response.content_part.done', { ...partAt, part });
      });
    } else if (item.type === 'function_call') {
      const args = String(item.arguments);
      push('response.output_item.added', { output_index: outputIndex, item: { ...item, status: 'in_progress', arguments: '' } });
      for (const delta of splitArguments(args)) push('response.function_call_arguments.delta', { ...at, delta });
      push('response.function_call_arguments.done', { ...at, name: item.name, arguments: args });
    } else if (item.type === 'compaction') {
      // As recorded: the compaction item arrives whole, encrypted content included, in `added` and in `done`.
      push('response.output_item.added', { output_index: outputIndex, item });
    } else {
      push('response.output_item.added', { output_index: outputIndex, item: { id: item.id, type: item.type, status: 'in_progress' } });
      for (const stage of HOSTED_TOOL_STAGES[item.type] ?? []) push(`response.${item.type}.${stage}`, at);
    }
    push('response.output_item.done', { output_index: outputIndex, item });
  });

  push(response.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response });
  return events;
}

async function streamResponse(
  ex: Exchange,
  response: JsonObject,
  output: ConversationItem[],
  delayMs: number,
  obfuscate: boolean,
): Promise<void> {
  startEventStream(ex);
  for (const event of responseEvents(response, output, obfuscate)) {
    if (delayMs > 0 && !(await sleep(delayMs, ex.signal))) return;
    if (isGone(ex)) return;
    writeEvent(ex, JSON.stringify(event), String(event.type));
  }
  ex.res.end();
}

/**
 * A stream that fails after it started, as the service sends one: `response.created`,
 * `response.in_progress`, any partial text, the `error` event (nested, flat or left out), then
 * `response.failed` with the failed response.
 */
function streamFailure(ex: Exchange, failed: JsonObject, failure: ScriptedFailure['failure']): void {
  const events: JsonObject[] = [];
  const push = (type: string, fields: JsonObject): void => {
    events.push({ type, sequence_number: events.length, ...fields });
  };
  const inProgress = { ...failed, status: 'in_progress', completed_at: null, error: null };
  push('response.created', { response: inProgress });
  push('response.in_progress', { response: inProgress });
  if (failure.textBefore !== undefined) {
    const at = { item_id: newId('msg'), output_index: 0, content_index: 0 };
    push('response.output_item.added', {
      output_index: 0,
      item: { id: at.item_id, type: 'message', status: 'in_progress', content: [], role: 'assistant' },
    });
    push('response.content_part.added', { ...at, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } });
    for (const delta of splitIntoDeltas(failure.textBefore)) push('response.output_text.delta', { ...at, delta, logprobs: [] });
  }
  const error = failureError(failure);
  if (failure.errorEvent === 'flat') push('error', { code: error.code, message: error.message, param: error.param });
  else if (failure.errorEvent !== 'none') push('error', { error });
  push('response.failed', { response: failed });
  startEventStream(ex);
  for (const event of events) {
    if (isGone(ex)) return;
    writeEvent(ex, JSON.stringify(event), String(event.type));
  }
  ex.res.end();
}

function sendMalformedStream(ex: Exchange, mode: 'truncated' | 'garbage'): void {
  startEventStream(ex);
  const response = { id: ex.serviceId('resp'), object: 'response', created_at: unixSeconds(), status: 'in_progress', output: [] };
  writeEvent(ex, JSON.stringify({ type: 'response.created', sequence_number: 0, response }), 'response.created');
  if (mode === 'truncated') {
    writeEvent(
      ex,
      JSON.stringify({
        type: 'response.output_item.added',
        sequence_number: 1,
        output_index: 0,
        item: { id: newId('msg'), type: 'message', status: 'in_progress', content: [], role: 'assistant' },
      }),
      'response.output_item.added',
    );
    dropConnection(ex);
    return;
  }
  writeEvent(ex, '{"type": "response.output_text.delta", "delta": "oops', 'response.output_text.delta');
  ex.res.end();
}

/** A cursor page over `items` honouring `order` (default `desc`), `limit` (default 20) and `after`. */
function listPage(items: ConversationItem[], query: Record<string, string>): JsonObject {
  const ordered = query.order === 'asc' ? [...items] : [...items].reverse();
  const start = query.after === undefined ? 0 : ordered.findIndex((item) => item.id === query.after) + 1;
  const limit = Math.min(100, Math.max(1, Number(query.limit ?? 20) || 20));
  const data = ordered.slice(start, start + limit);
  return {
    object: 'list',
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: start + limit < ordered.length,
  };
}

/** What a compaction item costs when it is sent back, in tokens (besides the per-item framing). */
const COMPACTION_TOKENS = 16;

/**
 * The `compact_threshold` of `context_management: [{ type: 'compaction', compact_threshold }]`, or
 * undefined when the request does not ask for server-side compaction; a malformed entry is an error.
 */
function compactThreshold(value: unknown): number | undefined | ErrorFields {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) {
    return { message: "Invalid type for 'context_management': expected an array.", param: 'context_management', code: 'invalid_type' };
  }
  let threshold: number | undefined;
  for (const [index, entry] of value.entries()) {
    const param = `context_management[${index}]`;
    if (!isObject(entry) || entry.type !== 'compaction') {
      return {
        message: `Invalid value for '${param}.type': only 'compaction' is supported.`,
        param: `${param}.type`,
        code: 'invalid_value',
      };
    }
    const t = entry.compact_threshold;
    if (t === undefined || t === null) continue;
    if (typeof t !== 'number' || !Number.isInteger(t) || t < 1) {
      return {
        message: `Invalid '${param}.compact_threshold': expected a positive integer.`,
        param: `${param}.compact_threshold`,
        code: 'invalid_value',
      };
    }
    threshold = t;
  }
  return threshold;
}

/** The items from the newest compaction item on: it stands for everything before it. */
function fromNewestCompaction(items: ConversationItem[]): ConversationItem[] {
  let at = items.length - 1;
  while (at >= 0 && items[at]!.type !== 'compaction') at--;
  return at <= 0 ? items : items.slice(at);
}

/** A new compaction item; its encrypted content verifies when sent back. */
function compactionItem(store: ResponsesStore): ConversationItem {
  const id = newId('cmp');
  const encrypted = `gAAAAA${randomBytes(96).toString('base64url')}`;
  store.compactions.set(encrypted, id);
  return { id, type: 'compaction', encrypted_content: encrypted };
}

/**
 * `POST /responses/compact`: compacts `input` (after the chain of `previous_response_id`, if given)
 * into a compacted window, as the service answers: every user message, then one compaction item.
 */
export function handleCompact(ex: Exchange, body: JsonObject, store: ResponsesStore, deployment: string | undefined): void {
  const request = readModelAndInput(ex, body, store, deployment);
  if (request === undefined) return;
  const { input } = request;
  let history: ConversationItem[] = [];
  if (typeof body.previous_response_id === 'string') {
    if (!store.responses.has(body.previous_response_id)) {
      sendError(ex, 400, {
        message: `Previous response with id '${body.previous_response_id}' not found.`,
        param: 'previous_response_id',
        code: 'previous_response_not_found',
      });
      return;
    }
    history = store.chain(body.previous_response_id);
  }
  const context = fromNewestCompaction([...history, ...input.items]);
  if (context.length === 0) {
    sendError(ex, 400, { message: 'Nothing to compact: give input or previous_response_id.', param: 'input' });
    return;
  }
  const pairingError = checkFunctionCallPairing([...history, ...input.items]);
  if (pairingError !== undefined) {
    sendError(ex, 400, pairingError);
    return;
  }
  // Every user message of the input, those before an earlier compaction item too (a window it kept).
  const users = [...history, ...input.items]
    .filter((item) => item.type === 'message' && item.role === 'user')
    .map((item): ConversationItem => ({ id: newId('msg'), type: 'message', status: 'completed', content: item.content, role: 'user' }));
  const inputTokens = countInputTokens(context, body.instructions, undefined);
  const outputTokens = 8 + COMPACTION_TOKENS;
  sendJson(ex, 200, {
    id: ex.serviceId('resp'),
    object: 'response.compaction',
    created_at: unixSeconds(),
    output: [...users, compactionItem(store)],
    usage: {
      input_tokens: inputTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: inputTokens + outputTokens,
    },
  });
}

/**
 * The request's model (or the deployment's) and its checked `input` items, as `POST /responses` and
 * `POST /responses/compact` both read them; sends the service's 400 and returns undefined otherwise.
 */
function readModelAndInput(
  ex: Exchange,
  body: JsonObject,
  store: ResponsesStore,
  deployment: string | undefined,
): { model: string; input: { items: ConversationItem[] } } | undefined {
  const model = typeof body.model === 'string' ? body.model : deployment;
  if (model === undefined) {
    sendError(ex, 400, { message: "Missing required parameter: 'model'.", param: 'model', code: 'missing_required_parameter' });
    return undefined;
  }
  const input = normalizeItems(body.input, 'input');
  if ('error' in input) {
    sendError(ex, 400, input.error);
    return undefined;
  }
  const itemError = checkInputItems(input.items, store);
  if (itemError !== undefined) {
    sendError(ex, 400, itemError);
    return undefined;
  }
  return { model, input };
}
