import { AgentSession, type AgentSessionInit, type SessionJson } from './agent-session.js';
import type { AgentResponse } from './agent-response.js';
import type { ChatClient, ChatOptions, ChatResponseUpdate } from './chat-client.js';
import type { CompactionStrategy } from './compaction.js';
import type { ContextProvider } from './context-provider.js';
import { ConfigurationError, CtxError, SessionStateError } from './errors.js';
import type { AgentEvent, EventHandler } from './events.js';
import { HistoryProvider } from './history-provider.js';
import { generateId } from './id.js';
import { InMemoryHistoryProvider } from './in-memory-history-provider.js';
import { pathJoin } from './json.js';
import { Message } from './message.js';
import { runPipeline } from './pipeline.js';
import { SessionContext } from './session-context.js';
import type { SessionStore } from './session-store.js';
import type { Tool } from './tool.js';
import { runToolLoop } from './tool-loop.js';

/** What `createAgent` takes. */
export interface AgentOptions {
  client: ChatClient;
  /** Default `agent`. Appears in diagnostics. */
  name?: string;
  /** System instructions, sent before those providers add. */
  instructions?: string;
  tools?: readonly Tool[];
  /** The pipeline, outermost first. Source ids must be unique. */
  contextProviders?: readonly ContextProvider[];
  /** Where `getSession` / `saveSession` keep sessions. */
  sessionStore?: SessionStore;
  /** Runs before every model call of the tool loop. */
  compaction?: CompactionStrategy;
  /** How many times tool results may be sent back to the model in one run. Default 10. */
  maxToolRoundtrips?: number;
  /** Diagnostics: provider timings and contributions, tool calls, warnings, skips. */
  onEvent?: EventHandler;
}

/** The input of a run: text, a message, or several messages. */
export type AgentInput = string | Message | readonly Message[];

/** Options of `agent.run` and `agent.runStream`. */
export interface AgentRunOptions {
  /** The conversation. Without one the run is stateless: no default history, throwaway state. */
  session?: AgentSession;
  /** Per-run model options (tools here are added to the agent's). */
  options?: Omit<ChatOptions, 'signal' | 'conversationId'>;
  signal?: AbortSignal;
}

/** A streaming run: iterate it for updates; `response` resolves to the assembled result. */
export interface AgentRunStream extends AsyncIterable<ChatResponseUpdate> {
  /** The whole response once the run (including every `afterRun`) has finished. */
  readonly response: Promise<AgentResponse>;
}

/** An agent: a chat client, a context pipeline and a tool loop. Stateless; sessions hold the state. */
export interface Agent {
  readonly name: string;
  readonly client: ChatClient;
  readonly contextProviders: readonly ContextProvider[];
  /**
   * Runs one turn. Rejects with the first failure (`ProviderError`, a model error, the abort reason);
   * history providers store nothing for a failed run.
   */
  run(input: AgentInput, options?: AgentRunOptions): Promise<AgentResponse>;
  /** Runs one turn, yielding updates as the model streams. Breaking out of the loop aborts the run. */
  runStream(input: AgentInput, options?: AgentRunOptions): AgentRunStream;
  /** A new session (synchronous). */
  createSession(init?: AgentSessionInit): AgentSession;
  /** A fresh session with this id and empty state: enough for backends that keep history by session id. */
  getSessionById(sessionId: string): AgentSession;
  /** `session.toJSON()`. */
  serializeSession(session: AgentSession): SessionJson;
  /**
   * A session from JSON (object or string), validated including each provider's state.
   * @throws SessionStateError naming the offending path.
   */
  restoreSession(json: unknown): AgentSession;
  /**
   * Loads a session from the `sessionStore`, or a new one with that id when none is stored.
   * @throws ConfigurationError without a `sessionStore`.
   */
  getSession(sessionId: string, options?: { signal?: AbortSignal }): Promise<AgentSession>;
  /** Waits for every provider's background work (`provider.flush()`), e.g. before a process exits. */
  flush(): Promise<void>;
  /**
   * Saves a session to the `sessionStore`, only if nobody saved it since it was loaded.
   * @throws ConcurrencyError when it changed in the store meanwhile.
   */
  saveSession(session: AgentSession, options?: { signal?: AbortSignal }): Promise<void>;
}

const RESERVED_SOURCE_IDS = new Set(['agent', 'input', 'response']);
const DEFAULT_HISTORY_ID = 'memory';

/**
 * Creates an agent.
 * @throws ConfigurationError for duplicate or reserved source ids, or a bad `maxToolRoundtrips`.
 */
