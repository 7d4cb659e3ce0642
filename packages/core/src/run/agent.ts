import type { Message } from '../messages/message.js';
import type { AgentSession, AgentSessionInit } from '../session/agent-session.js';
import type { AgentResponse } from '../contracts/agent-response.js';
import type { ChatClient, ChatOptions, ChatResponseUpdate } from '../contracts/chat-client.js';
import type { CompactionStrategy } from '../contracts/compaction-strategy.js';
import type { EventHandler } from '../contracts/events.js';
import type { ContextProvider, Tool } from '../contracts/run-view.js';
import type { JsonValue } from '../contracts/json.js';
import type { GetSessionOptions, ListSessionsOptions, SessionPage, SessionStore } from '../contracts/session-store.js';
import type { SessionJson } from '../contracts/session.js';
import type { ToolValidator } from '../contracts/tool-validator.js';
import type { AgentLimits } from './limits.js';
import type { RunningTurnsOptions } from './running-turns.js';

/** What `createAgent` takes. */
export interface AgentOptions {
  /** The model: any `ChatClient` (`OpenAIChatClient`, `ScriptedChatClient`, ...). */
  client: ChatClient;
  /**
   * Default `agent`. Appears in diagnostics. When given, the agent's response messages carry it as
   * `authorName` (unless the client set one), so a transcript of several agents says who spoke.
   */
  name?: string;
  /** System instructions, sent before those providers add. */
  instructions?: string;
  /**
   * The agent's tools. Names are unique (else `ConfigurationError`), and so are they within a run:
   * another tool that a run's `options.tools` or a provider's `extendTools` names like one of these is a
   * `ConfigurationError` (the same tool object given again is offered once).
   */
  tools?: readonly Tool[];
  /**
   * Validates the arguments of every tool whose `parameters` are a plain JSON Schema (the agent's,
   * a run's, those providers add) before `execute`; the model gets an error result listing the
   * issues. `jsonSchemaValidator()` from `@ctx/core/json-schema`. Without it such arguments are
   * parsed JSON, not checked. Tools with their own `validate` (Standard Schema) keep it.
   */
  toolValidator?: ToolValidator;
  /** The pipeline, outermost first. Source ids must be unique. */
  contextProviders?: readonly ContextProvider[];
  /** Where `getSession` / `saveSession` keep sessions. */
  sessionStore?: SessionStore;
  /**
   * How a hosted run treats the same turn (the same input message ids on the same session) running
   * now in another request, a double submit: it waits for that turn and answers with its reply, so
   * the model is called once. In this process always; across processes through the
   * `sessionStore`'s turn leases (`leaseTurn`; every store of ctx has them). `waitMs` (default
   * 60000) bounds the wait: past it the request fails with a `ConcurrencyError` with
   * `turnRunning: true`. `leaseMs` (default 15000) is how long a lease outlives a process that died.
   */
  runningTurns?: RunningTurnsOptions;
  /** Runs before every model call of the tool loop. */
  compaction?: CompactionStrategy;
  /** How many times tool results may be sent back to the model in one run. Default 10. */
  maxToolRoundtrips?: number;
  /**
   * Bounds each hook of every provider without its own `timeoutMs` (milliseconds). A hook that
   * overruns is abandoned and counts as failed: skipped with a diagnostic under `onError: 'skip'`,
   * otherwise the run fails with a `ProviderError`. Default: no limit.
   */
  providerTimeoutMs?: number;
  /**
   * When history providers store a turn. `'run'` (default): once, after the run succeeded.
   * `'model-call'`: after every model call, before any tool runs (the first call stores the input
   * with the model's response), and after every batch of tool calls, before the next model call
   * (their results, which were paid for, stay stored when that call fails), so a process that dies
   * mid-run leaves the exact prefix that happened (each message once), and the next run answers
   * calls left without results as interrupted. At most two history writes per tool-loop step.
   * With a `sessionStore`, the session is saved there after each write of a history that lives in
   * the session (the in-memory history), merging as `saveSession` does. A run that fails keeps what
   * it stored.
   */
  persistence?: 'run' | 'model-call';
  /**
   * Transforms messages before any provider writes them (history, memories): mask personal data,
   * drop attachments. Each provider that writes calls it (through `ProviderRunArgs.redact`) with its
   * `sourceId`, so what is kept can differ by destination. It must return one message per message,
   * with the same ids, in order; anything else fails that write (a `ConfigurationError`, handled as
   * the provider's failure). The model still sees the originals in the run that produced them.
   */
  redact?: Redactor;
  /**
   * Size limits on a run's input and on tool results (`maxMessageBytes`, default 8 MiB;
   * `maxInputBytes`, default 16 MiB; bytes of JSON, data parts included). Input over a limit fails
   * the run with an `InvalidInputError` before any provider, store or model sees it; a tool result
   * over `maxMessageBytes` becomes an error result the model sees.
   */
  limits?: AgentLimits;
  /** Diagnostics: provider timings and contributions, tool calls, warnings, skips. */
  onEvent?: EventHandler;
}

