import type { FinishReason, Usage } from './chat-client.js';
import type { JsonObject, JsonValue } from './json.js';
import type { Message } from './message.js';
import type { Contribution } from './agent-response.js';
import type { ToolDefinition } from './tool-definition.js';

/**
 * A diagnostic event. Events carry ids, counts and timings, never message text or secrets, unless
 * the handler asks for content (`EventHandler.includeContent`): then the model and tool events carry
 * it in `content`.
 */
export type AgentEvent =
  | {
      /** A run started. */
      type: 'run-start';
      /** Identifies the run in every event it emits. */
      runId: string;
      /** The run's session. */
      sessionId: string;
      /** The agent's `name`. */
      agentName: string;
      /** Source ids of the run's providers, in order (the default history included). */
      providers: string[];
      /** The chat client's provider name, e.g. `openai`. */
      provider: string;
      /** The chat client's `modelId`. */
      modelId: string;
    }
  | {
      /** A run ended, successfully or not. */
      type: 'run-end';
      /** The run. */
      runId: string;
      /** The run's session. */
      sessionId: string;
      /** How long the run took. */
      durationMs: number;
      /** Why it failed, if it did. */
      error?: unknown;
      /** Tokens of all its model calls. */
      usage?: Usage;
    }
  | {
      /** A provider hook finished. */
      type: 'provider-end';
      /** The run. */
      runId: string;
      /** The provider. */
      sourceId: string;
      /** Which hook. */
      phase: ProviderPhase;
      /** How long it took. */
      durationMs: number;
      /** What it added to the context. */
      added: Contribution;
    }
  | {
      /** A provider with `onError: 'skip'` failed and was left out of the run. */
      type: 'provider-skipped';
      /** The run. */
      runId: string;
      /** The provider. */
      sourceId: string;
      /** The hook that failed. */
      phase: ProviderPhase;
      /** Why. */
      error: unknown;
    }
  | {
      /** A model call is about to be sent. */
      type: 'model-call';
      /** The run. */
      runId: string;
      /** Which call of the tool loop (1 for the first). */
      roundtrip: number;
      /** Messages sent, per-run instructions (sent as a system message before the input) included. */
      messages: number;
      /** Instructions sent as the request's instructions (those of stable sources). */
      instructions: number;
      /** Tools offered. */
      tools: number;
      /** What was sent, when the handler asked for content. */
      content?: {
        /** The messages sent. */
        messages: readonly Message[];
        /** The instructions sent. */
        instructions?: string;
        /**
         * The instructions sent, one entry per text in the order they were joined, with the source
         * that added it (`agent` for the agent's own and the run's).
         */
        instructionSources?: ReadonlyArray<{ readonly sourceId: string; readonly text: string }>;
        /** The tools offered, in order, as the model sees them; `metadata.ctx.sourceId` names the provider that added one. */
        tools?: readonly ToolDefinition[];
      };
    }
  | {
      /** A model call answered. */
      type: 'model-response';
      /** The run. */
      runId: string;
      /** Which call of the tool loop. */
      roundtrip: number;
      /** How long the call took. */
      durationMs: number;
      /** Its tokens. */
      usage?: Usage;
      /** Why the model stopped. */
      finishReason?: FinishReason;
      /** How many tools the model asked to call. */
      functionCalls: number;
      /** What came back, when the handler asked for content. */
      content?: {
        /** The messages received. */
        messages: readonly Message[];
      };
    }
  | {
      /** A tool call started. */
      type: 'tool-start';
      /** The run. */
      runId: string;
      /** The tool. */
      toolName: string;
      /** The model's call id. */
      callId: string;
      /** The arguments, when the handler asked for content. */
      content?: {
        /** The arguments as the model sent them (JSON text). */
        arguments: string;
      };
    }
  | {
      /** A tool call ended. */
      type: 'tool-end';
      /** The run. */
      runId: string;
      /** The tool. */
      toolName: string;
      /** The model's call id. */
      callId: string;
      /** How long it took. */
      durationMs: number;
      /** Why it failed, if it did (the model got an error result). */
      error?: unknown;
      /** The result, when the handler asked for content. */
      content?: {
        /** What went back to the model. */
        result: JsonValue;
      };
    }
  | {
      /** Something worked, but not as configured (see `WarningCode`). */
      type: 'warning';
      /** The run, when it happened in one. */
      runId?: string;
      /** The provider concerned, if any. */
      sourceId?: string;
      /** What kind of warning. */
      code: WarningCode;
      /** What happened, for people. */
      message: string;
    }
  | {
      /** A provider reported something through `args.report` (an audit, a budget, repaired data). */
      type: 'provider-diagnostic';
      /** The run. */
      runId: string;
      /** The provider. */
      sourceId: string;
      /** The provider's code for it, e.g. `context-audit`. */
      code: string;
      /** What happened, for people. */
      message: string;
      /** Details as JSON. */
      data?: JsonObject;
      /** The error behind it, if any. */
      error?: unknown;
    };

/**
 * The hook of a provider an event or a `ProviderError` refers to: a run's `beforeRun`, `afterRun`,
 * `wrap` and `onSessionCreated`, or the agent's session and user-data operations
 * (`onSessionDeleted`, `onRewind`, `onSessionForked`, `exportUserData`, `deleteUserData`).
 */
export type ProviderPhase =
  | 'beforeRun'
  | 'afterRun'
  | 'wrap'
  | 'onSessionCreated'
  | 'onSessionDeleted'
  | 'onRewind'
  | 'onSessionForked'
  | 'onTurnStored'
  | 'exportUserData'
  | 'deleteUserData';

/** Machine-readable warning kinds. */
export type WarningCode =
  | 'multiple-history-loaders'
  | 'tool-roundtrip-limit'
  | 'event-handler-failed'
  | 'corrupt-state'
  /** The agent's compaction strategy failed or declined (e.g. a blank summary); the uncompacted list was sent. */
  | 'compaction-failed'
  /** Function calls of an earlier, interrupted run had no result; each was answered with an error result saying so. */
  | 'interrupted-calls'
  /**
   * The session continues a conversation the service keeps (`serviceSessionId`), but the client's
   * response carried no conversation id: the session keeps the old one, which may not hold this turn.
   */
  | 'conversation-id-missing'
  /**
   * A hosted run saved its turn without a provider's post-reply work (`flush`: a title, a memory
   * update), which failed or did not end within the provider's timeout; the work goes on, unsaved.
   */
  | 'post-reply-work-failed'
  /**
   * A hosted run could not renew or release the lease on its turn in the session store (another
   * request took it after it expired, or the store failed); the turn still ran and was saved.
   */
  | 'turn-lease-failed'
  /**
   * A hosted run whose providers wrote after its save (`onTurnStored`: recall vectors) could not
   * read the session store to see whether the session was deleted meanwhile; the run succeeded. If
   * it was deleted, call `agent.deleteSession` again to remove what the turn stored.
   */
  | 'session-check-failed';

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
