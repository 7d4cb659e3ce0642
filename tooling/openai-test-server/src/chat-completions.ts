import {
  dropConnection,
  isGone,
  sendError,
  sendMalformedJson,
  sendJson,
  sendReplay,
  sleep,
  startEventStream,
  writeEvent,
  type Exchange,
} from './exchange.js';
import { obfuscation, unixSeconds } from './ids.js';
import { echoText, failureError, resolveReply, type PlannedTurn, type ReplySource } from './replies.js';
import { contentText, countTokens, isObject, PER_MESSAGE_TOKENS, splitArguments, splitIntoDeltas } from './tokens.js';
import type { JsonObject, ScriptedFailure } from './types.js';

const SYSTEM_FINGERPRINT = 'fp_ctx_test';

/** `POST /chat/completions`: validates like the service, then answers with the scripted turn. */
export async function handleChatCompletions(
  ex: Exchange,
  body: JsonObject,
  source: ReplySource,
  deployment: string | undefined,
): Promise<void> {
  const model = typeof body.model === 'string' ? body.model : deployment;
  if (model === undefined) {
    sendError(ex, 400, { message: 'you must provide a model parameter' });
    return;
  }
  const messages = body.messages;
  if (!Array.isArray(messages)) {
    sendError(ex, 400, {
      message: "Missing required parameter: 'messages'.",
      param: 'messages',
      code: 'missing_required_parameter',
    });
    return;
  }
  if (messages.length === 0) {
    sendError(ex, 400, {
      message: "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      param: 'messages',
      code: 'empty_array',
    });
    return;
  }
  const pairingError = checkToolMessagePairing(messages);
  if (pairingError !== undefined) {
    sendError(ex, 400, pairingError);
    return;
  }

  const format = isObject(body.response_format) ? body.response_format.type : undefined;
  const jsonMode = format === 'json_object' || format === 'json_schema';
  const resolved = await resolveReply(source, ex, echoText(lastUserText(messages), jsonMode));
  const stream = body.stream === true;
  switch (resolved.kind) {
    case 'gone':
      return;
    case 'error': {
      const { status, ...fields } = resolved.reply.error;
      sendError(ex, status, fields, resolved.reply.headers);
      return;
    }
    case 'failure':
      if (stream) streamFailure(ex, model, resolved.failure);
      else sendFailureStatus(ex, resolved.failure);
      return;
    case 'replay':
      sendReplay(ex, resolved.replay, 'chat');
      return;
    case 'malformed':
      if (stream) sendMalformedStream(ex, model, resolved.mode);
      else sendMalformedJson(ex, resolved.mode);
      return;
    case 'turn': {
      const promptTokens = resolved.turn.inputTokensOverride ?? countPromptTokens(messages, body.tools);
      if (stream) {
        const streamOptions = isObject(body.stream_options) ? body.stream_options : {};
        await streamCompletion(ex, model, resolved.turn, promptTokens, {
          includeUsage: streamOptions.include_usage === true,
          obfuscate: streamOptions.include_obfuscation !== false,
          azure: ex.recorded.path.startsWith('/openai/'),
        });
      } else {
        sendJson(ex, 200, completionObject(ex.serviceId('chatcmpl'), model, resolved.turn, promptTokens));
      }
    }
  }
}

/** The text of the last `user` message, or `''`. */
function lastUserText(messages: unknown[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (isObject(message) && message.role === 'user') return contentText(message.content);
  }
  return '';
}

/** Four tokens per message plus its text (content, tool call names and arguments), plus the tool definitions. */
function countPromptTokens(messages: unknown[], tools: unknown): number {
  let total = 0;
  for (const message of messages) {
    if (!isObject(message)) continue;
    let text = contentText(message.content);
    if (Array.isArray(message.tool_calls)) {
      for (const call of message.tool_calls) {
        if (isObject(call) && isObject(call.function)) text += String(call.function.name ?? '') + String(call.function.arguments ?? '');
      }
    }
    total += PER_MESSAGE_TOKENS + countTokens(text);
  }
  if (Array.isArray(tools) && tools.length > 0) total += countTokens(JSON.stringify(tools));
  return total;
}

