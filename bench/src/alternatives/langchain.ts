/**
 * LangChain.js side of the pipeline benchmark: `RunnableWithMessageHistory` over an
 * `InMemoryChatMessageHistory`, a `ChatPromptTemplate` with `MessagesPlaceholder('history')`, and
 * `FakeListChatModel` (no network). Optionally windowed with `trimMessages` (last 20 messages),
 * LangChain's documented way to bound the history sent to the model.
 */
import { InMemoryChatMessageHistory } from '@langchain/core/chat_history';
import { AIMessage, HumanMessage, ToolMessage, trimMessages, type BaseMessage } from '@langchain/core/messages';
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
 * One prepared LangChain pipeline on one session. `setup` (untimed) brings the session back to
 * exactly the stored messages before every timed run.
 */
export function langchainCase(stored: BaseMessage[], opts: { window?: number } = {}) {
  const histories = new Map<string, InMemoryChatMessageHistory>();
  const prompt = ChatPromptTemplate.fromMessages([
    ['system', [...EXTRA_INSTRUCTIONS, ...EXTRA_CONTEXT].join('\n')],
    new MessagesPlaceholder('history'),
    ['human', '{question}'],
  ]);
  const model = new FakeListChatModel({ responses: [ANSWER] });
  const inner =
    opts.window === undefined
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
  const sessionId = 'lc-bench';
  return {
    /** Brings the session back to exactly the stored messages (untimed): a new history over the same message objects. */
    setup(): string {
      histories.set(sessionId, new InMemoryChatMessageHistory(stored.slice()));
      return sessionId;
    },
    async run(sessionId: string): Promise<string> {
      const res = await chain.invoke({ question: QUESTION }, { configurable: { sessionId } });
      return String(res.content);
    },
    /** Messages stored in the session now. */
    async storedCount(sessionId: string): Promise<number> {
      return (await histories.get(sessionId)?.getMessages())?.length ?? -1;
    },
  };
}
