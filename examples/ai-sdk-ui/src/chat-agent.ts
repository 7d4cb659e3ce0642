import { type Agent, type ChatClient, createAgent, defineTool } from '@ctx/core';
import { RedisHistoryProvider, RedisSessionStore } from '@ctx/redis';
import type { Redis } from 'ioredis';

const weather = defineTool({
  name: 'weather',
  description: 'The weather in a city today.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  execute: ({ city }) => `Sunny and 24 °C in ${String(city)}`,
});

const bookTable = defineTool({
  name: 'book_table',
  description: 'Books a table at the restaurant; the user approves each booking.',
  parameters: { type: 'object', properties: { people: { type: 'number' } }, required: ['people'] },
  needsApproval: true,
  execute: ({ people }) => `a table for ${String(people)} at 8 pm`,
});

/** The agent's tools: `uiMessagesFromHistory` reads which of them need approval. */
export const chatTools = [weather, bookTable];

/** The chat agent: history and sessions in Redis under `prefix`, a weather tool and a booking tool that waits for the user's approval. */
export function createChatAgent(options: { redis: Redis; client: ChatClient; prefix?: string }): Agent {
  const { redis, prefix = 'ai-sdk-ui' } = options;
  return createAgent({
    client: options.client,
    instructions: 'You are a helpful restaurant assistant.',
    tools: chatTools,
    contextProviders: [new RedisHistoryProvider({ client: redis, prefix })],
    sessionStore: new RedisSessionStore({ client: redis, prefix }),
    limits: { maxMessageBytes: 256 * 1024, maxInputBytes: 256 * 1024 },
  });
}
