import type { OptionFlags } from '../backend/checks.js';
import { dropLeadingResults } from '../compaction/message-groups.js';
import { shortId } from '../backend/checks.js';
import { ConfigurationError, InvalidInputError } from '../errors.js';
import { Message } from '../messages/message.js';
import type { ChatClient, ChatOptions } from '../contracts/chat-client.js';
import type { ClearHistoryArgs, ForkHistoryArgs, GetHistoryArgs, PopHistoryArgs, SaveHistoryArgs } from '../contracts/history.js';
import type { ContextProvider, ProviderRunArgs, SessionContext, SessionHookArgs, SessionView } from '../contracts/run-view.js';
import { sameMessageContent } from './message-conflict.js';
import { noteReplacedMessages } from './replaced-messages.js';
import { findRetriedTurn, type StoredTurn } from './retried-turn.js';

/** Options every history provider takes. */
export interface HistoryProviderOptions {
  /** Default: chosen by each backend (`memory` for the in-memory one). */
  sourceId?: string;
  /**
   * Load stored messages before each run. `'auto'` (default) loads unless the service keeps the
   * conversation: the session has a `serviceSessionId`, or `options.store === true`, or the client
   * stores by default and `options.store !== false`. `false` makes a store-only provider (an audit log).
   */
  loadMessages?: boolean | 'auto';
  /** Store the run's input messages. Default true. */
  storeInputs?: boolean;
  /** Store the run's response messages (replies, function calls and results). Default true. */
  storeOutputs?: boolean;
  /** Store messages other providers injected (never other history). Default false. */
  storeContextMessages?: boolean;
  /** Store injected messages from these sources only (implies storing context). */
  storeContextFrom?: readonly string[];
  /** The window loaded per run: at most this many of the newest messages. Default: all. */
  maxMessages?: number;
  /** Default `'throw'`: a history that cannot be loaded or saved fails the run. */
  onError?: 'throw' | 'skip';
}

/**
 * Whether the service keeps this conversation, so nothing needs loading: the session has a
 * `serviceSessionId`, or the run asks for `store: true`, or the client stores by default and the
 * run does not pass `store: false`. The `'auto'` load rule and the default-history rule both use it.
 */
export function serviceKeepsConversation(
  client: ChatClient,
  session: Pick<SessionView, 'serviceSessionId'>,
  options: Pick<ChatOptions, 'store'>,
): boolean {
  if (session.serviceSessionId !== undefined || options.store === true) return true;
  return client.storesByDefault === true && options.store !== false;
}

const historyMarker = Symbol.for('ctx.history-provider');

/** `messages` without the entries of `turn` (those before and after it stay, in order). */
export function withoutTurn<T>(messages: readonly T[], turn: StoredTurn): T[] {
  return [...messages.slice(0, Math.max(0, turn.start)), ...messages.slice(Math.max(0, turn.end))];
}

/**
 * How many of `messages` a fork at `atMessageId` keeps: up to and including that message, or all.
 * @throws InvalidInputError naming the provider when the message is not among them (the caller's mistake).
 */
export function forkLength(sourceId: string, messages: readonly unknown[], atMessageId: string | undefined): number {
  if (atMessageId === undefined) return messages.length;
  const at = messages.findIndex((m) => (m as { id?: unknown } | null)?.id === atMessageId);
  if (at === -1) {
    throw new InvalidInputError(
      `History provider "${sourceId}": message ${JSON.stringify(atMessageId)} is not in the history of the session forked; nothing was copied.`,
    );
  }
  return at + 1;
}

/** Every option of `HistoryProviderOptions`, for the option check of a history provider: spread it into the names of your own (`optionNames`). */
export const HISTORY_PROVIDER_OPTIONS: OptionFlags<HistoryProviderOptions> = {
  sourceId: true,
  loadMessages: true,
  storeInputs: true,
  storeOutputs: true,
  storeContextMessages: true,
  storeContextFrom: true,
  maxMessages: true,
  onError: true,
};

