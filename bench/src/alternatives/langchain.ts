/**
 * LangChain.js side of the pipeline benchmark: `RunnableWithMessageHistory` (LangChain's legacy
 * memory API, still documented for LangChain.js) over an `InMemoryChatMessageHistory`, a
 * `ChatPromptTemplate` with `MessagesPlaceholder('history')`, and `FakeListChatModel` (no network).
 * Windowed two ways: with `trimMessages` (last 20 messages), the documented way to bound the
 * history sent to the model, or with a user-written `BaseListChatMessageHistory` that returns only
 * the last 20 stored messages, so the full history is never read.
 */
import { BaseListChatMessageHistory, InMemoryChatMessageHistory } from '@langchain/core/chat_history';
import {
  AIMessage,
  HumanMessage,
  mapChatMessagesToStoredMessages,
  mapStoredMessagesToChatMessages,
  ToolMessage,
  trimMessages,
  type BaseMessage,
} from '@langchain/core/messages';
import { ChatPromptTemplate, MessagesPlaceholder } from '@langchain/core/prompts';
import { RunnableLambda, RunnablePassthrough, RunnableWithMessageHistory } from '@langchain/core/runnables';
import { FakeListChatModel } from '@langchain/core/utils/testing';
import { ANSWER, EXTRA_CONTEXT, EXTRA_INSTRUCTIONS, QUESTION, type Turn } from '../data.js';

/** Converts the neutral conversation to LangChain messages. */
export function toLangChain(turns: Turn[]): BaseMessage[] {
  return turns.map((t) => {
    switch (t.kind) {
      case 'user':
        return new HumanMessage({ id: t.id, content: t.text });
      case 'assistant':
        return new AIMessage({ id: t.id, content: t.text });
      case 'call':
        return new AIMessage({
          id: t.id,
          content: '',
          tool_calls: [{ id: t.callId, name: t.name, args: t.args, type: 'tool_call' }],
        });
      case 'result':
        return new ToolMessage({ id: t.id, content: t.output, tool_call_id: t.callId, name: t.name });
    }
  });
}

/**
 * A chat history that keeps every message but returns only the newest `window`, never opening on
 * a tool result (it would have lost its call). What a user writes to read a window, not it all.
 */
export class LastMessagesChatHistory extends BaseListChatMessageHistory {
  lc_namespace = ['ctx-bench'];
  constructor(
    readonly stored: BaseMessage[],
    readonly window: number,
  ) {
    super();
  }
  async getMessages(): Promise<BaseMessage[]> {
    let start = Math.max(0, this.stored.length - this.window);
    while (start < this.stored.length && this.stored[start]!.getType() === 'tool') start++;
    return this.stored.slice(start);
  }
  async addMessage(message: BaseMessage): Promise<void> {
    this.stored.push(message);
  }
  override async clear(): Promise<void> {
    this.stored.length = 0;
  }
}

/**
 * One prepared LangChain pipeline on one session. `reset` (untimed) brings the session back to
 * exactly the stored messages: a new history over the same message objects, through the history's
 * constructor (`BaseChatMessageHistory` has no way to remove only the newest messages).
 * `serialize` / `restore` go through LangChain's own `mapChatMessagesToStoredMessages` and
 * `mapStoredMessagesToChatMessages`, what a hosted app keeping the history between requests uses.
 */
export function langchainCase(stored: BaseMessage[], opts: { window?: number; history?: 'in-memory' | 'last-messages' } = {}) {
  const histories = new Map<string, BaseListChatMessageHistory>();
  const prompt = ChatPromptTemplate.fromMessages([
    ['system', [...EXTRA_INSTRUCTIONS, ...EXTRA_CONTEXT].join('\n')],
    new MessagesPlaceholder('history'),
    ['human', '{question}'],
  ]);
  const model = new FakeListChatModel({ responses: [ANSWER] });
  const inner =
    opts.window === undefined || opts.history === 'last-messages'
      ? prompt.pipe(model)
      : RunnablePassthrough.assign({
          history: RunnableLambda.from((input: { history: BaseMessage[] }) => input.history).pipe(
            trimMessages({
              maxTokens: opts.window,
              strategy: 'last',
              tokenCounter: (msgs: BaseMessage[]) => msgs.length,
              startOn: 'human',
            }),
          ),
        })
          .pipe(prompt)
          .pipe(model);
  const chain = new RunnableWithMessageHistory({
    runnable: inner,
    getMessageHistory: (sessionId: string) => {
      const h = histories.get(sessionId);
      if (!h) throw new Error(`no history for ${sessionId}`);
      return h;
    },
    inputMessagesKey: 'question',
    historyMessagesKey: 'history',
  });
  const historyOf = (messages: BaseMessage[]): BaseListChatMessageHistory =>
    opts.history === 'last-messages'
      ? new LastMessagesChatHistory(messages, opts.window ?? Number.POSITIVE_INFINITY)
      : new InMemoryChatMessageHistory(messages);
  const sessionId = 'lc-bench';
  let restored = 0;
  return {
    /** Brings the session back to exactly the stored messages (untimed): a new history over the same message objects. */
    async reset(): Promise<string> {
      histories.set(sessionId, historyOf(stored.slice()));
      return sessionId;
    },
    async run(sessionId: string): Promise<string> {
      const res = await chain.invoke({ question: QUESTION }, { configurable: { sessionId } });
      return String(res.content);
    },
    /** Messages stored in the session now. */
    async storedCount(sessionId: string): Promise<number> {
      const history = histories.get(sessionId);
      if (history instanceof LastMessagesChatHistory) return history.stored.length;
      return (await history?.getMessages())?.length ?? -1;
    },
    /** The session's messages as the JSON text a hosted app keeps between requests. */
    async serialize(sessionId: string): Promise<string> {
      const history = histories.get(sessionId);
      const messages = history instanceof LastMessagesChatHistory ? history.stored : await history!.getMessages();
      return JSON.stringify(mapChatMessagesToStoredMessages(messages));
    },
    /** A session restored from that text, under a session id of its own (the previous one is dropped). */
    async restore(json: string): Promise<string> {
      histories.delete(`lc-restored-${restored}`);
      const id = `lc-restored-${++restored}`;
      histories.set(id, historyOf(mapStoredMessagesToChatMessages(JSON.parse(json))));
      return id;
    },
  };
}
