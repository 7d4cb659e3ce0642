import {
  type Agent,
  type AgentResponse,
  type AgentRunOptions,
  type ChatResponseUpdate,
  type Content,
  type ContextProvider,
  HistoryProvider,
  type Message,
  type ToolApproval,
  unwrapProvider,
} from '@ctx/core';

/** The `sourceId` of the provider that hands a stopped reply to the run that stores it. */
const STOPPED_REPLY_SOURCE = 'ai-sdk-stopped-reply';

/**
 * Collects a run's updates into the messages said so far, as the history would store them: one
 * message per `messageId`, text and refusal deltas joined, function-call pieces merged by call id.
 */
export class ReplySoFar {
  private readonly messages: Message[] = [];
  private readonly byId = new Map<string, Message>();
  private current: Message | undefined;
  #answered = false;

  /**
   * Whether the model's last answer is in: its last update finished for another reason than tool
   * calls, and nothing followed. What is left of the turn is storing it.
   */
  get answered(): boolean {
    return this.#answered;
  }

  add(update: ChatResponseUpdate): void {
    if (update.finishReason !== undefined) this.#answered = update.finishReason !== 'tool-calls';
    else if (update.contents.length > 0) this.#answered = false;
    if (update.contents.length === 0) return;
    const role = update.role ?? this.current?.role ?? 'assistant';
    const id = update.messageId;
    let message = id === undefined ? this.current : this.byId.get(id);
    if (!message || message.role !== role) {
      message = { id: id ?? crypto.randomUUID(), role, contents: [], createdAt: new Date().toISOString() };
      if (id !== undefined) this.byId.set(id, message);
      this.messages.push(message);
    }
    this.current = message;
    for (const piece of update.contents) append(message.contents, piece);
  }

  /**
   * What was said, marked stopped: calls without a result are left out (their arguments may be cut
   * off), then messages left empty; the last assistant message gets `metadata.stopped: true`.
   */
  stopped(): Message[] {
    const answered = new Set<string>();
    for (const m of this.messages) for (const c of m.contents) if (c.type === 'function-result') answered.add(c.callId);
    const kept: Message[] = [];
    for (const m of this.messages) {
      const contents = m.contents.filter((c) => c.type !== 'function-call' || answered.has(c.callId));
      if (contents.length > 0) kept.push({ ...m, contents });
    }
    const last = [...kept].reverse().find((m) => m.role === 'assistant');
    if (last) last.metadata = { ...last.metadata, stopped: true };
    return kept;
  }
}

function append(contents: Content[], piece: Content): void {
  const last = contents.at(-1);
  if (piece.type === 'text' && last?.type === 'text' && last.phase === piece.phase) last.text += piece.text;
  else if (piece.type === 'refusal' && last?.type === 'refusal') last.refusal += piece.refusal;
  else if (piece.type === 'function-call') {
    const same = contents.find(
      (c): c is Extract<Content, { type: 'function-call' }> => c.type === 'function-call' && c.callId === piece.callId,
    );
    if (same) {
      same.arguments += piece.arguments;
      same.name ||= piece.name;
    } else contents.push({ ...piece });
  } else contents.push({ ...piece });
}

/** What `storeStoppedReply` stores: the turn's input and what was said before the stop. */
export interface StoppedTurn {
  agent: Agent;
  sessionId: string;
  userId: string;
  input: Message[];
  approvals: ToolApproval[];
  /** The run's own options (its providers, model options). */
  run: Pick<AgentRunOptions, 'options' | 'contextProviders'> | undefined;
  messages: Message[];
}

/**
 * Stores a stopped turn as the agent stores any turn: a hosted run of the same input (same ids, so
 * it is stored once) through the run's history providers only (or the agent's default history when
 * it has none), whose innermost provider answers with what was said instead of calling the model.
 * The other providers (retrieval, memory) did their work in the stopped run and do not run again.
 * Redaction and the session's save are the agent's own. Resolves to that run's response
 * (`finishReason: 'stop'`); rejects as `agent.run` does.
 */
export function storeStoppedReply(turn: StoppedTurn): Promise<AgentResponse> {
  const { agent, sessionId, userId, input, approvals, run, messages } = turn;
  const reply: ContextProvider = {
    sourceId: STOPPED_REPLY_SOURCE,
    async wrap({ context }) {
      context.response = { messages, text: textOf(messages), finishReason: 'stop' };
    },
  };
  const histories = (run?.contextProviders ?? agent.contextProviders).filter((p) => unwrapProvider(p).some(HistoryProvider.isInstance));
  return agent.run(input, {
    ...(run?.options ? { options: run.options } : {}),
    contextProviders: [...histories, reply],
    sessionId,
    userId,
    ...(approvals.length > 0 ? { approvals } : {}),
  });
}

function textOf(messages: readonly Message[]): string {
  return messages
    .filter((m) => m.role === 'assistant')
    .flatMap((m) => m.contents)
    .map((c) => (c.type === 'text' && c.phase !== 'commentary' ? c.text : ''))
    .join('');
}
