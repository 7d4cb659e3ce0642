// What providers and tools see of a run. These contracts refer to one another (a tool's `execute`
// sees the context, which lists the tools; a provider sees the agent, which lists the providers),
// so they share one file.
import type { AgentResponse, Contribution } from './agent-response.js';
import type { ChatClient, ChatOptions } from './chat-client.js';
import type { JsonObject, JsonValue } from './json.js';
import type { Message, SourceType } from './message.js';
import type { SessionMetadata } from './session.js';
import type { ToolDefinition } from './tool-definition.js';

/** The agent running a provider or tool, narrowed to what they may use: no way to start another run. */
export interface AgentView {
  /** The agent's name, as diagnostics show it. */
  readonly name: string;
  /** The model the run calls. */
  readonly client: ChatClient;
  /** The providers of this run, outermost first (the default history included when the agent added it). */
  readonly contextProviders: readonly ContextProvider[];
}

/** The session of a run, as providers and tools see it: its ids and the providers' state slots. */
export interface SessionView {
  /** The session's id. */
  readonly sessionId: string;
  /** Set when the service keeps the conversation. */
  readonly serviceSessionId: string | undefined;
  /** Every provider's JSON slot, keyed by `sourceId`. Must stay plain JSON. */
  readonly state: Record<string, JsonObject>;
  /** Times, owner, title and custom fields; a provider may set `title` (and nothing else). */
  readonly metadata: SessionMetadata;
  /** The state slot of `sourceId`, created as `{}` when absent. */
  stateOf(sourceId: string): JsonObject;
}

/** Instructions added by one source. */
export interface SourcedInstructions {
  /** The provider that added them. */
  sourceId: string;
  /** The instructions. */
  text: string;
}

/** Which messages `SessionContext.getMessages` returns. */
export interface GetMessagesOptions {
  /** Only these sources (default: every source). */
  sources?: readonly string[];
  /** Leave these sources out. */
  excludeSources?: readonly string[];
  /** Append the run's input messages. Default false. */
  includeInput?: boolean;
  /** Append the response messages, once there is a response. Default false. */
  includeResponse?: boolean;
}

/**
 * Everything one run assembles for the model, attributed to the source that added it. Built fresh
 * for every run and handed to each provider and tool; providers add to it, never replace it.
 */
export interface SessionContext {
  /** The run's session id. */
  readonly sessionId: string;
  /** The service conversation id, when the service keeps the conversation. */
  readonly serviceSessionId: string | undefined;
  /** The caller's input for this run, attributed as `input`. */
  readonly inputMessages: readonly Message[];
  /** The caller's options for this run. */
  readonly options: Readonly<ChatOptions>;
  /** Free-form data providers may share within one run. */
  readonly metadata: Record<string, unknown>;
  /**
   * The model's answer, set before `afterRun` hooks run. Final from then on: history stores it and
   * the caller gets it, so replacing it in `afterRun` (or in `wrap` after `next()`) throws a
   * `ConfigurationError`.
   */
  response: AgentResponse | undefined;
  /** Why the run failed, set before `afterRun` hooks run; history providers store nothing then. */
  error: unknown;
  /** Context messages by source, in the order sources first added them. */
  readonly contextMessages: ReadonlyMap<string, readonly Message[]>;
  /** Instructions in order: the agent's own (source `agent`), then each provider's, stable and per-run. */
  readonly instructions: readonly SourcedInstructions[];
  /**
   * Tools of this run: the agent's, then the run's own (`options.tools`), then those providers added
   * (stamped with their `sourceId`). Names are unique: one name, one tool (the same tool object given
   * twice, to the agent and to a run, say, is offered once).
   */
  readonly tools: readonly Tool[];
  /**
   * Adds messages from `sourceId`, stamped `metadata.ctx = { sourceId, sourceType }`
   * (`sourceType` defaults to `'context'`; history providers pass `'history'`).
   */
  extendMessages(sourceId: string, messages: readonly Message[], sourceType?: SourceType): void;
  /**
   * Replaces what `sourceId` added with `messages` (attributed like before). For compaction, which
   * rewrites the history view; other providers add, they do not replace.
   */
  replaceMessages(sourceId: string, messages: readonly Message[]): void;
  /** Adds instructions from `sourceId`. */
  extendInstructions(sourceId: string, text: string | readonly string[]): void;
  /**
   * Adds tools from `sourceId`, stamped `tool.metadata.ctx.sourceId`. One name, one tool: a tool never
   * replaces another, as a run's `options.tools` never replace the agent's. A tool object the run
   * already offers is left out (offered once).
   * @throws ConfigurationError when a tool's name is already taken in this run by another tool (the agent's, the
   *   run's `options.tools` or another provider) or appears twice in `tools`; none of them is added then.
   */
  extendTools(sourceId: string, tools: readonly Tool[]): void;
  /**
   * Context messages in prompt order, filtered: those of stable sources, then history, then those
   * of per-run sources (see `ContextProvider.stability`), each group in source order. With
   * `includeInput`, the instructions of per-run sources follow as system messages, then the input;
   * then the response with `includeResponse`.
   */
  getMessages(options?: GetMessagesOptions): Message[];
  /** The instructions of stable sources joined into one text, or undefined when there are none. */
  getInstructions(): string | undefined;
  /** Counts of what `sourceId` has added so far. */
  contributionOf(sourceId: string): Contribution;
  /** Removes everything `sourceId` added (a failing `onError: 'skip'` provider, a budget that trims). */
  removeSource(sourceId: string): void;
}