/**
 * The service's rule: an assistant message with `tool_calls` must be followed directly by one
 * `tool` message per call id, and a `tool` message must answer such a call.
 */
function checkToolMessagePairing(messages: unknown[]): { message: string; param: string } | undefined {
  let pending: Set<string> | undefined;
  let pendingIndex = 0;
  for (let i = 0; i <= messages.length; i++) {
    const message = messages[i];
    const role = isObject(message) ? message.role : undefined;
    if (role === 'tool' && isObject(message)) {
      const id = typeof message.tool_call_id === 'string' ? message.tool_call_id : '';
      if (pending === undefined || !pending.has(id)) {
        return {
          message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          param: `messages.[${i}].role`,
        };
      }
      pending.delete(id);
      continue;
    }
    if (pending !== undefined && pending.size > 0) {
      return {
        message: `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...pending].join(', ')}`,
        param: `messages.[${pendingIndex}].role`,
      };
    }
    pending = undefined;
    if (isObject(message) && role === 'assistant' && Array.isArray(message.tool_calls) && message.tool_calls.length > 0) {
      pending = new Set(message.tool_calls.map((call) => (isObject(call) && typeof call.id === 'string' ? call.id : '')));
      pendingIndex = i;
    }
  }
  return undefined;
}

function usageObject(turn: PlannedTurn, promptTokens: number): JsonObject {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: turn.outputTokens,
    total_tokens: promptTokens + turn.outputTokens,
    prompt_tokens_details: { cached_tokens: turn.cachedTokens, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: turn.reasoningTokens,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

function completionObject(id: string, model: string, turn: PlannedTurn, promptTokens: number): JsonObject {
  const message: JsonObject = {
    role: 'assistant',
    content: turn.text,
    refusal: turn.refusal,
    annotations: chatAnnotations(turn),
  };
  if (turn.toolCalls.length > 0) {
    message.tool_calls = turn.toolCalls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.arguments },
    }));
  }
  return {
    id,
    object: 'chat.completion',
    created: unixSeconds(),
    model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: turn.finishReason }],
    usage: usageObject(turn, promptTokens),
    service_tier: 'default',
    system_fingerprint: SYSTEM_FINGERPRINT,
  };
}

/** The turn's `url_citation`s in the Chat Completions form (the only kind that API has). */
function chatAnnotations(turn: PlannedTurn): JsonObject[] {
  return turn.annotations.flatMap((a) => {
    if (a.type !== 'url_citation') return [];
    const { type, ...citation } = a;
    return [{ type, url_citation: citation }];
  });
}

/** What a Chat Completions stream looks like besides its content. */
interface StreamShape {
  /** `stream_options.include_usage`: `usage: null` on every chunk, then a usage chunk. */
  includeUsage: boolean;
  /** `obfuscation` padding on every chunk (the service's default; `stream_options.include_obfuscation: false` turns it off). */
  obfuscate: boolean;
  /** Azure OpenAI: a first chunk with `id: ""`, `choices: []` and `prompt_filter_results`. */
  azure: boolean;
}

/** Azure's first chunk: the prompt's content filter results, before any choice. */
const AZURE_PROMPT_FILTER_CHUNK = JSON.stringify({
  choices: [],
  created: 0,
  id: '',
  model: '',
  object: '',
  prompt_filter_results: [
    {
      prompt_index: 0,
      content_filter_results: {
        hate: { filtered: false, severity: 'safe' },
        jailbreak: { filtered: false, detected: false },
        self_harm: { filtered: false, severity: 'safe' },
        sexual: { filtered: false, severity: 'safe' },
        violence: { filtered: false, severity: 'safe' },
      },
    },
  ],
});

