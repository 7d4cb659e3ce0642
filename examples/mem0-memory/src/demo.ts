import { type ChatClient, type ContextAudit, createAgent, createAuditProvider, Message } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { isMemoryMessage, Mem0ContextProvider } from '@ctx/mem0';
import type { MemoryBackend } from './memory-backend.js';

/** Where the demo's output goes. */
export type Print = (line: string) => void;

/** The two sessions of the demo: a fact told in the first, a question that needs it in the second. */
export const TURNS = ['I am allergic to peanuts.', 'Suggest a snack for the train: what am I allergic to?'];

/** The model without an API key: it can only mention the allergy if mem0 recalled it into the prompt. */
export function offlineModel(): ChatClient {
  return new ScriptedChatClient({
    replies: (messages) => {
      const facts = messages
        .filter(isMemoryMessage)
        .flatMap((m) => Message.text(m).split('\n'))
        .filter((line) => line.startsWith('- '))
        .map((line) => line.slice(2));
      if (facts.length === 0) return 'Noted.';
      return `You told me before: ${facts.join(' ')} So: apple slices or plain popcorn.`;
    },
  });
}

/** OpenAI through `@ctx/openai` when `OPENAI_API_KEY` is set, else the offline model. */
export async function chooseModel(env: NodeJS.ProcessEnv = process.env): Promise<ChatClient> {
  if (!env.OPENAI_API_KEY) return offlineModel();
  const { OpenAIChatClient } = await import('@ctx/openai');
  return new OpenAIChatClient({ model: env.OPENAI_MODEL ?? 'gpt-4o-mini', apiKey: env.OPENAI_API_KEY });
}

function formatAudit(audit: ContextAudit): string[] {
  const rows = audit.sources.map((s) => `  ${s.sourceId.padEnd(8)} ${String(s.messages).padStart(8)} ${String(s.tokens).padStart(7)}`);
  return ['  source   messages  tokens', ...rows];
}

/**
 * Runs each turn of `TURNS` in a new session of the same user: what the first one told mem0 is
 * searched and injected into the second one's prompt. Resolves to the replies.
 */
export async function runDemo(options: { backend: MemoryBackend; client: ChatClient; userId: string; print: Print }): Promise<string[]> {
  const { backend, client, userId, print } = options;
  const memory = new Mem0ContextProvider({ client: backend.client });
  const audit = createAuditProvider({ onAudit: (result) => formatAudit(result).forEach((line) => print(line)) });
  const agent = createAgent({ client, instructions: 'You are a helpful travel assistant.', contextProviders: [memory, audit] });
  const replies: string[] = [];
  for (const [index, input] of TURNS.entries()) {
    const session = agent.createSession({ state: { mem0: { userId } } }); // a new session each time
    print(`--- session ${index + 1} (${session.sessionId}) ---`);
    print(`user: ${input}`);
    const response = await agent.run(input, { session });
    print(`assistant: ${response.text}`);
    replies.push(response.text);
  }
  return replies;
}