/** What a tool's `execute` receives besides its arguments: the same view of the run providers get. */
export interface ToolExecuteOptions {
  /** The id of the function call being answered. */
  callId: string;
  /** Aborted when the run is. */
  signal: AbortSignal;
  /** The agent running the tool (a narrow view). */
  agent: AgentView;
  /** The session of the run. */
  session: SessionView;
  /** The run's context. */
  context: SessionContext;
}

/** The outcome of `Tool.validate`. */
export type ToolValidation<T> =
  | {
      /** The arguments are valid. */
      success: true;
      /** The arguments as the tool receives them (parsed, defaults applied). */
      value: T;
    }
  | {
      /** The arguments are not valid. */
      success: false;
      /** What is wrong, one line each (`path: message`); sent back to the model. */
      issues: string[];
    };

/** A function the model can call. Without `execute`, a call ends the run and is returned to the caller. */
export interface Tool<TArgs = unknown, TResult = unknown> extends ToolDefinition {
  /** Runs the tool with validated arguments; what it returns (JSON) goes back to the model. A throw becomes an error result. */
  execute?(args: TArgs, options: ToolExecuteOptions): TResult | Promise<TResult>;
  /**
   * Validates parsed arguments before `execute` (set by `defineTool` for Standard Schema parameters).
   * Without it, the agent's `toolValidator` checks the arguments against `parameters`, if it has one.
   */
  validate?(args: unknown): Promise<ToolValidation<TArgs>>;
  /**
   * Whether a call waits for the caller's approval before `execute` runs: `true`, or a function of
   * the checked arguments. A call that waits ends the run with `pendingApprovals`; the session keeps
   * it until `agent.run([], { session, approvals })` answers it. Default: never.
   */
  needsApproval?: boolean | ToolApprovalCheck<TArgs>;
}

/**
 * Decides whether one call of a tool needs approval, from its checked arguments. A check that
 * throws answers the call with an error result; the tool does not run.
 */
// A method's parameters are bivariant, so a `Tool<{ city: string }>` is still a `Tool`.
export type ToolApprovalCheck<TArgs = unknown> = {
  check(args: TArgs, options: ToolExecuteOptions): boolean | Promise<boolean>;
}['check'];

/** What every provider hook receives. */
export interface ProviderRunArgs<TState extends JsonObject = JsonObject> {
  /** The agent running this run, narrowed to its name, client and this run's providers. */
  agent: AgentView;
  /** The session of the run (ids and state slots). */
  session: SessionView;
  /** The run's context: add messages, instructions and tools to it. */
  context: SessionContext;
  /** This provider's own JSON slot, `session.state[sourceId]`, created as `{}` before its first run. Mutate it. */
  state: TState;
  /** Aborts with the run (or the provider's `timeoutMs`); pass it to every call you make. */
  signal: AbortSignal;
  /**
   * Sends a diagnostic to the agent's `onEvent` as a `provider-diagnostic` event attributed to this
   * provider (an audit, a budget report, a background failure). It stays usable after the run ends,
   * for work that finishes later. Never put message text in it.
   */
  report(diagnostic: ProviderDiagnostic): void;
  /**
   * The messages as this provider may write them anywhere (a history, a memory service): the agent's
   * `redact` applied (e.g. personal data masked), or the same messages when it has none. Ids and
   * order are kept. The model still sees the originals in this run. Call it before every write.
   * The agent always sets it; a caller that builds these arguments itself (a provider's unit test)
   * may leave it out, which means the messages as they are: write `redact ? await redact(m) : m`.
   */
  redact?(messages: readonly Message[]): Promise<Message[]>;
}

/** What `onSessionDeleted` receives. */
export interface SessionHookArgs<TState extends JsonObject = JsonObject> {
  /** The agent deleting the session (a narrow view). */
  agent: AgentView;
  /** The session being deleted, as stored (or as passed). */
  session: SessionView;
  /** This provider's state slot of that session (`{}` when it had none). */
  state: TState;
  /** Aborts the hook; pass it to every call you make. */
  signal: AbortSignal;
}

