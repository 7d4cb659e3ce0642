import type { FinishReason, Usage } from './chat-client.js';
import { Message } from './message.js';

/** The outcome of `agent.run`. */
export interface AgentResponse {
  /** Every message the run produced: assistant replies, function calls and their results. */
  messages: Message[];
  /** The text of the assistant messages, joined. */
  text: string;
  /** Token usage summed over every model call of the run. */
  usage?: Usage;
  /** The service's conversation id, when the service keeps the conversation. */
  conversationId?: string;
  finishReason?: FinishReason;
}

/** Builds an `AgentResponse` from the run's messages. */
export function createAgentResponse(messages: Message[], extra: Omit<AgentResponse, 'messages' | 'text'> = {}): AgentResponse {
  let text = '';
  for (const m of messages) if (m.role === 'assistant') text += Message.text(m);
  const response: AgentResponse = { messages, text };
  if (extra.usage) response.usage = extra.usage;
  if (extra.conversationId !== undefined) response.conversationId = extra.conversationId;
  if (extra.finishReason !== undefined) response.finishReason = extra.finishReason;
  return response;
}
