import { dropLeadingResults } from '../compaction/message-groups.js';
import { ConfigurationError } from '../errors.js';
import { Message } from '../messages/message.js';
import type { ChatClient, ChatOptions } from '../spec/chat-client.js';
import type { GetHistoryArgs, PopHistoryArgs, SaveHistoryArgs } from '../spec/history.js';
import type { ContextProvider, ProviderRunArgs, SessionView } from '../spec/run-view.js';

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

/**
 * A context provider with storage: it loads the conversation before a run and stores the turn
 * after it, as its options say. A backend extends it and implements two methods.
 */
export abstract class HistoryProvider implements ContextProvider {
  private readonly [historyMarker] = true;
  readonly specificationVersion = 'v1';
  readonly sourceId: string;
  readonly loadMessages: boolean | 'auto';
  readonly storeInputs: boolean;
  readonly storeOutputs: boolean;
  readonly storeContextMessages: boolean;
  readonly storeContextFrom: readonly string[] | undefined;
  readonly maxMessages: number | undefined;
  readonly onError: 'throw' | 'skip';

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

  /** Appends messages to a session's history, in order. Messages whose id is already stored may be skipped. */
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
    context.extendMessages(this.sourceId, dropLeadingResults(loaded), 'history');
  }

  async afterRun({ context, state, signal, report }: ProviderRunArgs): Promise<void> {
    if (context.error !== undefined || !context.response) return;
    const toStore: Message[] = [];
    if (this.storeContextFrom || this.storeContextMessages) {
      for (const m of context.getMessages({
        excludeSources: [this.sourceId],
        ...(this.storeContextFrom ? { sources: this.storeContextFrom } : {}),
      })) {
        if (Message.source(m)?.sourceType !== 'history') toStore.push(m);
      }
    }
    if (this.storeInputs) toStore.push(...context.inputMessages);
    if (this.storeOutputs) for (const m of context.response.messages) toStore.push(Message.withSource(m, 'response', 'response'));
    if (toStore.length) await this.saveMessages(context.sessionId, toStore, { state, signal, report });
  }
}