/** The agent's storage redaction (`AgentOptions.redact`). */
export type Redactor = (messages: readonly Message[], info: RedactInfo) => readonly Message[] | Promise<readonly Message[]>;

/** What `AgentOptions.redact` is told about a write. */
export interface RedactInfo {
  /** The session the messages belong to. */
  sessionId: string;
  /** The provider about to write them. */
  sourceId: string;
  /** Aborts with the run. */
  signal: AbortSignal;
}

/** Everything ctx keeps about one user, as `agent.exportUserData` returns it. Plain JSON. */
export interface UserDataExport {
  /** Always `ctx.user-data`. */
  type: 'ctx.user-data';
  /** The user. */
  userId: string;
  /** When the export was taken (ISO 8601). */
  exportedAt: string;
  /** Each of the user's sessions: the session JSON, and each history provider's stored messages. */
  sessions: Array<{ session: SessionJson; history: Record<string, Message[]> }>;
  /** What each provider keeps about the user outside sessions (`exportUserData`), by `sourceId`. */
  providers: Record<string, JsonValue>;
}

/** Options of `agent.forkSession`. */
export interface ForkSessionOptions {
  /** Copy the history up to and including this message. Default: all of it. */
  atMessageId?: string;
  /** The new session's id. Default: a new random id. */
  sessionId?: string;
  /** Aborts the copy. */
  signal?: AbortSignal;
}

/** The input of a run: text, a message, or several messages. */
export type AgentInput = string | Message | readonly Message[];

/** Options of `agent.run` and `agent.runStream`. */
export interface AgentRunOptions {
  /** The conversation. Without one the run is stateless: no default history, throwaway state. */
  session?: AgentSession;
  /**
   * The hosted cycle in one call: the id of the conversation in the agent's `sessionStore`. The run
   * loads it (a new session, owned by `userId`, when the store does not hold the id: stored before
   * the run so the id is taken), runs, and saves it, merging what other runs on it saved meanwhile.
   * `response.sessionId` echoes it. With `session` too, or without a `sessionStore`, it is a
   * `ConfigurationError`. A save that cannot merge is a `ConcurrencyError` whose `turnStored` says
   * whether to run again (see the core README). For a new conversation, let the server generate the
   * id (`generateId()`) and hand it to the client: an id a client made up may be another user's.
   */
  sessionId?: string;
  /**
   * With `sessionId`: the user the run is for (the signed-in user, never a value the client sends).
   * A session of another user (or of none) is refused with an `InvalidInputError` before anything
   * runs; a new session is created owned by this user (`metadata.userId`). Without `sessionId`, a
   * `ConfigurationError`.
   */
  userId?: string;
  /**
   * Per-run model options. `tools` are offered besides the agent's for this run only; one name, one
   * tool: a run tool named like another of the agent's (or like another run tool) is a
   * `ConfigurationError` and the run does not start; the agent's own tool object passed again is
   * offered once. `instructions` follow the agent's.
   */
  options?: Omit<ChatOptions, 'signal' | 'conversationId' | 'tools'> & { tools?: readonly Tool[] };
  /**
   * This run's pipeline instead of the agent's (a history provider chosen per request, a retriever
   * for one tenant), checked as `createAgent` checks its own, with the same default-history rule.
   * Sessions restored by the agent are validated against the agent's providers.
   */
  contextProviders?: readonly ContextProvider[];
  /**
   * Answers to tool calls the session holds for approval (`response.pendingApprovals`, kept in
   * `session.pending`): approved calls run, denied ones get an error result with the `reason`, which
   * the model sees, and the run goes on. Pass `[]` as input to only answer. The model is called once
   * no call of the session waits any more; a run that leaves some unanswered runs what it answered
   * and ends with the rest in `pendingApprovals`, without a model call (new input is refused then).
   * Checked before anything runs: a call id that does not wait (unknown, already answered, or one
   * that needed no approval), an id answered twice, or approvals without the session are an
   * `InvalidInputError`. A run that fails leaves the calls waiting, so the answers can be sent again.
   */
  approvals?: readonly ToolApproval[];
  /** Aborts the run: it ends at once, rejecting with the signal's reason, and stores nothing. */
  signal?: AbortSignal;
}

