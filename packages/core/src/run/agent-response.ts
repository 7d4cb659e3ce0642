import type { Message } from '../messages/message.js';
import type { AgentResponse } from '../contracts/agent-response.js';

/** Builds an `AgentResponse` from the run's messages. */
export function createAgentResponse(messages: Message[], extra: Omit<AgentResponse, 'messages' | 'text'> = {}): AgentResponse {
  // The answer, not the model's progress notes: text marked `phase: 'commentary'` is left out.
  let text = '';
  for (const m of messages) {
    if (m.role !== 'assistant') continue;
    for (const c of m.contents) if (c.type === 'text' && c.phase !== 'commentary') text += c.text;
  }
  const response: AgentResponse = { messages, text };
  if (extra.usage) response.usage = extra.usage;
  if (extra.conversationId !== undefined) response.conversationId = extra.conversationId;
  if (extra.finishReason !== undefined) response.finishReason = extra.finishReason;
  if (extra.pendingApprovals?.length) response.pendingApprovals = extra.pendingApprovals;
  return response;
}
