import { HistoryProvider, serviceKeepsConversation } from '../history/history-provider.js';
import { findRetriedTurn } from '../history/retried-turn.js';
import { Message } from '../messages/message.js';
import type { AgentSession } from '../session/agent-session.js';
import type { AgentResponse } from '../contracts/agent-response.js';
import type { ChatOptions } from '../contracts/chat-client.js';
import { createAgentResponse } from './agent-response.js';
import type { DefaultHistory } from './default-history.js';
import type { AgentRuntime } from './execute-run.js';
import { redactorFor } from './redact.js';

/** How many of the newest messages are read first to find the turn (the whole history only when they do not hold it). */
const RECENT_MESSAGES = 100;

/** A signal that never aborts, for a redactor called without one. */
const NEVER = new AbortController().signal;

/**
 * The reply of a turn as the session's history stored it, as an `AgentResponse` (`messages`,
 * `text`, `sessionId`, and `pendingApprovals` with `finishReason: 'tool-calls'` when its tool calls
 * wait for approval; no `usage` or `added`: nothing ran for it): for a hosted run that waited for
 * the same turn running in another process. Read from the history the run loads (the default
 * in-memory one in the session's state when the agent has none). Undefined when that turn is not
 * stored whole: not at all (the other run failed, or stored with other content under its ids), only
 * its beginning (`persistence: 'model-call'` and a process that died: a tool call without its
 * result), or when no history of the agent reads the conversation (the service keeps it).
 */
export async function storedReply(
  runtime: AgentRuntime,
  history: DefaultHistory,
  session: AgentSession,
  inputs: readonly Message[],
  chatOptions: Pick<ChatOptions, 'store'>,
  signal: AbortSignal | undefined,
): Promise<AgentResponse | undefined> {
  const { client, redact } = runtime.options;
  const keeps = serviceKeepsConversation(client, session, chatOptions);
  const primary = history
    .providersFor(session, chatOptions)
    .find((p): p is HistoryProvider => HistoryProvider.isInstance(p) && (p.loadMessages === true || (p.loadMessages === 'auto' && !keeps)));
  if (!primary) return undefined;
  const { sessionId } = session;
  const read = (limit?: number) =>
    primary.getMessages(sessionId, {
      state: session.state[primary.sourceId] ?? {},
      ...(limit === undefined ? {} : { limit }),
      ...(signal ? { signal } : {}),
    });
  const asStored = await redactorFor(redact, sessionId, primary.sourceId, signal ?? NEVER)(inputs);
  const find = (messages: readonly Message[]) =>
    findRetriedTurn(
      messages,
      inputs.map((m) => m.id),
      asStored,
    );
  // The turn waited for was stored just now: the newest messages hold it, unless others were stored after it.
  let stored = await read(RECENT_MESSAGES);
  let span = find(stored);
  if (!span && stored.length >= RECENT_MESSAGES) {
    stored = await read();
    span = find(stored);
  }
  if (!span) return undefined;
  const replies = stored.slice(span.start, span.end).filter((m) => Message.source(m)?.sourceType === 'response');
  const pending = session.pending;
  const calls = new Set<string>();
  const answered = new Set<string>();
  const waiting = new Set<string>();
  for (const m of replies) for (const call of Message.functionCalls(m)) calls.add(call.callId);
  const messages = [...replies];
  if (pending) {
    for (const approval of pending.approvals) if (calls.has(approval.callId)) waiting.add(approval.callId);
    if (waiting.size > 0) {
      const ids = new Set(replies.map((m) => m.id));
      messages.push(...pending.messages.filter((m) => !ids.has(m.id)));
    }
  }
  for (const m of messages) for (const c of m.contents) if (c.type === 'function-result') answered.add(c.callId);
  const open = [...calls].filter((callId) => !answered.has(callId) && !waiting.has(callId));
  const last = replies.at(-1);
  if (!last || open.length > 0 || (waiting.size === 0 && last.role !== 'assistant')) return undefined;
  const response =
    waiting.size > 0
      ? createAgentResponse(messages, {
          finishReason: 'tool-calls',
          pendingApprovals: pending!.approvals.filter((a) => waiting.has(a.callId)),
        })
      : createAgentResponse(messages);
  response.sessionId = sessionId;
  return response;
}