/**
 * What `onRewind` receives: the session's history is about to lose its newest messages
 * (`agent.rewindSession`, or `agent.regenerate` replacing a turn's answer).
 */
export interface RewindArgs<TState extends JsonObject = JsonObject> {
  /** The agent rewinding (a narrow view). */
  agent: AgentView;
  /** The session being rewound. */
  session: SessionView;
  /** This provider's state slot of the session (`{}` when it has none). */
  state: TState;
  /** The messages leaving the history (the one a run loads), oldest first. */
  removed: readonly Message[];
  /** The messages that stay, oldest first. */
  kept: readonly Message[];
  /** Aborts the hook; pass it to every call you make. */
  signal: AbortSignal;
}

/** What `onSessionForked` receives: a new session that starts with a copy of another's history. */
export interface SessionForkedArgs<TState extends JsonObject = JsonObject> {
  /** The agent forking (a narrow view). */
  agent: AgentView;
  /** The session forked (unchanged). */
  source: SessionView;
  /** The fork. */
  session: SessionView;
  /** This provider's state slot of the fork (a copy of the source's; `{}` when it had none). Write to it to keep changes. */
  state: TState;
  /** The fork's history as copied (the one a run loads), oldest first. */
  messages: readonly Message[];
  /** Aborts the hook; pass it to every call you make. */
  signal: AbortSignal;
}

/** What the user-data hooks (`exportUserData`, `deleteUserData`) receive. */
export interface UserDataArgs {
  /** The agent exporting or deleting (a narrow view). */
  agent: AgentView;
  /** The user: the `metadata.userId` of their sessions. */
  userId: string;
  /** Aborts the hook; pass it to every call you make. */
  signal: AbortSignal;
}

/** What `ContextProvider.mergeState` receives: the three versions of the provider's state slot. */
export interface MergeStateArgs<TState extends JsonObject = JsonObject> {
  /** The slot as the session was loaded from the store (`{}` when it had none, or was new). */
  base: TState;
  /** The slot as the session being saved has it (this process's run). */
  ours: TState;
  /** The slot as it is stored now (written by another run since the session was loaded). */
  theirs: TState;
  /** The slot's JSON path, e.g. `$.state.memory`, for error messages. */
  path: string;
  /** The session's id. */
  sessionId: string;
}

/** What a provider reports through `ProviderRunArgs.report`. */
export interface ProviderDiagnostic {
  /** Machine-readable kind, e.g. `context-audit` or `background-write-failed`. */
  code: string;
  /** What happened, for people. */
  message: string;
  /** Details as JSON: ids, counts, never message text. */
  data?: JsonObject;
  /** The error behind it, if any. */
  error?: unknown;
}

/**
 * A step of the context pipeline. Either hooks (`beforeRun` in list order, `afterRun` in reverse)
 * or around advice (`wrap`). Providers are stateless: one instance serves any number of concurrent
 * sessions, and per-session data lives only in `state`.
 */