/**
 * A context provider with storage: it loads the conversation before a run and stores the turn
 * after it, as its options say. A backend extends it and implements two methods.
 */
export abstract class HistoryProvider implements ContextProvider {
  private readonly [historyMarker] = true;
  readonly specificationVersion = 'v1';
  readonly sourceId: string;
  /** When the provider loads history before a run (`'auto'`, `true`, `false`). */
  readonly loadMessages: boolean | 'auto';
  /** Whether the run's input messages are stored. */
  readonly storeInputs: boolean;
  /** Whether the model's replies, function calls and results are stored. */
  readonly storeOutputs: boolean;
  /** Whether messages other providers injected are stored too. */
  readonly storeContextMessages: boolean;
  /** Store injected messages only from these source ids. */
  readonly storeContextFrom: readonly string[] | undefined;
  /** The newest messages loaded per run; undefined loads all. */
  readonly maxMessages: number | undefined;
  readonly onError: 'throw' | 'skip';
  /** Per run: how many of the run's response messages are stored (the turn is opened once an entry exists). */
  readonly #stored = new WeakMap<SessionContext, number>();
  /** Runs whose whole turn (input and response) this provider stored. */
  readonly #wholeTurns = new WeakSet<SessionContext>();

  constructor(options: HistoryProviderOptions & { sourceId: string }) {
    this.sourceId = options.sourceId;
    this.loadMessages = options.loadMessages ?? 'auto';
    this.storeInputs = options.storeInputs ?? true;
    this.storeOutputs = options.storeOutputs ?? true;
    this.storeContextMessages = options.storeContextMessages ?? false;
    this.storeContextFrom = options.storeContextFrom;
    this.maxMessages = options.maxMessages;
    this.onError = options.onError ?? 'throw';
    if (this.maxMessages !== undefined && !(Number.isInteger(this.maxMessages) && this.maxMessages > 0)) {
      throw new ConfigurationError(`History provider "${this.sourceId}": maxMessages must be a positive integer, got ${this.maxMessages}.`);
    }
  }

  /** Whether `value` is a history provider from any copy of `@ctx/core`. */
  static isInstance(value: unknown): value is HistoryProvider {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[historyMarker] === true;
  }

  /** The stored messages of a session, oldest first; the newest `limit` when a limit is given. */
  abstract getMessages(sessionId: string, args: GetHistoryArgs): Promise<Message[]>;

  /**
   * Appends messages to a session's history, in order. A message whose id is already stored with the
   * same content (`sameMessageContent` in `@ctx/core/backend`) is skipped: a retried save stores
   * nothing twice. One stored under its id with other content refuses the whole batch: nothing is
   * written, a `message-id-conflict` diagnostic goes to `args.report`, and it throws the
   * `SessionStateError` of `messageIdConflict`. A batch of a run carries `args.turn`: see `HistoryTurn`.
   */
  abstract saveMessages(sessionId: string, messages: readonly Message[], args: SaveHistoryArgs): Promise<void>;

  /**
   * Optional capability: replaces a session's whole stored history with `messages` (compaction
   * rewrites history through it). Backends that can do it atomically implement it.
   */
  replaceMessages?(sessionId: string, messages: readonly Message[], args: SaveHistoryArgs): Promise<void>;

  /**
   * Optional capability: removes the newest `count` (default 1) stored messages of a session and
   * resolves to them, oldest first; fewer when fewer are stored, `[]` when none are (undo the last
   * turn, the Agents SDK's `popItem`). A popped message id may be saved again.
   * @throws ConfigurationError when `count` is not a positive integer, before anything changes.
   */
  popMessages?(sessionId: string, args: PopHistoryArgs): Promise<Message[]>;

  /**
   * Optional capability: removes everything stored for a session (its messages and any bookkeeping),
   * so nothing of it remains; resolves when done, also when nothing was stored. `onSessionDeleted`
   * uses it (else `replaceMessages` with no messages).
   */
  clearMessages?(sessionId: string, args: ClearHistoryArgs): Promise<void>;

