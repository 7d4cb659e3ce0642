// Shared by the tests: AI SDK mock models (the AI SDK's own `MockLanguageModelV2` from `ai` 5,
// `MockLanguageModelV3` from `ai` 6 and `MockLanguageModelV4` from `ai` 7) that play a script, in
// any specification version.
import type {
  LanguageModelV2,
  LanguageModelV2StreamPart,
  LanguageModelV3,
  LanguageModelV3StreamPart,
  LanguageModelV4,
} from '@ai-sdk/provider';
import { MockLanguageModelV3 } from 'ai/test';
import { MockLanguageModelV2 } from 'ai-v5/test';
import { MockLanguageModelV4 } from 'ai-v7/test';
import type { CallOptions, ProviderMetadata } from './language-model.js';

/** One scripted answer. */
export interface ScriptedTurn {
  text?: string;
  reasoning?: { text: string; metadata?: ProviderMetadata };
  toolCalls?: { id: string; name: string; input: object }[];
  finish?: 'stop' | 'length' | 'tool-calls' | 'content-filter' | 'other';
  usage?: { input: number; output: number; cached?: number; reasoning?: number };
  /** Throw this from the call instead of answering. */
  error?: unknown;
  /** In a stream: send an `error` part after the text instead of finishing. */
  streamError?: unknown;
  /** In a stream: end without the `finish` part. */
  truncate?: boolean;
}

export type Version = 'v2' | 'v3' | 'v4';
export const VERSIONS: Version[] = ['v2', 'v3', 'v4'];

/** A scripted model of `version` and the options of every call it got, in order. */
export interface ScriptedModel {
  model: LanguageModelV2 | LanguageModelV3 | LanguageModelV4;
  calls: CallOptions[];
  /** Adds answers to the script. */
  push(...turns: ScriptedTurn[]): void;
}

