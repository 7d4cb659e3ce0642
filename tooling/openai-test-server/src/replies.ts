import { sleep, type Exchange } from './exchange.js';
import { newId } from './ids.js';
import { countTokens } from './tokens.js';
import type {
  JsonObject,
  RecordedRequest,
  ScriptedCompletion,
  ScriptedError,
  ScriptedFailure,
  ScriptedOutputItem,
  ScriptedReplay,
  ScriptedReply,
  ScriptedToolCall,
} from './types.js';

/** Where scripted replies come from: the queue first, then the responder. */
export interface ReplySource {
  take(request: RecordedRequest): ScriptedReply | undefined;
}

/** A model turn with every default filled in. */
export interface PlannedTurn {
  text: string | null;
  refusal: string | null;
  toolCalls: { id: string; name: string; arguments: string }[];
  reasoning: string | null;
  /** Citations on `text`, in the Responses form. */
  annotations: JsonObject[];
  /** The Responses output items, in order (from `output`, else from the fields above). */
  output: (
    | Exclude<ScriptedOutputItem, { type: 'function_call' }>
    | { type: 'function_call'; id: string; name: string; arguments: string }
  )[];
  finishReason: 'stop' | 'length' | 'tool_calls' | 'content_filter';
  /** Output tokens (including reasoning tokens) and the reasoning share of them. */
  outputTokens: number;
  reasoningTokens: number;
  /** Input tokens when the script overrides the count. */
  inputTokensOverride: number | undefined;
  /** Input tokens read from the prompt cache. */
  cachedTokens: number;
  streamDelayMs: number;
}

/** The reply to send after delays were waited out. */
export type ResolvedReply =
  | { kind: 'turn'; turn: PlannedTurn }
  | { kind: 'error'; reply: ScriptedError }
  | { kind: 'failure'; failure: ScriptedFailure['failure'] }
  | { kind: 'replay'; replay: ScriptedReplay['replay'] }
  | { kind: 'malformed'; mode: 'truncated' | 'garbage' }
  | { kind: 'gone' };

/**
 * Takes the next scripted reply for this request (consumed once, so every retry takes a new one),
 * waits out `{ delayMs, reply }` wrappers, and fills in the defaults. `echo` is the default text.
 */
export async function resolveReply(source: ReplySource, ex: Exchange, echo: string): Promise<ResolvedReply> {
  let reply = source.take(ex.recorded);
  while (reply !== undefined && 'delayMs' in reply) {
    const completed = await sleep(reply.delayMs, ex.signal);
    if (!completed) return { kind: 'gone' };
    reply = reply.reply;
  }
  if (ex.signal.aborted) return { kind: 'gone' };
  if (reply !== undefined && 'error' in reply) return { kind: 'error', reply };
  if (reply !== undefined && 'failure' in reply) return { kind: 'failure', failure: reply.failure };
  if (reply !== undefined && 'replay' in reply) return { kind: 'replay', replay: reply.replay };
  if (reply !== undefined && 'malformedStream' in reply) return { kind: 'malformed', mode: reply.malformedStream };
  return { kind: 'turn', turn: planTurn(reply, echo) };
}

const plannedCall = (call: ScriptedToolCall) => ({
  id: call.id ?? newId('call'),
  name: call.name,
  arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
});

/** Joins the non-null strings, or `null` when there are none. */
const joined = (parts: (string | undefined)[]) => (parts.some((p) => p !== undefined) ? parts.join('') : null);

function planTurn(reply: ScriptedCompletion | undefined, echo: string): PlannedTurn {
  const script = reply ?? {};
  let output: PlannedTurn['output'];
  let text: string | null;
  let refusal: string | null;
  let reasoning: string | null;
  let toolCalls: PlannedTurn['toolCalls'];
  if (script.output) {
    output = script.output.map((item) => (item.type === 'function_call' ? { type: 'function_call', ...plannedCall(item) } : item));
    const messages = output.filter((item) => item.type === 'message');
    text = joined(messages.map((m) => m.text));
    refusal = joined(messages.map((m) => m.refusal));
    reasoning = joined(output.map((item) => (item.type === 'reasoning' ? item.summary : undefined)));
    toolCalls = output.flatMap((item) => (item.type === 'function_call' ? [item] : []));
  } else {
    toolCalls = (script.toolCalls ?? []).map(plannedCall);
    refusal = script.refusal ?? null;
    text = script.text ?? (toolCalls.length === 0 && refusal === null ? echo : null);
    reasoning = script.reasoning ?? null;
    output = [
      ...(reasoning === null ? [] : [{ type: 'reasoning' as const, summary: reasoning }]),
      ...(text === null && refusal === null
        ? []
        : [
            {
              type: 'message' as const,
              ...(text === null ? {} : { text, annotations: script.annotations ?? [] }),
              ...(refusal === null ? {} : { refusal }),
            },
          ]),
      ...toolCalls.map((call) => ({ type: 'function_call' as const, ...call })),
    ];
  }
  const reasoningTokens = reasoning === null ? 0 : countTokens(reasoning);
  const visible = (text ?? '') + (refusal ?? '') + toolCalls.map((call) => call.name + call.arguments).join('');
  const counted = Math.max(1, countTokens(visible) + reasoningTokens);
  return {
    text,
    refusal,
    toolCalls,
    reasoning,
    annotations: script.annotations ?? [],
    output,
    finishReason: script.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
    outputTokens: script.usage?.output ?? counted,
    reasoningTokens: script.usage === undefined ? reasoningTokens : Math.min(reasoningTokens, script.usage.output),
    inputTokensOverride: script.usage?.input,
    cachedTokens: script.usage?.cached ?? 0,
    streamDelayMs: script.streamDelayMs ?? 0,
  };
}

/** The default reply text: `"You said: <last user text>"`, wrapped as JSON in JSON output modes. */
export function echoText(lastUserText: string, jsonMode: boolean): string {
  const text = `You said: ${lastUserText}`;
  return jsonMode ? JSON.stringify({ reply: text }) : text;
}

/** The error object's `type` for a scripted failure without one (see `ScriptedFailure`). */
export function failureType(failure: ScriptedFailure['failure']): string {
  if (failure.type !== undefined) return failure.type;
  if (failure.code === 'insufficient_quota') return 'insufficient_quota';
  if (failure.code === 'rate_limit_exceeded') return 'requests';
  if (failure.code === null || failure.code === 'server_error') return 'server_error';
  return 'invalid_request_error';
}

/** The error object a scripted failure carries: `{ message, type, param, code }`. */
export function failureError(failure: ScriptedFailure['failure']): JsonObject {
  return { type: failureType(failure), code: failure.code, message: failure.message, param: failure.param ?? null };
}