  /**
   * Copies a session's history (up to and including `atMessageId`, or all of it) to a new session,
   * for `agent.forkSession`; resolves to how many messages were copied. This default reads the whole
   * history (one `getMessages`) and saves the copy (one `saveMessages`, none when nothing is copied).
   * Backends that can copy on their server override it. `toState` starts as a copy of `fromState`:
   * a provider that keeps its messages in the state slot overrides it to cut that copy instead.
   * @throws InvalidInputError when `atMessageId` is not in the history (the caller's mistake), before
   *   anything is written.
   */
  async forkMessages(fromSessionId: string, toSessionId: string, args: ForkHistoryArgs): Promise<number> {
    const { fromState, toState, atMessageId, signal } = args;
    signal?.throwIfAborted();
    const messages = await this.getMessages(fromSessionId, { state: fromState, ...(signal ? { signal } : {}) });
    const end = forkLength(this.sourceId, messages, atMessageId);
    signal?.throwIfAborted();
    if (end > 0) await this.saveMessages(toSessionId, messages.slice(0, end), { state: toState, ...(signal ? { signal } : {}) });
    return end;
  }

  /**
   * Clears the session's stored messages when the session is deleted (`clearMessages`, else
   * `replaceMessages` with none).
   * @throws ConfigurationError when the backend can do neither: the delete stops rather than leave
   *   the conversation behind.
   */
  async onSessionDeleted({ session, state, signal }: SessionHookArgs): Promise<void> {
    if (this.clearMessages) return this.clearMessages(session.sessionId, { state, signal });
    if (this.replaceMessages) return this.replaceMessages(session.sessionId, [], { state, signal });
    throw new ConfigurationError(
      `History provider "${this.sourceId}" cannot delete a session's messages (no clearMessages or replaceMessages); the session was not deleted.`,
    );
  }

  /** Whether this run loads history, applying the `'auto'` rule. */
  shouldLoad({ agent, session, context }: Pick<ProviderRunArgs, 'agent' | 'session' | 'context'>): boolean {
    if (this.loadMessages !== 'auto') return this.loadMessages;
    return !serviceKeepsConversation(agent.client, session, context.options);
  }

  async beforeRun(args: ProviderRunArgs): Promise<void> {
    if (!this.shouldLoad(args)) return;
    const { context, state, signal, report } = args;
    const loaded = await this.getMessages(context.sessionId, {
      state,
      signal,
      report,
      ...(this.maxMessages ? { limit: this.maxMessages } : {}),
    });
    const ids = context.inputMessages.map((m) => m.id);
    const mayRetry = ids.length > 0 && loaded.some((m) => ids.includes(m.id));
    let retried: StoredTurn | undefined;
    if (mayRetry) {
      const inputs = await this.inputsAsStored(args);
      const byId = new Map(loaded.map((m) => [m.id, m]));
      this.checkInputIds(context.sessionId, inputs, (id) => byId.get(id));
      retried = this.retriedTurn(loaded, args, inputs);
      if (retried !== undefined) noteReplacedMessages(context.metadata, loaded, retried);
    }
    context.extendMessages(this.sourceId, dropLeadingResults(retried === undefined ? loaded : withoutTurn(loaded, retried)), 'history');
  }

  /**
   * The run's input messages as a store holds them: through the run's `redact` (when it has one),
   * so a stored earlier attempt of the turn compares equal to them.
   */
  protected async inputsAsStored({ context, redact }: Pick<ProviderRunArgs, 'context' | 'redact'>): Promise<readonly Message[]> {
    return redact ? redact(context.inputMessages) : context.inputMessages;
  }

  /**
   * Checks, before the model is called, that no input message reuses the id of another stored
   * message (`storedOf(id)`: what is stored under the id): the same message again is a retry,
   * other content under the same id is the caller's mistake.
   * @throws InvalidInputError naming the id, the session and the provider; nothing has run or been stored.
   */
  protected checkInputIds(sessionId: string, inputs: readonly Message[], storedOf: (id: string) => unknown): void {
    for (const input of inputs) {
      const stored = storedOf(input.id);
      if (stored === undefined || sameMessageContent(stored, input)) continue;
      throw new InvalidInputError(
        `Input message ${shortId(input.id)} has the id of another message stored in session ${shortId(sessionId)} (history "${this.sourceId}"): give every new message a new id, and send a message again only to retry it. Nothing was run or stored.`,
      );
    }
  }

