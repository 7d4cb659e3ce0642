import type { PendingApproval } from './agent-response.js';
import type { JsonObject } from './json.js';
import type { Message } from './message.js';

/** The serialized form of a session. Version 1. */
export interface SessionJson {
  /** Always `ctx.session`. */
  type: 'ctx.session';
  /** The format version. */
  version: 1;
  /** The session's id. */
  sessionId: string;
  /** The service conversation id, when the service keeps the conversation. */
  serviceSessionId?: string;
  /** Each provider's JSON slot, keyed by `sourceId`. */
  state: Record<string, JsonObject>;
  /** Tool calls waiting for approval, when a run ended with some. */
  pending?: PendingToolCalls;
}

/**
 * What a session keeps while tool calls wait for approval: the calls, and the tool messages with
 * the results of the other calls of the same model response (run, denied, or answered so far),
 * which go to the model with the last answer.
 */
export interface PendingToolCalls {
  /** The calls waiting, in the order the model made them. Never empty. */
  approvals: PendingApproval[];
  /** Tool messages the model has not been sent yet, oldest first. */
  messages: Message[];
}
