/**
 * ctx side of the benchmarks: an agent on a fake chat client (no network) with five context
 * providers: `InMemoryHistoryProvider` plus four small custom providers that each add an
 * instruction or a short context message in `beforeRun`.
 */
import {
  Message,
  createAgent,
  InMemoryHistoryProvider,
  type Agent,
  type AgentSession,
  type ChatClient,
  type ChatOptions,
  type ChatResponse,
  type ChatResponseUpdate,
  type ContextProvider,
} from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { ANSWER, EXTRA_CONTEXT, EXTRA_INSTRUCTIONS, QUESTION, type Turn } from './data.js';

const CREATED_AT = '2025-06-11T09:00:00.000Z';

/**
 * Converts the neutral conversation to ctx messages, attributed the way `InMemoryHistoryProvider`
 * stores them after a run (`input` for the user's words, `response` for the model's side).
 */
export function toCtx(turns: Turn[]): Message[] {
  return turns.map((t): Message => {
    switch (t.kind) {
      case 'user':
        return {
          id: t.id,
          role: 'user',
          contents: [{ type: 'text', text: t.text }],
          createdAt: CREATED_AT,
          metadata: { ctx: { sourceId: 'input', sourceType: 'input' } },
        };
      case 'assistant':
        return {
          id: t.id,
          role: 'assistant',
          contents: [{ type: 'text', text: t.text }],
          createdAt: CREATED_AT,
          metadata: { ctx: { sourceId: 'response', sourceType: 'response' } },
        };
      case 'call':
        return {
          id: t.id,
          role: 'assistant',
          contents: [{ type: 'function-call', callId: t.callId, name: t.name, arguments: JSON.stringify(t.args) }],
          createdAt: CREATED_AT,
          metadata: { ctx: { sourceId: 'response', sourceType: 'response' } },
        };
      case 'result':
        return {
          id: t.id,
          role: 'tool',
          contents: [{ type: 'function-result', callId: t.callId, name: t.name, result: JSON.parse(t.output) }],
          createdAt: CREATED_AT,
          metadata: { ctx: { sourceId: 'response', sourceType: 'response' } },
        };
    }
  });
}

/** A provider that adds one instruction per run. */
function instructionProvider(sourceId: string, text: string): ContextProvider {
  return {
    sourceId,
    beforeRun({ context }) {
      context.extendInstructions(sourceId, text);
    },
  };
}

/** A provider that adds one short context message per run. */
function contextMessageProvider(sourceId: string, text: string): ContextProvider {
  return {
    sourceId,
    beforeRun({ context }) {
      context.extendMessages(sourceId, [Message.system(text)]);
    },
  };
}

/**
 * The cheapest possible `ChatClient`: answers `ANSWER` at once and keeps nothing, like the fake
 * models on the other side (`FakeListChatModel`, the Agents SDK fake `Model`). Used for the main
 * rows so that only the pipeline is timed.
 */
export class FixedReplyChatClient implements ChatClient {
  readonly specificationVersion = 'v1' as const;
  readonly provider = 'bench';
  readonly modelId = 'fixed-reply';
  /** Messages the last call received (for the sanity check of the window). */
  lastMessageCount = 0;
  async getResponse(messages: Message[], _options: ChatOptions): Promise<ChatResponse> {
    this.lastMessageCount = messages.length;
    return { messages: [Message.assistant(ANSWER)], finishReason: 'stop' };
  }
  getStreamingResponse(_messages: Message[], _options: ChatOptions): AsyncIterable<ChatResponseUpdate> {
    throw new Error('streaming is not used by this benchmark');
  }
}

/** Which fake client the agent uses: the bench's own, or core's `ScriptedChatClient`. */
export type ClientKind = 'fixed' | 'scripted';

function makeClient(kind: ClientKind): ChatClient {
  return kind === 'scripted' ? new ScriptedChatClient({ replies: () => ANSWER }) : new FixedReplyChatClient();
}

/** Builds the benchmark agent: history (optionally windowed) + four custom providers. */
export function ctxAgent(opts: { maxMessages?: number; client?: ClientKind } = {}): Agent {
  return createAgent({
    name: 'support',
    client: makeClient(opts.client ?? 'fixed'),
    contextProviders: [
      new InMemoryHistoryProvider(opts.maxMessages === undefined ? {} : { maxMessages: opts.maxMessages }),
      instructionProvider('persona', EXTRA_INSTRUCTIONS[0]!),
      instructionProvider('policy', EXTRA_INSTRUCTIONS[1]!),
      contextMessageProvider('profile', EXTRA_CONTEXT[0]!),
      contextMessageProvider('clock', EXTRA_CONTEXT[1]!),
    ],
  });
}

/**
 * One prepared ctx pipeline on one session. `setup` (untimed) brings the session back to exactly
 * the stored messages before every timed run, so each run sees N messages on a warm session.
 */
export function ctxCase(stored: Message[], opts: { maxMessages?: number; client?: ClientKind } = {}) {
  const agent = ctxAgent(opts);
  const client = agent.client;
  let session: AgentSession | undefined;
  return {
    agent,
    setup(): AgentSession {
      // ScriptedChatClient keeps a deep copy of every call; drop them so memory stays flat.
      if (client instanceof ScriptedChatClient) client.calls.length = 0;
      if (!session) {
        // `createSession` deep-copies the state (structuredClone).
        session = agent.createSession({ state: { memory: { messages: stored as unknown as never } } });
      } else {
        (session.state.memory!.messages as unknown[]).length = stored.length;
      }
      return session;
    },
    async run(session: AgentSession): Promise<string> {
      const res = await agent.run(QUESTION, { session });
      return res.text;
    },
    /** Messages stored in the session now. */
    storedCount(session: AgentSession): number {
      return (session.state.memory?.messages as unknown[] | undefined)?.length ?? -1;
    },
  };
}