  /**
   * Where a stored earlier attempt of this run's turn sits in `stored` (`findRetriedTurn` with the
   * run's input messages `inputs`, as `inputsAsStored` gives them), or undefined. A retried run
   * (same input messages, same ids) is sent the conversation without its earlier attempt (the turns
   * stored after it stay); this reports what it leaves out (`retried-turn`, counts only).
   */
  protected retriedTurn(
    stored: readonly unknown[],
    { context, report }: Pick<ProviderRunArgs, 'context' | 'report'>,
    inputs: readonly Message[],
  ): StoredTurn | undefined {
    const span = findRetriedTurn(
      stored,
      context.inputMessages.map((m) => m.id),
      inputs,
    );
    if (span !== undefined) this.reportRetriedTurn(stored.length, span, report);
    return span;
  }

  /** Reports (`retried-turn`, counts only) that a load leaves out the stored earlier attempt `span` of `stored` messages. */
  protected reportRetriedTurn(stored: number, span: StoredTurn, report: ProviderRunArgs['report']): void {
    const count = span.end - span.start;
    const after = stored - span.end;
    report({
      code: 'retried-turn',
      message: `${count} stored message(s) are an earlier attempt of this turn (same input messages)${after > 0 ? `, with ${after} newer message(s) after them` : ''}; the model is sent the conversation without them, and this run's turn replaces them in place when stored.`,
      data: { messages: count, after },
    });
  }

  /** Stores the run's turn, or what `persistence: 'model-call'` has not stored of it yet. Nothing for a failed run. */
  async afterRun(args: ProviderRunArgs): Promise<void> {
    const { context } = args;
    if (context.error !== undefined || !context.response) return;
    await this.storeProgress(args, context.response.messages);
    if (this.storeInputs && this.storeOutputs) this.#wholeTurns.add(context);
  }

  /**
   * Whether this provider stored the whole turn of the run with `context`: its input and its
   * response, `afterRun` done (not skipped, not failed). What a failed save's `turnStored` rests on.
   */
  storedWholeTurn(context: SessionContext): boolean {
    return this.#wholeTurns.has(context);
  }

  /**
   * Stores what this run has produced that is not stored yet: with `persistence: 'model-call'` the
   * agent calls it after every model call, and `afterRun` stores the rest. The first batch of a
   * run opens the turn (the context messages to store, then the input); later ones continue it
   * with the new response messages (model replies, function calls, tool results). Each batch is
   * one `saveMessages` call carrying `turn`, of the messages as `redact` gives them. Resolves to
   * whether it saved anything.
   */
  async storeProgress({ context, state, signal, report, redact }: ProviderRunArgs, produced: readonly Message[]): Promise<boolean> {
    const done = this.#stored.get(context);
    const toStore: Message[] = [];
    if (done === undefined) {
      if (this.storeContextFrom || this.storeContextMessages) {
        for (const m of context.getMessages({
          excludeSources: [this.sourceId],
          ...(this.storeContextFrom ? { sources: this.storeContextFrom } : {}),
        })) {
          if (Message.source(m)?.sourceType !== 'history') toStore.push(m);
        }
      }
      if (this.storeInputs) toStore.push(...context.inputMessages);
    }
    if (this.storeOutputs)
      for (let i = done ?? 0; i < produced.length; i++) toStore.push(Message.withSource(produced[i]!, 'response', 'response'));
    if (toStore.length) {
      const turn = { inputIds: context.inputMessages.map((m) => m.id), opens: done === undefined };
      await this.saveMessages(context.sessionId, redact ? await redact(toStore) : toStore, { state, signal, report, turn });
    }
    this.#stored.set(context, produced.length);
    return toStore.length > 0;
  }
}