/** The caller's answer to one tool call waiting for approval. */
export interface ToolApproval {
  /** The call's id, from `response.pendingApprovals` or `session.pending.approvals`. */
  callId: string;
  /** `true` runs the call; `false` answers it with an error result instead. */
  approved: boolean;
  /** Why it was denied: the model reads it in the error result. */
  reason?: string;
}

/** A streaming run: iterate it for updates; `response` resolves to the assembled result. */
export interface AgentRunStream extends AsyncIterable<ChatResponseUpdate> {
  /** The whole response once the run (including every `afterRun`) has finished. */
  readonly response: Promise<AgentResponse>;
}

/** An agent: a chat client, a context pipeline and a tool loop. Stateless; sessions hold the state. */
export interface Agent {
  /** The agent's name (events, errors). */
  readonly name: string;
  /** The chat client it calls. */
  readonly client: ChatClient;
  /** Its providers, in order. */
  readonly contextProviders: readonly ContextProvider[];
  /**
   * Runs one turn: on `session`, or, hosted, on the session `sessionId` of the `sessionStore`, which
   * it loads and saves. Rejects with the first failure (`ProviderError`, a model error, the abort reason);
   * history providers store nothing more for a failed run (with `persistence: 'model-call'`, what
   * was stored before the failure stays). To retry a failed run safely, pass the same input
   * `Message` (same id): a turn is identified by its input message ids and is stored once.
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
   * Loads a session from the `sessionStore`; undefined when the store does not hold the id, and,
   * with `userId`, also when the session belongs to another user or to none (as if it were not
   * stored, so its existence is not revealed). The owner is checked here as well as by the store,
   * so a store that does not know `userId` is still safe. Start a new conversation with
   * `createSession({ userId })`, or run with `{ sessionId, userId }` and let the run load and save.
   * @throws ConfigurationError without a `sessionStore`, or for a blank `userId`.
   */
  getSession(sessionId: string, options?: GetSessionOptions): Promise<AgentSession | undefined>;
  /**
   * Saves a session to the `sessionStore`. When another run saved it since it was loaded, reloads
   * it and merges three ways against what it was loaded from: a state slot only one side changed
   * takes that side's, a slot both changed is merged by its provider's `mergeState` (the in-memory
   * history keeps both turns), `metadata.updatedAt` is the later, `title`, `custom`, `userId` and
   * `pending` are ours when we changed them. Tried up to 8 times while the session keeps changing.
   * Saves of one session by this agent run one at a time. On success the session holds what was
   * stored (the merge included).
   * @throws ConcurrencyError when both changed a slot that cannot be merged, the session was deleted
   *   meanwhile, or it kept changing; nothing of this save is stored, and `turnStored` says whether
   *   the last run's turn is stored anyway (in a history outside the session).
   */
  saveSession(session: AgentSession, options?: { signal?: AbortSignal }): Promise<void>;
  /**
   * Lists the `sessionStore`'s sessions, newest first, a page at a time (see `SessionPage`).
   * @throws ConfigurationError without a `sessionStore`, or when it cannot list.
   */
  listSessions(options?: ListSessionsOptions): Promise<SessionPage>;
  /**
   * Deletes a session and everything that belongs to it: every provider's `onSessionDeleted` runs
   * first (history providers clear its messages), then the session leaves the `sessionStore` (if
   * any), then the hooks run once more. Given an id, the session is loaded from the store for its
   * state. A provider that fails stops the delete with a `ProviderError` and the session stays, so
   * it can be retried (by id, also when the second round failed). Resolves to whether the store
   * held the session. A delete wins over a hosted turn running on the session, in any process: the
   * turn stores nothing that outlives the delete and fails with a `ConcurrencyError` with
   * `sessionDeleted: true`.
   */
  deleteSession(session: AgentSession | string, options?: { signal?: AbortSignal }): Promise<boolean>;
  /**
   * A new session with the history up to and including a message, and a deep copy of every
   * provider's state and of the metadata (new times, `forkedFrom` set). Each history provider copies
   * its messages (`forkMessages`; Redis and Cosmos on the server): the one that loads up to the
   * message, one that only stores (an audit log) up to the same point of the conversation. Calls
   * waiting for approval stay with the source: the fork's next run answers them as interrupted.
   * Not saved: save it as any session. A fork that fails removes what it copied.
   * @throws InvalidInputError before anything is copied when `atMessageId` is not in the history.
   * @throws ConfigurationError before anything is copied: a `sessionId` equal to the source's or
   *   already holding history, a session whose conversation the service keeps (`serviceSessionId`).
   */
  forkSession(session: AgentSession, options?: ForkSessionOptions): Promise<AgentSession>;
  /**
   * The stored conversation of a session, oldest first (the newest `limit` with a limit), from the
   * history that loads (the default in-memory one when the agent has none).
   * @throws ConfigurationError when the service keeps the conversation and no history loads it.
   */
  getHistory(session: AgentSession, options?: { limit?: number; signal?: AbortSignal }): Promise<Message[]>;
  /**
   * Removes a message and everything after it from every history provider of the session (one
   * that only stores is cut at the same point of the conversation), with `popMessages`, else
   * `replaceMessages`. To edit a message: rewind to it, then run the new text. Calls waiting for
   * approval that it removes are dropped from `session.pending`. Resolves to the messages removed
   * from the loading history, oldest first. Save the session afterwards when it lives in a store.
   * Not safe while a run on the same session is going on.
   * @throws InvalidInputError before anything is removed when the message is not in the history.
   * @throws ConfigurationError before anything is removed: a history provider can neither pop nor
   *   replace, or the service keeps the conversation.
   */
  rewindSession(session: AgentSession, messageId: string, options?: { signal?: AbortSignal }): Promise<Message[]>;
  /**
   * Runs a turn again: finds the turn holding `messageId` (default: the last turn), whose input is
   * the consecutive user messages opening it, removes everything after that input (as
   * `rewindSession` does), and runs the input again with the same message ids: a retry of the same
   * turn, so the new reply replaces the old one and the input is stored once. A run that fails
   * leaves the input stored, so it can be regenerated again. Resolves to the run's response.
   * @throws InvalidInputError when the message is not in the history or no user message opens its
   *   turn, before anything is removed.
   */
  regenerate(
    session: AgentSession,
    options?: Omit<AgentRunOptions, 'session' | 'sessionId' | 'userId' | 'approvals'> & { messageId?: string },
  ): Promise<AgentResponse>;
  /** Everything kept about a user: each session of theirs (by `metadata.userId`) with its history, and each provider's `exportUserData`. */
  exportUserData(userId: string, options?: { signal?: AbortSignal }): Promise<UserDataExport>;
  /**
   * Deletes everything kept about a user: every session of theirs (as `deleteSession` does), then
   * each provider's `deleteUserData`. Resolves to the number of sessions deleted.
   */
  deleteUserData(userId: string, options?: { signal?: AbortSignal }): Promise<{ sessions: number }>;
  /**
   * Waits for every provider's background work (`provider.flush()`), e.g. before a process exits;
   * with `session` (a session or its id), only for that session's (a title being written, memories
   * being stored), e.g. before saving it. An aborted `signal` rejects with its reason at once; the
   * background work itself goes on.
   */
  flush(options?: { signal?: AbortSignal; session?: AgentSession | string }): Promise<void>;
}
