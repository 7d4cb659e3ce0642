import { type ChatClient, Message } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';

/**
 * The chat model without an API key. It asks for the weather tool when the user asks about the
 * weather, for the table-booking tool (which waits for the user's approval) when they want a table,
 * answers a tool's result in words, and otherwise echoes the question.
 */
export function offlineModel(): ChatClient {
  return new ScriptedChatClient({
    replies: (messages) => {
      const result = messages.at(-1)?.contents.find((c) => c.type === 'function-result');
      if (result?.type === 'function-result') {
        const text = typeof result.result === 'string' ? result.result : ((result.result as { error?: string }).error ?? '');
        return result.isError ? `I could not do that: ${text}` : `Done: ${text}.`;
      }
      const question = Message.text(messages.filter((m) => m.role === 'user').at(-1) ?? Message.user(''));
      const city = /weather in (\w+)/i.exec(question)?.[1];
      if (city) return { text: 'Let me check.', toolCalls: [{ name: 'weather', arguments: { city } }] };
      const table = /table for (\d+)/i.exec(question)?.[1];
      if (table) return { toolCalls: [{ name: 'book_table', arguments: { people: Number(table) } }] };
      return `You said: ${question}`;
    },
  });
}
