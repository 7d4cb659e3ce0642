import { CosmosClient } from '@azure/cosmos';
import { type ChatClient, createAgent, createAuditProvider, Message, type Agent, type ContextAudit } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { CosmosHistoryProvider, CosmosSessionStore } from '@ctx/cosmos';

/** Where the sessions live: a real account, or the local stand-in (plain http on loopback). */
export interface CosmosTarget {
  endpoint: string;
  key: string;
  /** True for the local stand-in: the SDK must not switch to https endpoint discovery. */
  local: boolean;
}

/** The database the example writes to (containers are created on first use). */
export const DATABASE_ID = 'ctx-example';

/** A hosted agent: history and session state in Cosmos DB, an audit line per run. */
export interface HostedAgent {
  agent: Agent;
  history: CosmosHistoryProvider;
  close(): void;
}

/** The model: OpenAI through @ctx/openai when OPENAI_API_KEY is set, else a scripted one that reads what it was sent. */
export async function chooseClient(env: NodeJS.ProcessEnv = process.env): Promise<ChatClient> {
  if (env.OPENAI_API_KEY) {
    const { OpenAIChatClient } = await import('@ctx/openai');
    return new OpenAIChatClient({ model: env.OPENAI_MODEL ?? 'gpt-4o-mini', apiKey: env.OPENAI_API_KEY });
  }
  return new ScriptedChatClient({
    replies: (messages) => {
      const earlier = messages.filter((m) => Message.source(m)?.sourceType === 'history');
      const question = Message.text(messages.at(-1)!);
      return `(${earlier.length} earlier messages loaded from Cosmos DB) You said: "${question}"`;
    },
  });
}

/** Formats one run's audit: what each source put into the model call. */
export function formatAudit(audit: ContextAudit): string {
  const parts = audit.sources.map((s) => `${s.sourceId}: ${s.messages} msg, ${s.tokens} tok`);
  return `  audit: ${parts.join(' | ')} | total ${audit.totalTokens} tok`;
}

/** Builds the agent on one shared `CosmosClient`: the history provider keeps the conversation, the store the session. */
export function createHostedAgent(target: CosmosTarget, client: ChatClient, print: (line: string) => void): HostedAgent {
  const cosmos = new CosmosClient({
    endpoint: target.endpoint,
    key: target.key,
    ...(target.local ? { connectionPolicy: { enableEndpointDiscovery: false } } : {}),
  });
  const history = new CosmosHistoryProvider({ client: cosmos, databaseId: DATABASE_ID, createIfNotExists: true, maxMessages: 20 });
  const sessionStore = new CosmosSessionStore({ client: cosmos, databaseId: DATABASE_ID, createIfNotExists: true, ttlSeconds: 7 * 86400 });
  const audit = createAuditProvider({ onAudit: (a) => print(formatAudit(a)) });
  const agent = createAgent({
    client,
    instructions: 'You are a concise assistant.',
    contextProviders: [history, audit],
    sessionStore,
  });
  return { agent, history, close: () => cosmos.dispose() };
}

/**
 * Runs `questions` as turns of one session kept in Cosmos DB, each in one call that loads the
 * session (or creates it), runs and saves it.
 */
export async function runTurns(hosted: HostedAgent, sessionId: string, questions: readonly string[], print: (line: string) => void) {
  const answers: string[] = [];
  for (const question of questions) {
    print(`> ${question}`);
    const response = await hosted.agent.run(question, { sessionId });
    print(`  ${response.text}`);
    answers.push(response.text);
  }
  return answers;
}