export interface ContextProvider<TState extends JsonObject = JsonObject> {
  /** The contract version this provider implements. Absent means `'v1'`. */
  readonly specificationVersion?: 'v1';
  /** Unique within an agent; also the key of the provider's state slot and its attribution. */
  readonly sourceId: string;
  /** Runs before the model call: add messages, instructions or tools to `context`. */
  beforeRun?(args: ProviderRunArgs<TState>): void | Promise<void>;
  /** Runs after the model call (or a failure: see `context.error`), in reverse order. */
  afterRun?(args: ProviderRunArgs<TState>): void | Promise<void>;
  /**
   * Runs once the run's turn is stored: after every `afterRun` of a run that succeeded, or, in a
   * hosted run (`agent.run(input, { sessionId })`), once the session is saved (also when the save
   * failed but its `turnStored` says the history holds the turn). Derive here what must exist only
   * for stored messages (recall vectors), so a reply that was never stored (a failed store or save,
   * an abort, a discarded attempt) leaves nothing behind. Bounded like the other hooks; a failure is
   * a `turn-stored-failed` diagnostic, never the run's failure (the turn is stored). State changed
   * here is not saved by a hosted run: change state in `afterRun`.
   */
  onTurnStored?(args: ProviderRunArgs<TState>): void | Promise<void>;
  /**
   * Around advice: do work, `await next()` to run the rest of the pipeline and the model, then
   * do more. `next()` never throws: a failure further in is in `context.error`.
   */
  wrap?(args: ProviderRunArgs<TState>, next: () => Promise<void>): Promise<void>;
  /** `'throw'` (default) fails the run; `'skip'` leaves this provider out of the run and emits a diagnostic. */
  readonly onError?: 'throw' | 'skip';
  /**
   * How often what this provider adds changes, so the request keeps a stable start that the model
   * service's prompt cache can reuse. `'stable'`: its instructions and tools lead the request and
   * its messages go before the history. `'per-run'`: its messages and instructions go after the
   * history, just before the input (instructions as a system message there), and its tools after
   * the stable ones. Default: instructions and tools are stable, messages per-run (retrieved
   * documents and memories change with every question).
   */
  readonly stability?: 'stable' | 'per-run';
  /**
   * Bounds each hook: `beforeRun`, `afterRun`, and the time `wrap` spends outside `next()`. A hook
   * still running then is abandoned and counts as failed (`onError` decides). Default: the agent's
   * `providerTimeoutMs`, else no limit. Aborting the run ends it at once either way. `undefined`
   * means the same as absent (so a class may declare `timeoutMs: number | undefined`).
   * `onSessionForked` is not bounded by it: its work grows with the history, and it runs under the
   * signal of `agent.forkSession` only, as the copies of the histories do.
   */
  readonly timeoutMs?: number | undefined;
  /**
   * Waits for work the provider does in the background (e.g. memory writes); `agent.flush()` calls
   * it with its signal. Should stop waiting (and reject with the reason) when `signal` aborts, while
   * the work itself carries on. With `sessionId` (`agent.flush({ session })`), it need only wait for
   * that session's work; a provider that ignores it waits for all of it, which is also correct.
   */
  flush?(options?: { signal?: AbortSignal; sessionId?: string }): Promise<unknown>;
  /**
   * Merges this provider's state slot when two saves of one session both changed it (two runs at
   * once on one conversation): `agent.saveSession` calls it with the slot as the session was loaded
   * (`base`), as this save has it (`ours`) and as it is stored now (`theirs`); an absent slot is
   * `{}`. Return the merged slot (plain JSON, not one of the arguments changed in place), or
   * undefined when the two cannot be merged: the save is then a `ConcurrencyError`. Without it, a
   * slot changed by both saves is always a `ConcurrencyError`. Must be pure: it may run more than
   * once for one save (when the stored session changes again meanwhile).
   */
  mergeState?(args: MergeStateArgs<TState>): TState | undefined;
  /**
   * Runs once per session, before this provider's first hook on it (its state slot is new): prepare
   * the slot or anything the provider keeps elsewhere. The slot is kept from then on, even empty,
   * so a later run does not call it again. Failures count as the provider's (`onError` decides).
   */
  onSessionCreated?(args: ProviderRunArgs<TState>): void | Promise<void>;
  /**
   * `agent.deleteSession` calls it before the session leaves the store: drop everything this
   * provider keeps for the session elsewhere (history providers clear its messages). A throw stops
   * the delete: the session stays stored, so the delete can be retried. Must be idempotent: it runs
   * again right after the store's delete (for a hosted turn that stored meanwhile), and a hosted run
   * calls it when the session was deleted while its turn ran, to remove what the turn stored.
   */
  onSessionDeleted?(args: SessionHookArgs<TState>): void | Promise<void>;
  /**
   * `agent.rewindSession` and `agent.regenerate` call it before any history is cut: drop what this
   * provider derived from `removed` elsewhere (e.g. their vectors), so nothing brings back a message
   * the history no longer holds. A throw stops the rewind with nothing removed, so it can be
   * retried. Must be idempotent.
   */
  onRewind?(args: RewindArgs<TState>): void | Promise<void>;
  /**
   * `agent.forkSession` calls it after the histories are copied: copy what this provider keeps
   * elsewhere for the source session's `messages` to the fork. A throw fails the fork (the copied
   * history is removed again). When the fork fails after this hook started (its own throw, another
   * provider's, an abort), the agent calls `onSessionDeleted` with the fork, so implement it to
   * remove what this hook copied.
   */
  onSessionForked?(args: SessionForkedArgs<TState>): void | Promise<void>;
  /**
   * `agent.exportUserData` calls it: what this provider keeps about the user outside their sessions
   * (e.g. long-term memories), as JSON, or undefined when nothing.
   */
  exportUserData?(args: UserDataArgs): Promise<JsonValue | undefined>;
  /**
   * `agent.deleteUserData` calls it after every session of the user is deleted: drop what this
   * provider keeps about the user outside their sessions. Must be idempotent.
   */
  deleteUserData?(args: UserDataArgs): Promise<void>;
  /**
   * Checks a restored session's state slot. Throw `SessionStateError` with a path under `path`
   * (e.g. `$.state.memory`) when it is malformed.
   */
  validateState?(state: JsonObject, path: string): void;
}
