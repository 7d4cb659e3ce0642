import type { Usage } from './chat-client.js';
import type { JsonObject } from './json.js';
import type { Contribution } from './run-view.js';

/** A diagnostic event. Events carry ids, counts and timings, never message text or secrets. */
export type AgentEvent =
  | { type: 'run-start'; runId: string; sessionId: string; agentName: string; providers: string[] }
  | { type: 'run-end'; runId: string; sessionId: string; durationMs: number; error?: unknown; usage?: Usage }
  | { type: 'provider-end'; runId: string; sourceId: string; phase: ProviderPhase; durationMs: number; added: Contribution }
  | { type: 'provider-skipped'; runId: string; sourceId: string; phase: ProviderPhase; error: unknown }
  | { type: 'model-call'; runId: string; roundtrip: number; messages: number; instructions: number; tools: number }
  | { type: 'model-response'; runId: string; roundtrip: number; durationMs: number; usage?: Usage; functionCalls: number }
  | { type: 'tool-end'; runId: string; toolName: string; callId: string; durationMs: number; error?: unknown }
  | { type: 'warning'; runId?: string; sourceId?: string; code: WarningCode; message: string }
  | { type: 'provider-diagnostic'; runId: string; sourceId: string; code: string; message: string; data?: JsonObject; error?: unknown };

/** The hook of a provider an event refers to. */
export type ProviderPhase = 'beforeRun' | 'afterRun' | 'wrap';

/** Machine-readable warning kinds. */
export type WarningCode = 'multiple-history-loaders' | 'tool-roundtrip-limit' | 'event-handler-failed' | 'corrupt-state';

/** Receives diagnostic events; an OpenTelemetry bridge can sit here. Must not throw. */
export type EventHandler = (event: AgentEvent) => void;
