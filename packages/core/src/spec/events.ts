import type { FinishReason, Usage } from './chat-client.js';
import type { JsonObject, JsonValue } from './json.js';
import type { Message } from './message.js';
import type { Contribution } from './run-view.js';

/**
 * A diagnostic event. Events carry ids, counts and timings, never message text or secrets, unless
 * the handler asks for content (`EventHandler.includeContent`): then the model and tool events carry
 * it in `content`.
 */
export type AgentEvent =
  | { type: 'run-start'; runId: string; sessionId: string; agentName: string; providers: string[]; provider: string; modelId: string }
  | { type: 'run-end'; runId: string; sessionId: string; durationMs: number; error?: unknown; usage?: Usage }
  | { type: 'provider-end'; runId: string; sourceId: string; phase: ProviderPhase; durationMs: number; added: Contribution }
  | { type: 'provider-skipped'; runId: string; sourceId: string; phase: ProviderPhase; error: unknown }
  | {
      type: 'model-call';
      runId: string;
      roundtrip: number;
      /** Messages sent, per-run instructions (sent as a system message before the input) included. */
      messages: number;
      /** Instructions sent as the request's instructions (those of stable sources). */
      instructions: number;
      tools: number;
      content?: { messages: readonly Message[]; instructions?: string };
    }
  | {
      type: 'model-response';
      runId: string;
      roundtrip: number;
      durationMs: number;
      usage?: Usage;
      finishReason?: FinishReason;
      functionCalls: number;
      content?: { messages: readonly Message[] };
    }
  | { type: 'tool-start'; runId: string; toolName: string; callId: string; content?: { arguments: string } }
  | {
      type: 'tool-end';
      runId: string;
      toolName: string;
      callId: string;
      durationMs: number;
      error?: unknown;
      content?: { result: JsonValue };
    }
  | { type: 'warning'; runId?: string; sourceId?: string; code: WarningCode; message: string }
  | { type: 'provider-diagnostic'; runId: string; sourceId: string; code: string; message: string; data?: JsonObject; error?: unknown };

/** The hook of a provider an event refers to. */
export type ProviderPhase = 'beforeRun' | 'afterRun' | 'wrap';

/** Machine-readable warning kinds. */
export type WarningCode =
  | 'multiple-history-loaders'
  | 'tool-roundtrip-limit'
  | 'event-handler-failed'
  | 'corrupt-state'
  /** The agent's compaction strategy failed or declined (e.g. a blank summary); the uncompacted list was sent. */
  | 'compaction-failed'
  /** Function calls of an earlier, interrupted run had no result; each was answered with an error result saying so. */
  | 'interrupted-calls';

/** Receives diagnostic events; an OpenTelemetry bridge can sit here. Must not throw. */
export interface EventHandler {
  (event: AgentEvent): void;
  /**
   * Set to `true` to receive message content: the messages and instructions sent (`model-call`),
   * the messages received (`model-response`), a tool's arguments (`tool-start`) and result
   * (`tool-end`), in each event's `content`. Default: no content, so a handler that logs events logs
   * no message text.
   */
  readonly includeContent?: boolean;
}
