import { ConfigurationError } from '../errors.js';
import type { SessionContext } from '../contracts/run-view.js';
import { Message } from './message.js';

/**
 * The text of the recent conversation, one message a line: with `count` undefined the run's input
 * only, else the last `count` user and assistant messages of loaded history plus the input
 * (messages other providers injected are left out). Internal to the providers of this folder.
 */
export function recentConversationText(context: SessionContext, count: number | undefined): string {
  const messages = count === undefined ? context.inputMessages : conversationMessages(context).slice(-count);
  const lines: string[] = [];
  for (const m of messages) {
    const text = Message.text(m).trim();
    if (text) lines.push(text);
  }
  return lines.join('\n');
}

function conversationMessages(context: SessionContext): Message[] {
  return context.getMessages({ includeInput: true }).filter((m) => {
    const type = Message.source(m)?.sourceType;
    return (type === 'history' || type === 'input') && (m.role === 'user' || m.role === 'assistant');
  });
}

/**
 * Checks a `queryFromHistory` option (internal).
 * @throws ConfigurationError unless it is undefined or a positive integer.
 */
export function checkHistoryCount(owner: string, count: number | undefined): void {
  if (count !== undefined && !(Number.isInteger(count) && count > 0)) {
    throw new ConfigurationError(`${owner}: queryFromHistory must be a positive integer (messages), got ${String(count)}.`);
  }
}
