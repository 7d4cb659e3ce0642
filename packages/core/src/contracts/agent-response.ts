import type { FinishReason, Usage } from './chat-client.js';
import type { Message } from './message.js';

/** The outcome of `agent.run`. */
export interface AgentResponse {
  /** Every message the run produced: assistant replies, function calls and their results. */
  messages: Message[];
  /** The text of the assistant messages, joined; text marked `phase: 'commentary'` (the model's progress notes) is left out. */
  text: string;
  /** Token usage summed over every model call of the run. */
  usage?: Usage;
  /** The service's conversation id, when the service keeps the conversation. */
  conversationId?: string;
  /**
   * The id of the session the run belonged to (`session.sessionId`, or the `sessionId` of a hosted
   * run); absent for a run without a session.
   */
  sessionId?: string;
  /** Why the model stopped in the run's last model call. */
  finishReason?: FinishReason;
  /**
   * Tool calls the run did not make because their tool needs approval (`needsApproval`); set only
   * when some wait, with `finishReason: 'tool-calls'`. The session keeps them: answer with
   * `agent.run([], { session, approvals: [{ callId, approved, reason? }] })`.
   */
  pendingApprovals?: PendingApproval[];
  /**
   * What each of the run's context providers had added to the context when the run ended
   * (messages, instructions, tools), by `sourceId`; a provider left out of the run counts zero.
   */
  added?: Record<string, Contribution>;
}

/** A tool call that waits for the caller's approval before it runs. */
export interface PendingApproval {
  /** The id of the function call; an approval names it. */
  callId: string;
  toolName: string;
  /** The arguments as the model sent them (JSON text). */
  arguments: string;
}

/** What the counts of a source's contributions are, for diagnostics. */
export interface Contribution {
  /** Messages added. */
  messages: number;
  /** Instruction texts added. */
  instructions: number;
  /** Tools added. */
  tools: number;
}
