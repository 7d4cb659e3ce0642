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

/** How the benchmark agent keeps history. */
export interface CtxAgentOptions {
  /** Window of `InMemoryHistoryProvider`; none loads every stored message. */
  maxMessages?: number;
  /** Which fake client the agent uses. Default `'fixed'`. */
  client?: ClientKind;
  /**
   * `'default'`: no history provider in the pipeline, so the agent adds its default
   * `InMemoryHistoryProvider` (no window) to every run with a session. Default `'explicit'`.
   */
  history?: 'explicit' | 'default';
}

/** Builds the benchmark agent: history (optionally windowed, or the agent's default) + four custom providers. */
export function ctxAgent(opts: CtxAgentOptions = {}): Agent {
  if (opts.history === 'default' && opts.maxMessages !== undefined) throw new Error('the default history has no window');
  const history =
    opts.history === 'default'
      ? []
      : [new InMemoryHistoryProvider(opts.maxMessages === undefined ? {} : { maxMessages: opts.maxMessages })];
  return createAgent({
    name: 'support',
    client: makeClient(opts.client ?? 'fixed'),
    contextProviders: [
      ...history,
      instructionProvider('persona', EXTRA_INSTRUCTIONS[0]!),
      instructionProvider('policy', EXTRA_INSTRUCTIONS[1]!),
      contextMessageProvider('profile', EXTRA_CONTEXT[0]!),
      contextMessageProvider('clock', EXTRA_CONTEXT[1]!),
    ],
  });
}

/**
 * One prepared ctx pipeline on one session holding `stored`. Everything that changes the session
 * goes through the agent's public API: `reset` (untimed) rewinds what runs added after the last
 * stored message with `agent.rewindSession` (found with `agent.getHistory`), and `serialize` / `restore` are
 * `agent.serializeSession` + `JSON.stringify` and `agent.restoreSession` of that string, what a
 * hosted app keeping the session between requests does.
 */
export function ctxCase(stored: Message[], opts: CtxAgentOptions = {}) {
  const agent = ctxAgent(opts);
  const client = agent.client;
  let session: AgentSession | undefined;
  return {
    agent,
    async reset(): Promise<AgentSession> {
      // ScriptedChatClient keeps a deep copy of every call; drop them so memory stays flat.
      if (client instanceof ScriptedChatClient) client.calls.length = 0;
      if (!session) {
        // `createSession` deep-copies the state (structuredClone).
        session = agent.createSession({ state: { memory: { messages: stored as unknown as never } } });
        return session;
      }
      // What runs added since the last reset follows the last stored message: read the newest few,
      // or everything when they do not reach back to it.
      const lastId = stored[stored.length - 1]?.id;
      let recent = await agent.getHistory(session, { limit: 64 });
      let at = recent.findIndex((m) => m.id === lastId);
      if (at === -1 && recent.length === 64) {
        recent = await agent.getHistory(session);
        at = recent.findIndex((m) => m.id === lastId);
      }
      if (at === -1) throw new Error(`the session no longer holds its last stored message ${lastId}`);
      const first = recent[at + 1];
      if (first) await agent.rewindSession(session, first.id);
      return session;
    },
    async run(session: AgentSession): Promise<string> {
      const res = await agent.run(QUESTION, { session });
      return res.text;
    },
    /** Messages stored in the session now (`agent.getHistory`). */
    async storedCount(session: AgentSession): Promise<number> {
      return (await agent.getHistory(session)).length;
    },
    /** The session as the JSON text a hosted app keeps between requests. */
    async serialize(session: AgentSession): Promise<string> {
      return JSON.stringify(agent.serializeSession(session));
    },
    /** A session restored from that text (`agent.restoreSession` validates it and every message). */
    async restore(json: string): Promise<AgentSession> {
      return agent.restoreSession(json);
    },
  };
}
