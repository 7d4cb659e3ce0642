import { type ChatClient, type ContextAudit, createAgent, createAuditProvider, Message } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { RedisHistoryProvider } from '@ctx/redis';
import { Redis } from 'ioredis';

/** Where one turn's output goes. */
export type Print = (line: string) => void;

/**
 * The model the example uses without an API key: it answers from the messages it is sent, so it
 * can only tell your name when the history was loaded from Redis.
 */
export function offlineModel(): ChatClient {
  return new ScriptedChatClient({
    replies: (messages) => {
      const texts = messages.map((m) => Message.text(m));
      const names = texts.map((text) => /\bI am (\w+)/i.exec(text)?.[1]).filter((name) => name !== undefined);
      const input = texts.at(-1) ?? '';
      if (/\bI am \w+/i.test(input)) return `Nice to meet you, ${names.at(-1)}.`;
      return names.length > 0 ? `You are ${names.at(-1)}.` : 'I do not know your name yet.';
    },
  });
}

/** OpenAI through `@ctx/openai` when `OPENAI_API_KEY` is set, else the offline model. */
export async function chooseModel(env: NodeJS.ProcessEnv = process.env): Promise<ChatClient> {
  if (!env.OPENAI_API_KEY) return offlineModel();
  const { OpenAIChatClient } = await import('@ctx/openai');
  return new OpenAIChatClient({ model: env.OPENAI_MODEL ?? 'gpt-4o-mini', apiKey: env.OPENAI_API_KEY });
}

/** The audit as a small table: what each source put into the prompt. */
export function formatAudit(audit: ContextAudit): string[] {
  const rows = audit.sources.map((s) => `  ${s.sourceId.padEnd(8)} ${String(s.messages).padStart(8)} ${String(s.tokens).padStart(7)}`);
  return ['  source   messages  tokens', ...rows, `  total    ${String(audit.totalTokens).padStart(16)}`];
}

/**
 * One turn of the conversation `sessionId`, as a separate process would run it: its own Redis
 * connection and agent, the history loaded from Redis before the model call and the turn stored
 * after it. Prints the audit of the prompt and the reply.
 */
export async function runTurn(options: {
  redisUrl: string;
  sessionId: string;
  input: string;
  client: ChatClient;
  print: Print;
}): Promise<string> {
  const { redisUrl, sessionId, input, client, print } = options;
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 0, commandTimeout: 2000, autoResendUnfulfilledCommands: false });
  redis.on('error', () => {}); // failures reach the caller as BackendUnavailableError
  try {
    const history = new RedisHistoryProvider({ client: redis, maxMessages: 50, ttlSeconds: 3600 });
    const audit = createAuditProvider({ onAudit: (result) => formatAudit(result).forEach((line) => print(line)) });
    const agent = createAgent({ client, instructions: 'You are terse.', contextProviders: [history, audit] });
    print(`user: ${input}`);
    const response = await agent.run(input, { session: agent.getSessionById(sessionId) });
    print(`assistant: ${response.text}`);
    return response.text;
  } finally {
    redis.disconnect();
  }
}