export function createAgent(options: AgentOptions): Agent {
  const { client, sessionStore, compaction, onEvent } = options;
  if (!client || typeof client.getResponse !== 'function') throw new ConfigurationError('createAgent needs a `client` implementing ChatClient.');
  const name = options.name ?? 'agent';
  const providers = [...(options.contextProviders ?? [])];
  const maxToolRoundtrips = options.maxToolRoundtrips ?? 10;
  if (!Number.isInteger(maxToolRoundtrips) || maxToolRoundtrips < 0) throw new ConfigurationError(`maxToolRoundtrips must be a non-negative integer, got ${maxToolRoundtrips}.`);
  const seen = new Set<string>();
  for (const p of providers) {
    if (typeof p?.sourceId !== 'string' || p.sourceId === '') throw new ConfigurationError('Every context provider needs a non-empty string `sourceId`.');
    if (seen.has(p.sourceId)) throw new ConfigurationError(`Two context providers share the sourceId "${p.sourceId}"; give each a unique sourceId.`);
    if (RESERVED_SOURCE_IDS.has(p.sourceId)) throw new ConfigurationError(`The sourceId "${p.sourceId}" is reserved; choose another.`);
    seen.add(p.sourceId);
  }
  const loaders = providers.filter((p) => HistoryProvider.isInstance(p) && p.loadMessages !== false);
  const memorySlotTaken = providers.some((p) => p.sourceId === DEFAULT_HISTORY_ID);
  if (memorySlotTaken && loaders.length === 0) {
    throw new ConfigurationError(`The sourceId "${DEFAULT_HISTORY_ID}" belongs to the default history unless the provider using it loads history; choose another.`);
  }
  const defaultHistory = new InMemoryHistoryProvider();

  const emit = (event: AgentEvent) => {
    if (!onEvent) return;
    try {
      onEvent(event);
    } catch (error) {
      console.warn(`[ctx] The onEvent handler of agent "${name}" threw on a "${event.type}" event:`, error);
    }
  };

  const store = (): SessionStore => {
    if (!sessionStore) throw new ConfigurationError(`Agent "${name}" has no sessionStore; pass one to createAgent to use getSession/saveSession.`);
    return sessionStore;
  };

  /** The providers of one run: the agent's, plus the default history when the rule says so. */
  const resolveProviders = (session: AgentSession | undefined, runOptions: AgentRunOptions['options'] = {}): ContextProvider[] => {
    const serviceStores = runOptions.store === true || (client.storesByDefault === true && runOptions.store !== false);
    const needsDefault = session !== undefined && loaders.length === 0 && session.serviceSessionId === undefined && !serviceStores;
    return needsDefault ? [defaultHistory, ...providers] : providers;
  };

  const execute = async (input: AgentInput, runOptions: AgentRunOptions, onUpdate?: (update: ChatResponseUpdate) => void | Promise<void>, abort?: AbortController): Promise<AgentResponse> => {
    const runId = generateId();
    const started = performance.now();
    const session = runOptions.session ?? new AgentSession();
    const controller = abort ?? new AbortController();
    const onAbort = () => controller.abort(runOptions.signal?.reason);
    if (runOptions.signal?.aborted) onAbort();
    runOptions.signal?.addEventListener('abort', onAbort, { once: true });
    const signal = controller.signal;

    const chatOptions = { ...runOptions.options };
    const instructions = [options.instructions, chatOptions.instructions].filter(Boolean).join('\n\n');
    delete chatOptions.instructions;
    const tools = [...(options.tools ?? []), ...(chatOptions.tools ?? [])];
    delete chatOptions.tools;
    const context = new SessionContext({
      sessionId: session.sessionId,
      serviceSessionId: session.serviceSessionId,
      inputMessages: toMessages(input),
      options: chatOptions,
      instructions: instructions || undefined,
      tools,
    });
    const runProviders = resolveProviders(runOptions.session, runOptions.options);
    const slotsBefore = new Set(Object.keys(session.state));
    emit({ type: 'run-start', runId, sessionId: session.sessionId, agentName: name, providers: runProviders.map((p) => p.sourceId) });
    if (loaders.length > 1) {
      emit({ type: 'warning', runId, code: 'multiple-history-loaders', message: `${loaders.length} history providers load messages (${loaders.map((p) => p.sourceId).join(', ')}); the model sees each one's copy of the conversation.` });
    }
    try {
      await runPipeline(runProviders, {
        runId,
        emit,
        args: (provider) => ({
          agent,
          session,
          context,
          signal,
          state: session.stateOf(provider.sourceId),
          report: (d) => emit({ type: 'provider-diagnostic', runId, sourceId: provider.sourceId, ...d }),
        }),
        invoke: async () => {
          try {
            context.response = await runToolLoop({ runId, client, session, context, signal, maxToolRoundtrips, compaction, emit, onUpdate });
          } catch (error) {
            context.error = error;
          }
        },
      });
    } finally {
      runOptions.signal?.removeEventListener('abort', onAbort);
      // A slot made for this run and left empty (say, a gated-off provider) is not kept.
      for (const p of runProviders) {
        if (!slotsBefore.has(p.sourceId) && Object.keys(session.state[p.sourceId] ?? {}).length === 0) delete session.state[p.sourceId];
      }
    }
    const { response, error } = context;
    emit({ type: 'run-end', runId, sessionId: session.sessionId, durationMs: performance.now() - started, ...(error !== undefined ? { error } : {}), ...(response?.usage ? { usage: response.usage } : {}) });
    if (error !== undefined) throw error;
    if (!response) throw new CtxError(`Run ${runId} ended without a response: a wrap provider did not call next().`);
    if (response.conversationId !== undefined) session.serviceSessionId = response.conversationId;
    return response;
  };

  const agent: Agent = {
    name,
    client,
    contextProviders: providers,
    run: (input, runOptions = {}) => execute(input, runOptions),
    runStream(input, runOptions = {}) {
      // Updates wait in `queue`; once a consumer iterates, the run waits for it to take each one.
      const queue: ChatResponseUpdate[] = [];
      let wakeConsumer: (() => void) | undefined;
      let resumeRun: (() => void) | undefined;
      let iterating = false;
      let done = false;
      const controller = new AbortController();
      const onUpdate = (update: ChatResponseUpdate): Promise<void> | undefined => {
        queue.push(update);
        wakeConsumer?.();
        return iterating ? new Promise<void>((resolve) => (resumeRun = resolve)) : undefined;
      };
      const response = execute(input, runOptions, onUpdate, controller).finally(() => {
        done = true;
        wakeConsumer?.();
      });
      response.catch(() => {}); // the caller sees the error through iteration or `response`
      return {
        response,
        async *[Symbol.asyncIterator]() {
          iterating = true;
          try {
            while (true) {
              const update = queue.shift();
              if (update) {
                yield update;
              } else if (done) {
                break;
              } else {
                resumeRun?.();
                await new Promise<void>((resolve) => (wakeConsumer = resolve));
                wakeConsumer = undefined;
              }
            }
            await response;
          } finally {
            if (!done) controller.abort(new DOMException('The stream consumer stopped reading.', 'AbortError'));
            resumeRun?.();
          }
        },
      };
    },
    flush: async () => {
      await Promise.all(providers.map((p) => p.flush?.()));
    },
    createSession: (init) => new AgentSession(init),
    getSessionById: (sessionId) => new AgentSession({ sessionId }),
    serializeSession: (session) => session.toJSON(),
    restoreSession(json) {
      const session = AgentSession.fromJSON(json);
      for (const provider of [defaultHistory, ...providers]) {
        const slot = session.state[provider.sourceId];
        if (slot === undefined || !provider.validateState) continue;
        if (provider === defaultHistory && memorySlotTaken) continue;
        const path = pathJoin('$.state', provider.sourceId);
        try {
          provider.validateState(slot, path);
        } catch (error) {
          if (SessionStateError.isInstance(error)) throw error;
          throw new SessionStateError(path, `rejected by provider "${provider.sourceId}": ${(error as Error).message}`, { cause: error });
        }
      }
      return session;
    },
    async getSession(sessionId, getOptions) {
      const stored = await store().get(sessionId, getOptions);
      if (!stored) return new AgentSession({ sessionId });
      const session = agent.restoreSession(stored.session);
      session.etag = stored.etag;
      return session;
    },
    async saveSession(session, saveOptions) {
      session.etag = await store().set(session.toJSON(), { ifMatch: session.etag ?? null, ...saveOptions });
    },
  };
  return agent;
}

function toMessages(input: AgentInput): Message[] {
  const list = typeof input === 'string' ? [Message.user(input)] : Array.isArray(input) ? [...input] : [input as Message];
  list.forEach((m, i) => {
    try {
      Message.parse(m, `$.input[${i}]`);
    } catch (error) {
      const { path, problem } = error as SessionStateError;
      throw new ConfigurationError(`Invalid run input at ${path}: ${problem}`, { cause: error });
    }
  });
  return list;
}
