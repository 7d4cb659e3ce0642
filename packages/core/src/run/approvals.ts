import { shortId } from '../backend/checks.js';
import { InvalidInputError } from '../errors.js';
import { describeValue, isPlainObject } from '../messages/json.js';
import type { AgentSession } from '../session/agent-session.js';
import type { PendingToolCalls } from '../contracts/session.js';
import type { ToolApproval } from './agent.js';

/** The session's waiting calls at the start of a run, this run's answers, and what waits after it. */
export interface ApprovalRound {
  /** What the session held when the run began. */
  readonly pending: PendingToolCalls | undefined;
  /** This run's answers, by call id: each answers a waiting call, once. */
  readonly answers: ReadonlyMap<string, ToolApproval>;
  /** Set by the tool loop: what the session keeps once the run succeeds (undefined: nothing waits). */
  next: PendingToolCalls | undefined;
}

/**
 * The ids of the calls a session holds open on purpose, waiting for approval: a conversation's
 * repair must not answer them (they have no result yet, and will get one).
 */
export function pendingCallIds(session: Pick<AgentSession, 'pending'>): ReadonlySet<string> {
  return new Set(session.pending?.approvals.map((a) => a.callId));
}

/**
 * Checks a run's `approvals` against the calls its session holds, before anything runs.
 * @throws InvalidInputError for approvals without a session, a malformed entry, a call id that does
 *   not wait in the session (unknown, already answered, or a call that needed no approval), a call
 *   answered twice, or new input while some calls would still wait.
 */
export function approvalRound(
  session: AgentSession | undefined,
  approvals: readonly ToolApproval[] | undefined,
  hasInput: boolean,
): ApprovalRound {
  const pending = session?.pending;
  const answers = new Map<string, ToolApproval>();
  if (approvals !== undefined) {
    if (!Array.isArray(approvals)) throw new InvalidInputError(`approvals must be an array, got ${describeValue(approvals)}.`);
    if (!session && approvals.length > 0) {
      throw new InvalidInputError('approvals answer calls a session holds: pass that session too (run(input, { session, approvals })).');
    }
    const waiting = new Set(pending?.approvals.map((a) => a.callId));
    approvals.forEach((entry: unknown, i) => {
      const approval = checkApproval(entry, `approvals[${i}]`);
      if (answers.has(approval.callId)) {
        throw new InvalidInputError(
          `approvals[${i}] answers call ${JSON.stringify(approval.callId)} a second time; answer each call once.`,
        );
      }
      if (!waiting.has(approval.callId)) {
        const list = waiting.size ? `it waits for ${[...waiting].map((id) => JSON.stringify(id)).join(', ')}` : 'no call waits in it';
        throw new InvalidInputError(
          `approvals[${i}]: call ${JSON.stringify(approval.callId)} does not wait for approval in session ${shortId(session!.sessionId)} (unknown, already answered, or a call that needed none); ${list}.`,
        );
      }
      answers.set(approval.callId, approval);
    });
  }
  const left = pending?.approvals.filter((a) => !answers.has(a.callId)) ?? [];
  if (hasInput && left.length > 0) {
    throw new InvalidInputError(
      `Session ${shortId(session!.sessionId)} has ${left.length} tool call(s) waiting for approval (${left.map((a) => JSON.stringify(a.callId)).join(', ')}): answer every one in \`approvals\` to send new input, or pass [] as input to answer only some.`,
    );
  }
  return { pending, answers, next: pending };
}

function checkApproval(entry: unknown, path: string): ToolApproval {
  if (!isPlainObject(entry)) throw new InvalidInputError(`${path} must be { callId, approved, reason? }, got ${describeValue(entry)}.`);
  const { callId, approved, reason } = entry;
  if (typeof callId !== 'string' || callId.length === 0) {
    throw new InvalidInputError(`${path}.callId must be a non-empty string, got ${describeValue(callId)}.`);
  }
  if (typeof approved !== 'boolean') throw new InvalidInputError(`${path}.approved must be true or false, got ${describeValue(approved)}.`);
  if (reason !== undefined && typeof reason !== 'string') {
    throw new InvalidInputError(`${path}.reason must be a string when present, got ${describeValue(reason)}.`);
  }
  return reason === undefined ? { callId, approved } : { callId, approved, reason };
}
