import { ConcurrencyError, ConfigurationError, HistoryProvider, InvalidInputError, type JsonObject, type Message } from '@ctx/core';
import { checkSessionId, shortId } from '@ctx/core/backend';
import type { AgentInputItem, Session, SessionHistoryTransactionArgs, SessionHistoryTransactionAwareSession } from '@openai/agents-core';
import { itemToMessage, messagesToItems, messageToItems } from './agent-items.js';
import { appliedDigest, checkTransaction, keptBeforeSuffix, transactionDigest, transactionMessages } from './history-transaction.js';

/** Options of `CtxSession`. */
export interface CtxSessionOptions {
  /** Where the conversation is kept: any ctx history provider (`RedisHistoryProvider`, `CosmosHistoryProvider`, `InMemoryHistoryProvider`, your own). */
  history: HistoryProvider;
  /** The conversation's id in the history provider. Default: a new random UUID. */
  sessionId?: string;
  /**
   * The provider's state slot for this session (`InMemoryHistoryProvider` keeps the messages in it;
   * a Cosmos DB `scope` resolver reads it). Default: a new empty object, kept by the session.
   */
  state?: JsonObject;
  /** Aborts every call the session makes to the provider (a long-lived signal, e.g. the app's shutdown). */
  signal?: AbortSignal;
}

/**
 * An OpenAI Agents SDK `Session` backed by a ctx history provider, so `run(agent, input, { session })`
 * keeps its conversation in Redis, Cosmos DB or any ctx backend, with that backend's guarantees
 * (windowed loads, atomic appends, retention and TTL). Each Agents item is stored as one ctx message
 * (`itemToMessage`) and read back exactly; messages a ctx agent stored in the same history are
 * read as the matching items too.
 *
 * `getItems()` without a limit loads the provider's `maxMessages` window when it has one, without
 * the tool outputs whose call the window cut off; `getItems(limit)` gives what `MemorySession` does.
 * `popItem` needs the provider's `popMessages` capability; `clearSession` its `replaceMessages`.
 * @throws ConfigurationError from the constructor when `history` is not a ctx history provider or
 *   `sessionId` is blank.
 */
export class CtxSession implements Session, SessionHistoryTransactionAwareSession {
  /** The history provider in use. */
  readonly history: HistoryProvider;
  /** The provider's state slot for this session. */
  readonly state: JsonObject;
  readonly #sessionId: string;
  readonly #signal: AbortSignal | undefined;

  constructor(options: CtxSessionOptions) {
    if (!HistoryProvider.isInstance(options?.history)) {
      throw new ConfigurationError('CtxSession: history must be a ctx HistoryProvider (e.g. new RedisHistoryProvider({ url })).');
    }
    this.history = options.history;
    this.#sessionId = checkSessionId(options.sessionId ?? crypto.randomUUID());
    this.state = options.state ?? {};
    this.#signal = options.signal;
  }

  /** The conversation's id in the history provider. */
  async getSessionId(): Promise<string> {
    return this.#sessionId;
  }

