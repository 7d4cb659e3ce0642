import type { AgentEvent, EventHandler, JsonValue, Usage } from '@ctx/core';
import { type Attributes, type Context, context, type Span, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api';
import { errorMessage, errorType, genAiFinishReason, genAiMessages, genAiProviderName } from './gen-ai.js';

/** Options of `createOtelEventHandler`. */
export interface OtelEventHandlerOptions {
  /**
   * Makes the spans. Default: the tracer `@ctx/otel` of the global tracer provider (the one your
   * OpenTelemetry setup registers, also when it registers it after this call).
   */
  tracer?: Tracer;
  /**
   * Record message content, as the GenAI conventions' opt-in attributes: `gen_ai.input.messages`,
   * `gen_ai.output.messages` and `gen_ai.system_instructions` on chat spans,
   * `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result` on tool spans. It is likely to hold
   * personal data. Default `false`: spans carry ids, names, counts, tokens and timings only.
   */
  recordContent?: boolean;
}

/** What is open of one run. */
interface RunSpans {
  span: Span;
  /** The run span's context: the explicit parent of every span of the run. */
  context: Context;
  /** Attributes every chat span of the run starts with. */
  chat: Attributes;
  modelId: string;
  /** The open chat span (a run calls the model once at a time). */
  call: Span | undefined;
  /** Open tool spans by call id (a run may run several at once). */
  tools: Map<string, Span>;
}

const TRACER_NAME = '@ctx/otel';

/**
 * An `onEvent` handler for `createAgent` that turns each run's events into OpenTelemetry spans
 * following the GenAI semantic conventions: `invoke_agent {agent}` per run, `chat {model}` per model
 * call and `execute_tool {tool}` per tool call as its children, and `{phase} {sourceId}` per context
 * provider hook with the counts it added. The run span's parent is the context active when the run
 * starts; every other span gets its parent explicitly, so no context manager is needed. A run that
 * fails or is aborted ends all its spans with the error. Never throws.
 */
export function createOtelEventHandler(options: OtelEventHandlerOptions = {}): EventHandler {
  const tracer = options.tracer ?? trace.getTracer(TRACER_NAME);
  const recordContent = options.recordContent === true;
  const runs = new Map<string, RunSpans>();

  const handle = (event: AgentEvent): void => {
    if (event.type === 'run-start') {
      const parent = context.active();
      const provider = genAiProviderName(event.provider);
      const common: Attributes = {
        'gen_ai.provider.name': provider,
        'gen_ai.request.model': event.modelId,
        'gen_ai.conversation.id': event.sessionId,
      };
      const span = tracer.startSpan(
        `invoke_agent ${event.agentName}`,
        {
          kind: SpanKind.INTERNAL,
          attributes: {
            'gen_ai.operation.name': 'invoke_agent',
            ...common,
            'gen_ai.agent.name': event.agentName,
            'ctx.run.id': event.runId,
            'ctx.run.providers': event.providers,
          },
        },
        parent,
      );
      runs.set(event.runId, {
        span,
        context: trace.setSpan(parent, span),
        chat: { 'gen_ai.operation.name': 'chat', ...common },
        modelId: event.modelId,
        call: undefined,
        tools: new Map(),
      });
      return;
    }
    if (!('runId' in event) || event.runId === undefined) return;
    const run = runs.get(event.runId);
    if (!run) return; // a provider's late report, after its run ended
    switch (event.type) {
      case 'run-end': {
        runs.delete(event.runId);
        const error = 'error' in event ? event.error : undefined;
        if (run.call) fail(run.call, error);
        for (const span of run.tools.values()) fail(span, error);
        if (event.usage) run.span.setAttributes(usageAttributes(event.usage));
        if (error !== undefined) fail(run.span, error);
        else run.span.end();
        return;
      }
      case 'model-call': {
        if (run.call) run.call.end(); // never two open chat spans in one run
        const attributes: Attributes = {
          ...run.chat,
          'ctx.roundtrip': event.roundtrip,
          'ctx.request.messages': event.messages,
          'ctx.request.instructions': event.instructions,
          'ctx.request.tools': event.tools,
        };
        if (recordContent && event.content) {
          attributes['gen_ai.input.messages'] = genAiMessages(event.content.messages);
          if (event.content.instructions !== undefined)
            attributes['gen_ai.system_instructions'] = JSON.stringify([{ type: 'text', content: event.content.instructions }]);
        }
        run.call = tracer.startSpan(`chat ${run.modelId}`, { kind: SpanKind.CLIENT, attributes }, run.context);
        return;
      }
      case 'model-response': {
        const span = run.call;
        if (!span) return;
        run.call = undefined;
        if (event.usage) span.setAttributes(usageAttributes(event.usage));
        if (event.finishReason) span.setAttribute('gen_ai.response.finish_reasons', [genAiFinishReason(event.finishReason)]);
        if (recordContent && event.content)
          span.setAttribute('gen_ai.output.messages', genAiMessages(event.content.messages, event.finishReason));
        span.end();
        return;
      }
      case 'tool-start': {
        const attributes: Attributes = {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': event.toolName,
          'gen_ai.tool.call.id': event.callId,
          'gen_ai.tool.type': 'function',
        };
        if (recordContent && event.content) attributes['gen_ai.tool.call.arguments'] = event.content.arguments;
        run.tools.set(
          event.callId,
          tracer.startSpan(`execute_tool ${event.toolName}`, { kind: SpanKind.INTERNAL, attributes }, run.context),
        );
        return;
      }
      case 'tool-end': {
        const span = run.tools.get(event.callId);
        if (!span) return;
        run.tools.delete(event.callId);
        if (recordContent && event.content) span.setAttribute('gen_ai.tool.call.result', jsonText(event.content.result));
        if (event.error !== undefined) fail(span, event.error);
        else span.end();
        return;
      }
      case 'provider-end': {
        const { added } = event;
        const end = now();
        const span = tracer.startSpan(
          `${event.phase} ${event.sourceId}`,
          {
            kind: SpanKind.INTERNAL,
            startTime: end - event.durationMs,
            attributes: {
              'ctx.provider.source_id': event.sourceId,
              'ctx.provider.phase': event.phase,
              'ctx.provider.added.messages': added.messages,
              'ctx.provider.added.instructions': added.instructions,
              'ctx.provider.added.tools': added.tools,
            },
          },
          run.context,
        );
        span.end(end);
        return;
      }
      case 'provider-skipped': {
        const span = tracer.startSpan(
          `${event.phase} ${event.sourceId}`,
          {
            kind: SpanKind.INTERNAL,
            attributes: { 'ctx.provider.source_id': event.sourceId, 'ctx.provider.phase': event.phase, 'ctx.provider.skipped': true },
          },
          run.context,
        );
        fail(span, event.error);
        return;
      }
      case 'provider-diagnostic': {
        run.span.addEvent('ctx.provider.diagnostic', {
          'ctx.provider.source_id': event.sourceId,
          'ctx.code': event.code,
          'ctx.message': event.message,
        });
        if (event.code === 'context-audit') recordAudit(run.span, event.data);
        return;
      }
      case 'warning': {
        run.span.addEvent('ctx.warning', { 'ctx.code': event.code, 'ctx.message': event.message });
        return;
      }
    }
  };

  const handler = (event: AgentEvent) => {
    try {
      handle(event);
    } catch {
      // Tracing must never break a run; the agent would only log this and go on.
    }
  };
  return Object.assign(handler, { includeContent: recordContent });
}

/** Ends `span` as failed by `error` (or as ended, when there is no error). */
function fail(span: Span, error: unknown): void {
  if (error !== undefined) {
    span.setAttribute('error.type', errorType(error));
    span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(error) });
  }
  span.end();
}