function chunkFactory(id: string, model: string, shape: Partial<StreamShape>): (delta: JsonObject, finishReason?: string) => string {
  const base = {
    id,
    object: 'chat.completion.chunk',
    created: unixSeconds(),
    model,
    service_tier: 'default',
    system_fingerprint: SYSTEM_FINGERPRINT,
  };
  return (delta, finishReason) =>
    JSON.stringify({
      ...base,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason ?? null }],
      ...(shape.includeUsage ? { usage: null } : {}),
      ...(shape.obfuscate ? { obfuscation: obfuscation() } : {}),
    });
}

async function streamCompletion(ex: Exchange, model: string, turn: PlannedTurn, promptTokens: number, shape: StreamShape): Promise<void> {
  const chunk = chunkFactory(ex.serviceId('chatcmpl'), model, shape);
  const events: string[] = shape.azure ? [AZURE_PROMPT_FILTER_CHUNK] : [];
  // As the service starts them: a refusal stream with `content: null, refusal: ''`.
  events.push(chunk({ role: 'assistant', content: turn.text === null ? null : '', refusal: turn.refusal === null ? null : '' }));
  for (const piece of splitIntoDeltas(turn.text ?? '')) events.push(chunk({ content: piece }));
  const annotations = chatAnnotations(turn);
  if (annotations.length) events.push(chunk({ annotations }));
  for (const piece of splitIntoDeltas(turn.refusal ?? '')) events.push(chunk({ refusal: piece }));
  turn.toolCalls.forEach((call, index) => {
    events.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }));
    for (const piece of splitArguments(call.arguments)) {
      events.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  events.push(chunk({}, turn.finishReason));
  if (shape.includeUsage) {
    const base = JSON.parse(chunk({})) as JsonObject;
    events.push(JSON.stringify({ ...base, choices: [], usage: usageObject(turn, promptTokens) }));
  }
  events.push('[DONE]');

  startEventStream(ex);
  for (const data of events) {
    if (turn.streamDelayMs > 0 && !(await sleep(turn.streamDelayMs, ex.signal))) return;
    if (isGone(ex)) return;
    writeEvent(ex, data);
  }
  ex.res.end();
}

function sendMalformedStream(ex: Exchange, model: string, mode: 'truncated' | 'garbage'): void {
  const chunk = chunkFactory(ex.serviceId('chatcmpl'), model, {});
  startEventStream(ex);
  writeEvent(ex, chunk({ role: 'assistant', content: '', refusal: null }));
  writeEvent(ex, chunk({ content: 'This reply is' }));
  if (mode === 'truncated') {
    dropConnection(ex);
    return;
  }
  writeEvent(ex, '{"id": "chatcmpl-broken", "choices": [{"delta": {"content": "oops"');
  writeEvent(ex, '[DONE]');
  ex.res.end();
}

/** A stream that fails after it started: the role chunk, any partial text, then the service's `{"error": {...}}` frame. */
function streamFailure(ex: Exchange, model: string, failure: ScriptedFailure['failure']): void {
  const chunk = chunkFactory(ex.serviceId('chatcmpl'), model, {});
  startEventStream(ex);
  writeEvent(ex, chunk({ role: 'assistant', content: '', refusal: null }));
  for (const piece of splitIntoDeltas(failure.textBefore ?? '')) writeEvent(ex, chunk({ content: piece }));
  writeEvent(ex, JSON.stringify({ error: failureError(failure) }));
  if (!isGone(ex)) ex.res.end();
}

/** A non-streamed call has no failed-200 form: the HTTP error the service sends for the failure's code. */
function sendFailureStatus(ex: Exchange, failure: ScriptedFailure['failure']): void {
  const error = failureError(failure);
  const status =
    failure.code === 'rate_limit_exceeded' || failure.code === 'insufficient_quota' ? 429 : error.type === 'server_error' ? 500 : 400;
  sendJson(ex, status, { error });
}