  /**
   * The newest `limit` items, oldest first, exactly as the SDK's `MemorySession` gives them: none
   * for a `limit` of 0 or less, all for `NaN` or `Infinity`, the newest `Math.ceil(limit)` for a
   * fraction. One windowed load when each message holds one item.
   *
   * Without a limit: every item, or, when the provider has `maxMessages`, that window of the newest
   * items without the tool outputs whose call the window cut off (a `function_call_result` before
   * its `function_call`, which the model service refuses), as ctx's own history load does.
   */
  async getItems(limit?: number): Promise<AgentInputItem[]> {
    if (limit === undefined) {
      const window = this.history.maxMessages;
      return window === undefined
        ? messagesToItems((await this.#load(undefined)).messages)
        : withoutOrphanOutputs(await this.#newest(window));
    }
    // The comparison and the arithmetic MemorySession does: `limit <= 0` gives none, then `slice(length - limit)`.
    if (limit <= 0) return [];
    const count = Math.ceil(Number(limit));
    return Number.isSafeInteger(count) ? this.#newest(count) : messagesToItems((await this.#load(undefined)).messages);
  }

  /** Appends items in order, in one `saveMessages` call (one round trip on Redis). */
  async addItems(items: AgentInputItem[]): Promise<void> {
    if (items.length === 0) return;
    const createdAt = new Date().toISOString();
    const messages = items.map((item) => itemToMessage(item, { createdAt }));
    await this.history.saveMessages(this.#sessionId, messages, this.#args());
  }

  /**
   * Removes the newest item and resolves to it (undefined when the session is empty), through the
   * provider's `popMessages`. A message a ctx agent stored that maps to several items is popped
   * whole and the items before the last are stored again.
   * @throws ConfigurationError when the provider has no `popMessages` capability.
   */
  async popItem(): Promise<AgentInputItem | undefined> {
    const pop = this.history.popMessages;
    if (typeof pop !== 'function') {
      throw new ConfigurationError(
        `CtxSession.popItem: the history provider ${this.history.constructor.name} ("${this.history.sourceId}") cannot pop messages (no popMessages). Use a provider that can (InMemoryHistoryProvider, RedisHistoryProvider, CosmosHistoryProvider).`,
      );
    }
    for (;;) {
      const [message] = await pop.call(this.history, this.#sessionId, { ...this.#args(), count: 1 });
      if (message === undefined) return undefined;
      const items = messageToItems(message);
      const last = items.pop();
      if (last === undefined) continue; // a message with nothing the Agents SDK can read: pop the next one
      if (items.length > 0) await this.addItems(items);
      return last;
    }
  }

  /**
   * Removes every item of the session, through the provider's `replaceMessages` (atomic on Redis).
   * @throws ConfigurationError when the provider has no `replaceMessages` capability.
   */
  async clearSession(): Promise<void> {
    const replace = this.history.replaceMessages;
    if (typeof replace !== 'function') {
      throw new ConfigurationError(
        `CtxSession.clearSession: the history provider ${this.history.constructor.name} ("${this.history.sourceId}") cannot rewrite history (no replaceMessages).`,
      );
    }
    await replace.call(this.history, this.#sessionId, [], this.#args());
  }

  /** The newest `count` items (a positive integer). */
  async #newest(count: number): Promise<AgentInputItem[]> {
    // A message a ctx agent stored may map to several items or none: widen the window until it holds enough.
    for (let window = count; ; window *= 2) {
      const { messages, complete } = await this.#load(window);
      const items = messagesToItems(messages);
      if (items.length >= count || complete) return items.length > count ? items.slice(items.length - count) : items;
    }
  }

  /**
   * Applies a change of the history once, as the Agents runner asks when an output guardrail trips
   * (`SessionHistoryTransactionAwareSession`): `append_items` stores the blocked turn (input, tool
   * calls and their results, output), `replace_suffix` swaps the newest items, if they are still
   * `expectedSuffix`, for `replacement`. The messages it writes carry the operation id and a digest
   * of the transaction in their metadata (`agentsTransaction`), in the same provider write as the
   * change (`saveMessages`, or `replaceMessages` when the suffix is not empty), and get ids made
   * from the operation id, so the provider skips a retried write. Applying an operation id again
   * with the same transaction changes nothing, as long as a message it wrote is still stored.
   * Reads the whole history once. The suffix check and the write are two steps: run one turn per
   * session at a time (the runner does), or a write in between is lost.
   * @throws InvalidInputError for malformed arguments, or an operation id already applied with
   *   another transaction; nothing is changed.
   * @throws ConcurrencyError when the newest items are not `expectedSuffix`; nothing is changed.
   * @throws ConfigurationError for a `replace_suffix` with a non-empty `expectedSuffix` on a provider
   *   without `replaceMessages`.
   * @throws SessionStateError from the provider for an item that is not plain JSON (naming its
   *   path); nothing is stored.
   */
  async applyHistoryTransaction(args: SessionHistoryTransactionArgs): Promise<void> {
    const { operationId, transaction } = checkTransaction(args, this.#sessionId);
    const digest = await transactionDigest(transaction);
    const { messages: stored } = await this.#load(undefined);
    const applied = appliedDigest(stored, operationId);
    if (applied === digest) return;
    if (applied !== undefined) {
      throw new InvalidInputError(
        `CtxSession.applyHistoryTransaction: operation ${shortId(operationId)} was already applied to session ${shortId(this.#sessionId)} with a different transaction; nothing was changed. Give a new change a new operationId.`,
      );
    }
    const tag = { operation: operationId, digest };
    if (transaction.type === 'append_items') {
      await this.history.saveMessages(this.#sessionId, await transactionMessages(transaction.items, tag), this.#args());
      return;
    }
    const kept = keptBeforeSuffix(stored, transaction.expectedSuffix);
    if (kept === undefined) {
      throw new ConcurrencyError(
        this.#sessionId,
        `CtxSession.applyHistoryTransaction: the newest ${transaction.expectedSuffix.length} item(s) of session ${shortId(this.#sessionId)} are not the expected suffix of operation ${shortId(operationId)} (the history changed since the run read it); nothing was changed. Start a new run from the stored history.`,
      );
    }
    const written = await transactionMessages(transaction.replacement, tag);
    if (transaction.expectedSuffix.length === 0) {
      await this.history.saveMessages(this.#sessionId, written, this.#args());
      return;
    }
    const replace = this.history.replaceMessages;
    if (typeof replace !== 'function') {
      throw new ConfigurationError(
        `CtxSession.applyHistoryTransaction: the history provider ${this.history.constructor.name} ("${this.history.sourceId}") cannot rewrite history (no replaceMessages), so it cannot replace the newest items of session ${shortId(this.#sessionId)}; nothing was changed. Use a provider that can (InMemoryHistoryProvider, RedisHistoryProvider, CosmosHistoryProvider).`,
      );
    }
    await replace.call(this.history, this.#sessionId, [...kept, ...written], this.#args());
  }

  async #load(limit: number | undefined): Promise<{ messages: Message[]; complete: boolean }> {
    const messages = await this.history.getMessages(this.#sessionId, { ...this.#args(), ...(limit === undefined ? {} : { limit }) });
    return { messages, complete: limit === undefined || messages.length < limit };
  }

  #args(): { state: JsonObject; signal?: AbortSignal } {
    return this.#signal ? { state: this.state, signal: this.#signal } : { state: this.state };
  }
}

/** Each tool output item type, to the type of the call item it answers (by call id). */
const CALL_OF_OUTPUT: ReadonlyMap<unknown, string> = new Map([
  ['function_call_result', 'function_call'],
  ['computer_call_result', 'computer_call'],
  ['shell_call_output', 'shell_call'],
  ['apply_patch_call_output', 'apply_patch_call'],
  ['program_output', 'program'],
  ['tool_search_output', 'tool_search_call'],
]);

function callIdOf(item: AgentInputItem): string | undefined {
  const { callId, call_id } = item as { callId?: unknown; call_id?: unknown };
  const id = callId ?? call_id;
  return typeof id === 'string' ? id : undefined;
}

/**
 * A window of items without the tool outputs whose call is not before them in it: the window's
 * start cut the call off (also one of several parallel calls, each its own item), and the model
 * service refuses an output without its call.
 */
function withoutOrphanOutputs(items: AgentInputItem[]): AgentInputItem[] {
  const calls = new Set<string>();
  const kept: AgentInputItem[] = [];
  for (const item of items) {
    const id = callIdOf(item);
    if (id !== undefined) {
      const call = CALL_OF_OUTPUT.get(item.type);
      if (call !== undefined && !calls.has(`${call}\n${id}`)) continue;
      if (call === undefined) calls.add(`${item.type}\n${id}`);
    }
    kept.push(item);
  }
  return kept.length === items.length ? items : kept;
}