export function scriptedModel(
  version: Version,
  turns: ScriptedTurn[] = [],
  options: {
    streamDelayMs?: number;
    responseId?: string;
    /** Answers each call from its options (the script is then left unused). */
    respond?: (call: CallOptions) => ScriptedTurn;
    /** Waits this long before each answer of `doGenerate` (and before each stream starts). */
    delayMs?: number;
  } = {},
): ScriptedModel {
  const queue = [...turns];
  const calls: CallOptions[] = [];
  const next = (call: CallOptions) => {
    calls.push(call);
    const turn = options.respond?.(call) ?? queue.shift() ?? { text: 'No script left.' };
    if (turn.error !== undefined) throw turn.error;
    return turn;
  };
  const usage = (turn: ScriptedTurn) => {
    const u = turn.usage ?? { input: 10, output: 5 };
    return version !== 'v2'
      ? {
          inputTokens: { total: u.input, noCache: u.input - (u.cached ?? 0), cacheRead: u.cached, cacheWrite: undefined },
          outputTokens: { total: u.output, text: u.output - (u.reasoning ?? 0), reasoning: u.reasoning },
        }
      : {
          inputTokens: u.input,
          outputTokens: u.output,
          totalTokens: u.input + u.output,
          cachedInputTokens: u.cached,
          reasoningTokens: u.reasoning,
        };
  };
  const finish = (turn: ScriptedTurn) => {
    const reason = turn.finish ?? (turn.toolCalls?.length ? 'tool-calls' : 'stop');
    return version !== 'v2' ? { unified: reason, raw: reason } : reason;
  };
  const content = (turn: ScriptedTurn) => [
    ...(turn.reasoning
      ? [
          {
            type: 'reasoning' as const,
            text: turn.reasoning.text,
            ...(turn.reasoning.metadata ? { providerMetadata: turn.reasoning.metadata } : {}),
          },
        ]
      : []),
    ...(turn.text !== undefined ? [{ type: 'text' as const, text: turn.text }] : []),
    ...(turn.toolCalls ?? []).map((c) => ({
      type: 'tool-call' as const,
      toolCallId: c.id,
      toolName: c.name,
      input: JSON.stringify(c.input),
    })),
  ];
  const parts = (turn: ScriptedTurn): (LanguageModelV2StreamPart | LanguageModelV3StreamPart)[] => {
    const out: (LanguageModelV2StreamPart | LanguageModelV3StreamPart)[] = [
      { type: 'stream-start', warnings: [] },
      { type: 'response-metadata', id: options.responseId ?? `resp-${calls.length}`, modelId: 'mock-model', timestamp: new Date(0) },
    ];
    if (turn.reasoning) {
      out.push({ type: 'reasoning-start', id: 'r1' }, { type: 'reasoning-delta', id: 'r1', delta: turn.reasoning.text });
      out.push({
        type: 'reasoning-end',
        id: 'r1',
        ...(turn.reasoning.metadata ? { providerMetadata: turn.reasoning.metadata } : {}),
      } as never);
    }
    if (turn.text !== undefined) {
      out.push({ type: 'text-start', id: 't1' });
      for (const word of turn.text.split(/(?<= )/)) out.push({ type: 'text-delta', id: 't1', delta: word });
      out.push({ type: 'text-end', id: 't1' });
    }
    for (const c of turn.toolCalls ?? []) {
      const input = JSON.stringify(c.input);
      out.push(
        { type: 'tool-input-start', id: c.id, toolName: c.name },
        { type: 'tool-input-delta', id: c.id, delta: input },
        { type: 'tool-input-end', id: c.id },
        { type: 'tool-call', toolCallId: c.id, toolName: c.name, input },
      );
    }
    if (turn.streamError !== undefined) out.push({ type: 'error', error: turn.streamError });
    else if (!turn.truncate) out.push({ type: 'finish', usage: usage(turn), finishReason: finish(turn) } as never);
    return out;
  };
  const stream = (list: unknown[], signal: AbortSignal | undefined) => {
    let i = 0;
    return new ReadableStream({
      async pull(controller) {
        if (options.streamDelayMs) {
          await new Promise((resolve) => setTimeout(resolve, options.streamDelayMs));
          if (signal?.aborted) return controller.error(signal.reason);
        }
        if (i < list.length) controller.enqueue(list[i++]);
        else controller.close();
      },
    });
  };
  const settings = {
    provider: 'mock-provider',
    modelId: 'mock-model',
    doGenerate: async (call: CallOptions) => {
      if (options.delayMs) await new Promise((resolve) => setTimeout(resolve, options.delayMs));
      const turn = next(call);
      return {
        content: content(turn),
        finishReason: finish(turn),
        usage: usage(turn),
        warnings: [],
        response: { id: options.responseId ?? `resp-${calls.length}`, modelId: 'mock-model', timestamp: new Date(0) },
      };
    },
    doStream: async (call: CallOptions) => {
      if (options.delayMs) await new Promise((resolve) => setTimeout(resolve, options.delayMs));
      const turn = next(call);
      return { stream: stream(parts(turn), call.abortSignal) };
    },
  };
  const model =
    version === 'v4'
      ? new MockLanguageModelV4(settings as never)
      : version === 'v3'
        ? new MockLanguageModelV3(settings as never)
        : new MockLanguageModelV2(settings as never);
  return { model, calls, push: (...more) => queue.push(...more) };
}

/** The prompt of a call as role and text lines, for readable assertions. */
export function promptLines(call: CallOptions | undefined): string[] {
  return (call?.prompt ?? []).map((m) => {
    if (typeof m.content === 'string') return `${m.role}: ${m.content}`;
    const parts = (m.content as { type: string; text?: string; toolName?: string; output?: { value?: unknown } }[]).map((p) =>
      p.type === 'text' || p.type === 'reasoning'
        ? (p.text ?? '')
        : p.type === 'tool-call'
          ? `call ${p.toolName}`
          : p.type === 'tool-result'
            ? `result ${p.toolName} ${JSON.stringify(p.output?.value)}`
            : p.type,
    );
    return `${m.role}: ${parts.join(' | ')}`;
  });
}

/**
 * A model of `version` whose stream counts on for ever (`text-start`, then the deltas "2 ", "3 ",
 * ...), one part per pull; `stats` counts the streams it opened, the parts pulled and the cancels.
 */
export function endlessModel(version: Version) {
  const stats = { streams: 0, pulled: 0, cancelled: 0 };
  const model = {
    specificationVersion: version,
    provider: 'test',
    modelId: 'endless',
    supportedUrls: {},
    doGenerate: () => Promise.reject(new Error('not used')),
    doStream: async () => {
      stats.streams++;
      let i = 0;
      const stream = new ReadableStream({
        pull(controller) {
          stats.pulled++;
          controller.enqueue(i++ === 0 ? { type: 'text-start', id: 't' } : { type: 'text-delta', id: 't', delta: `${i} ` });
        },
        cancel() {
          stats.cancelled++;
        },
      });
      return { stream };
    },
  };
  return { model: model as never, stats };
}
