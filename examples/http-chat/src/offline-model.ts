import { type ChatClient, Message } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';

/**
 * The chat model without an API key. It asks for the weather tool when the user asks about the
 * weather, for the table-booking tool (which waits for the user's approval) when they want a table,
 * answers a tool's result in words, and otherwise echoes the question, so every reply says which
 * message it answers.
 */
export function offlineModel(): ChatClient {
  return new ScriptedChatClient({
    replies: (messages) => {
      const last = messages.at(-1);
      const result = last?.contents.find((c) => c.type === 'function-result');
      if (result?.type === 'function-result') {
        return result.isError ? `I could not do that: ${String(result.result)}` : `Done: ${String(result.result)}`;
      }
      const question = Message.text(messages.filter((m) => m.role === 'user').at(-1) ?? Message.user(''));
      const city = /weather in (\w+)/i.exec(question)?.[1];
      if (city) return { toolCalls: [{ name: 'weather', arguments: { city } }] };
      const table = /table for (\d+)/i.exec(question)?.[1];
      if (table) return { toolCalls: [{ name: 'book_table', arguments: { people: Number(table) } }] };
      return `You said: ${question}`;
    },
  });
}