function usageAttributes(usage: Usage): Attributes {
  const attributes: Attributes = {};
  if (usage.inputTokens !== undefined) attributes['gen_ai.usage.input_tokens'] = usage.inputTokens;
  if (usage.outputTokens !== undefined) attributes['gen_ai.usage.output_tokens'] = usage.outputTokens;
  if (usage.cachedInputTokens !== undefined) attributes['gen_ai.usage.cache_read.input_tokens'] = usage.cachedInputTokens;
  if (usage.reasoningTokens !== undefined) attributes['gen_ai.usage.reasoning.output_tokens'] = usage.reasoningTokens;
  return attributes;
}

/**
 * The `context-audit` report of core's audit provider as one `ctx.context.source` event per source
 * (what it put into the model call: counts and tokens) and the total on the run span.
 */
function recordAudit(span: Span, data: unknown): void {
  const audit = data as { totalTokens?: unknown; sources?: unknown } | undefined;
  if (typeof audit?.totalTokens === 'number') span.setAttribute('ctx.context.tokens', audit.totalTokens);
  if (!Array.isArray(audit?.sources)) return;
  for (const s of audit.sources as Array<Record<string, unknown>>) {
    span.addEvent('ctx.context.source', {
      'ctx.provider.source_id': String(s.sourceId),
      'ctx.context.messages': Number(s.messages),
      'ctx.context.instructions': Number(s.instructions),
      'ctx.context.tools': Number(s.tools),
      'ctx.context.tokens': Number(s.tokens),
    });
  }
}

function jsonText(value: JsonValue): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Milliseconds since the epoch, on the clock the OpenTelemetry SDK starts spans by. */
function now(): number {
  return Date.now();
}
