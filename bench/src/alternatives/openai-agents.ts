/**
 * OpenAI Agents SDK side of the pipeline benchmark: `Agent` + `run(agent, input, { session })`
 * with a `MemorySession` (which its docs call a store for demos and tests) or a user-written
 * `Session` that returns only the newest N items without cloning them, and a fake `Model` that answers a fixed text without network (the same
 * shape the SDK's own tests use: a `Model` whose `getResponse` returns `{ usage, output }`).
 * The SDK has no history limit on `MemorySession` reads; the windowed variant uses the documented
 * `sessionInputCallback` to keep the last N items, which still reads the whole session.
 */
import {
  Agent,
  MemorySession,
  Runner,
  Usage,
  setDefaultModelProvider,
  setTracingDisabled,
  type AgentInputItem,
  type Model,
  type Session,
  type ModelRequest,
  type ModelResponse,
  type StreamEvent,
} from '@openai/agents-core';
import { ANSWER, EXTRA_CONTEXT, EXTRA_INSTRUCTIONS, QUESTION, type Turn } from '../data.js';

/** A model that answers `ANSWER` at once, never touching the network. */
class FakeModel implements Model {
  calls = 0;
  async getResponse(_request: ModelRequest): Promise<ModelResponse> {
    this.calls++;
    return {
      usage: new Usage({ requests: 1, inputTokens: 0, outputTokens: 0, totalTokens: 0 }),
      output: [
        {
          type: 'message',
          id: `msg_${this.calls}`,
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: ANSWER }],
        },
      ],
      responseId: `resp_${this.calls}`,
    };
  }
  getStreamedResponse(_request: ModelRequest): AsyncIterable<StreamEvent> {
    throw new Error('streaming is not used by this benchmark');
  }
}

setTracingDisabled(true);
setDefaultModelProvider({ getModel: () => new FakeModel() });

/** Converts the neutral conversation to Agents SDK input items. */
export function toAgentItems(turns: Turn[]): AgentInputItem[] {
  return turns.map((t): AgentInputItem => {
    switch (t.kind) {
      case 'user':
        return { type: 'message', id: t.id, role: 'user', content: t.text };
      case 'assistant':
        return {
          type: 'message',
          id: t.id,
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: t.text }],
        };
      case 'call':
        return {
          type: 'function_call',
          id: t.id,
          callId: t.callId,
          name: t.name,
          arguments: JSON.stringify(t.args),
          status: 'completed',
        };
      case 'result':
        return {
          type: 'function_call_result',
          id: t.id,
          callId: t.callId,
          name: t.name,
          status: 'completed',
          output: { type: 'text', text: t.output },
        };
    }
  });
}

/** Keeps the last `n` history items, starting on a user message (never orphans a tool result). */
function lastItems(history: AgentInputItem[], n: number): AgentInputItem[] {
  let start = Math.max(0, history.length - n);
  while (start < history.length) {
    const item = history[start] as { role?: string };
    if (item.role === 'user') break;
    start++;
  }
  return history.slice(start);
}

/**
 * A `Session` a user would write to send a window: it keeps every item but `getItems()` returns
 * only the newest `window` (starting on a user message), without cloning anything.
 */
export class LastItemsSession implements Session {
  constructor(
    readonly items: AgentInputItem[],
    readonly window: number,
  ) {}
  async getSessionId(): Promise<string> {
    return 'oa-window';
  }
  async getItems(limit?: number): Promise<AgentInputItem[]> {
    return lastItems(this.items, Math.min(limit ?? this.window, this.window));
  }
  async addItems(items: AgentInputItem[]): Promise<void> {
    this.items.push(...items);
  }
  async popItem(): Promise<AgentInputItem | undefined> {
    return this.items.pop();
  }
  async clearSession(): Promise<void> {
    this.items.length = 0;
  }
}

/**
 * One prepared Agents SDK pipeline on one session. `reset` (untimed) brings the session back to
 * exactly the stored items through the `Session` interface (`popItem()` until the last stored item
 * is the newest, or, on the user-written session, until it holds as many items as were stored). `serialize` / `restore` are `JSON.stringify(await session.getItems())` and a new
 * session over the parsed items, what a hosted app keeping the items between requests does.
 */
export function openaiAgentsCase(stored: AgentInputItem[], opts: { window?: number; session?: 'memory' | 'last-items' } = {}) {
  const model = new FakeModel();
  const agent = new Agent({
    name: 'support',
    instructions: [...EXTRA_INSTRUCTIONS, ...EXTRA_CONTEXT].join('\n'),
    model,
  });
  const runner = new Runner({ tracingDisabled: true });
  const window = opts.window;
  const sessionInputCallback =
    window === undefined || opts.session === 'last-items'
      ? undefined
      : (history: AgentInputItem[], newItems: AgentInputItem[]) => [...lastItems(history, window), ...newItems];
  // MemorySession deep-copies `initialItems` (structuredClone).
  const sessionOf = (items: AgentInputItem[]): Session =>
    opts.session === 'last-items'
      ? new LastItemsSession(items, window ?? Number.POSITIVE_INFINITY)
      : new MemorySession({ sessionId: 'oa-bench', initialItems: items });
  const session = sessionOf(stored.slice());
  const lastId = (stored[stored.length - 1] as { id?: string } | undefined)?.id;
  return {
    /** Brings the session back to exactly the stored items (untimed), through its public API. */
    async reset(): Promise<Session> {
      if (session instanceof LastItemsSession) {
        // Its getItems() returns a window that opens on a user message, so count what it keeps instead.
        while (session.items.length > stored.length) await session.popItem();
        return session;
      }
      for (;;) {
        const [last] = await session.getItems(1);
        if (!last || (last as { id?: string }).id === lastId) break;
        await session.popItem();
      }
      return session;
    },
    async run(session: Session): Promise<string> {
      const res = await runner.run(agent, QUESTION, sessionInputCallback ? { session, sessionInputCallback } : { session });
      return String(res.finalOutput);
    },
    /** Items stored in the session now. */
    async storedCount(session: Session): Promise<number> {
      return session instanceof LastItemsSession ? session.items.length : (await session.getItems()).length;
    },
    /** The session's items as the JSON text a hosted app keeps between requests. */
    async serialize(session: Session): Promise<string> {
      return JSON.stringify(session instanceof LastItemsSession ? session.items : await session.getItems());
    },
    /** A session restored from that text. */
    async restore(json: string): Promise<Session> {
      return sessionOf(JSON.parse(json));
    },
  };
}
