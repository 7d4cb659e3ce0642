import { checkInteger, checkOptionNames, optionNames } from '../backend/checks.js';
import { dropLeadingResults } from '../compaction/message-groups.js';
import { SessionStateError } from '../errors.js';
import { frozenMessage, markAttributed } from '../messages/frozen.js';
import { describeValue, formatPath, jsonEqual, pathJoin } from '../messages/json.js';
import { Message } from '../messages/message.js';
import type { ClearHistoryArgs, ForkHistoryArgs, GetHistoryArgs, PopHistoryArgs, SaveHistoryArgs } from '../spec/history.js';
import type { JsonObject, JsonValue } from '../spec/json.js';
import type { MergeStateArgs, ProviderRunArgs } from '../spec/run-view.js';
import { forkLength, HISTORY_PROVIDER_OPTIONS, HistoryProvider, type HistoryProviderOptions } from './history-provider.js';
import { HistoryViews } from './history-views.js';
import { messageIdConflict, sameMessageContent } from './message-conflict.js';
import { noteReplacedMessages } from './replaced-messages.js';
import { storedTurnAt, type StoredTurn } from './retried-turn.js';

/** Checks every message of a batch before any is stored. */
function checkMessages(messages: readonly Message[]): void {
  if (!Array.isArray(messages)) throw new SessionStateError('$.messages', `must be an array of messages, got ${describeValue(messages)}`);
  for (let i = 0; i < messages.length; i++) Message.parse(messages[i], formatPath('$.messages', [i]));
}

/** The id of a stored entry, read defensively (a slot restored from JSON may hold anything). */
function idOf(entry: unknown): unknown {
  return (entry as { id?: unknown } | null)?.id;
}

const OPTION_NAMES = optionNames<HistoryProviderOptions>()(HISTORY_PROVIDER_OPTIONS);

/**
 * History kept in the session itself (`state.messages`), so it serializes with the session and
 * needs no backend. The agent adds one (sourceId `memory`) when a run has no other history.
 * Stored messages are frozen: loaded history is read-only (build new messages to change it).
 */
export class InMemoryHistoryProvider extends HistoryProvider {
  constructor(options: HistoryProviderOptions = {}) {
    checkOptionNames('InMemoryHistoryProvider', options, OPTION_NAMES);
    super({ ...options, sourceId: options.sourceId ?? 'memory' });
  }

  readonly #views = new HistoryViews(this.sourceId);

  /** Message ids of a stored list, kept per list while only this provider changes it (rebuilt when its length says otherwise). */
  readonly #indexes = new WeakMap<JsonValue[], { length: number; byId: Map<string, JsonValue> }>();

  async getMessages(_sessionId: string, { state, limit }: GetHistoryArgs): Promise<Message[]> {
    const all = this.#list(state);
    const start = limit === undefined ? 0 : Math.max(0, all.length - limit);
    const window: Message[] = [];
    for (let i = start; i < all.length; i++) window.push(this.#prepare(all, i));
    return window;
  }

  /**
   * Loads the window like `HistoryProvider.beforeRun`, without copying stored messages on every
   * run: each is attributed once and the frozen copy is reused while the message stays stored.
   */
  override async beforeRun(args: ProviderRunArgs): Promise<void> {
    // A subclass that reads its own way loads through its `getMessages`.
    if (this.getMessages !== InMemoryHistoryProvider.prototype.getMessages) return super.beforeRun(args);
    if (!this.shouldLoad(args)) return;
    const all = this.#list(args.state);
    const start = this.maxMessages === undefined ? 0 : Math.max(0, all.length - this.maxMessages);
    const loaded = this.#views.of(all, start, (i) => this.#prepare(all, i));
    const ids = args.context.inputMessages.map((m) => m.id);
    const index = this.#index(all);
    let retried: StoredTurn | undefined;
    if (ids.some((id) => index.has(id))) {
      const inputs = await this.inputsAsStored(args);
      this.checkInputIds(args.context.sessionId, inputs, (id) => index.get(id));
      retried = this.#storedTurn(all, ids, inputs);
    }
    if (retried !== undefined) {
      this.reportRetriedTurn(all.length, retried, args.report);
      noteReplacedMessages(args.context.metadata, all, retried);
    }
    const kept = dropLeadingResults(
      retried === undefined ? loaded : loaded.filter((_, i) => i + start < retried.start || i + start >= retried.end),
    );
    args.context.extendMessages(this.sourceId, markAttributed(kept, this.sourceId, 'history'), 'history');
  }

  /**
   * Stored messages are validated once and then frozen, so loading costs no copy and nothing a
   * run does to a loaded message can change the stored history (a write throws instead). A message
   * not stored by this provider (restored from JSON, put in the state by hand) is replaced by its
   * frozen copy: freezing the parsed object in place would leave V8 a slow dictionary of it.
   */
  #prepare(all: JsonValue[], index: number): Message {
    const m = all[index];
    if (Object.isFrozen(m)) return m as unknown as Message;
    const copy = frozenMessage(Message.parse(m, formatPath('$.state', [this.sourceId, 'messages', index])));
    all[index] = copy as unknown as JsonValue;
    const byId = this.#indexes.get(all)?.byId;
    if (byId !== undefined && byId.get(copy.id) === m) byId.set(copy.id, copy as unknown as JsonValue);
    return copy;
  }

  /**
   * Appends `messages`, skipping those whose id is stored with the same content (a retried save).
   * A batch of a run (`turn`) goes where its turn is stored: the opening batch (`turn.opens`)
   * replaces a stored earlier attempt of that turn in place (`findRetriedTurn`), so a retried run
   * stores its turn once, with its own reply; a later batch goes right after the turn.
   * @throws SessionStateError naming `$.messages[i]...` when a message is not plain JSON, or (from
   *   `messageIdConflict`, with a `message-id-conflict` diagnostic) when its id is stored with other
   *   content; nothing is stored either way.
   */
  async saveMessages(sessionId: string, messages: readonly Message[], { state, turn, report }: SaveHistoryArgs): Promise<void> {
    checkMessages(messages);
    const all = this.#list(state);
    const byId = this.#index(all);
    const inputs = turn ? messages.filter((m) => turn.inputIds.includes(m.id)) : [];
    const span = turn ? this.#storedTurn(all, turn.inputIds, inputs) : undefined;
    const replaced = turn?.opens === true && span !== undefined ? new Set(all.slice(span.start, span.end)) : undefined;
    const fresh: Message[] = [];
    const batch = new Map<string, Message>();
    messages.forEach((m, index) => {
      const conflict = () =>
        messageIdConflict({ sourceId: this.sourceId, sessionId, messageId: m.id, index, batchSize: messages.length, report });
      const earlier = batch.get(m.id);
      if (earlier !== undefined) {
        if (!sameMessageContent(earlier, m)) throw conflict();
        return;
      }
      batch.set(m.id, m);
      const stored = byId.get(m.id);
      // The entries of an attempt being replaced give way to the batch, whatever they held.
      if (stored !== undefined && !replaced?.has(stored)) {
        if (!sameMessageContent(stored, m)) throw conflict();
        return;
      }
      // Copies share strings and frozen parts: a stored message costs its structure, not a second copy of its text.
      fresh.push(frozenMessage(m));
    });
    const added = fresh as unknown as JsonValue[];
    if (replaced !== undefined) {
      all.splice(span!.start, span!.end - span!.start, ...added);
      this.#indexes.delete(all);
    } else if (span !== undefined && span.end < all.length) {
      all.splice(span.end, 0, ...added);
      this.#indexes.delete(all);
    } else {
      for (const m of added) {
        all.push(m);
        const id = (m as unknown as Message).id;
        if (!byId.has(id)) byId.set(id, m);
      }
      const index = this.#indexes.get(all);
      if (index) index.length = all.length;
    }
  }

  /** The stored entries by message id (the first entry of an id stored twice). */
  #index(all: JsonValue[]): Map<string, JsonValue> {
    let index = this.#indexes.get(all);
    if (index === undefined || index.length !== all.length) {
      const byId = new Map<string, JsonValue>();
      for (const m of all) {
        const id = (m as { id?: unknown } | null)?.id;
        if (typeof id === 'string' && !byId.has(id)) byId.set(id, m);
      }
      index = { length: all.length, byId };
      this.#indexes.set(all, index);
    }
    return index.byId;
  }

  /**
   * `findRetriedTurn` without reading the whole history: the index says whether an input is stored
   * at all, and where is found from the newest end (a retried or continued turn is usually recent).
   */
  #storedTurn(all: JsonValue[], inputIds: readonly string[], inputs: readonly Message[]): StoredTurn | undefined {
    if (inputIds.length === 0) return undefined;
    const byId = this.#index(all);
    let first = -1;
    for (const id of inputIds) {
      const entry = byId.get(id);
      if (entry === undefined) continue;
      const at = all.lastIndexOf(entry);
      if (at !== -1 && (first === -1 || at < first)) first = at;
    }
    return first === -1 ? undefined : storedTurnAt(all, first, new Set(inputIds), inputs);
  }

  /**
   * Replaces the stored history with `messages` (compaction).
   * @throws SessionStateError naming `$.messages[i]...` when a message is not plain JSON (nothing is changed).
   */
  override async replaceMessages(_sessionId: string, messages: readonly Message[], { state }: SaveHistoryArgs): Promise<void> {
    checkMessages(messages);
    state.messages = messages.map(frozenMessage);
  }

  /**
   * Removes the newest `count` (default 1) messages and resolves to them, oldest first.
   * @throws ConfigurationError for a `count` that is not a positive integer; SessionStateError when
   *   a message to pop is malformed (nothing is changed either way).
   */
  override async popMessages(_sessionId: string, { state, count = 1 }: PopHistoryArgs): Promise<Message[]> {
    checkInteger('InMemoryHistoryProvider.popMessages', 'count', count);
    const all = this.#list(state);
    const start = Math.max(0, all.length - count);
    for (let i = start; i < all.length; i++) Message.parse(all[i], formatPath('$.state', [this.sourceId, 'messages', i]));
    this.#indexes.delete(all);
    return all.splice(start) as Message[];
  }

  /** Removes every stored message of the session from its state slot (`agent.deleteSession` calls it). */
  override async clearMessages(_sessionId: string, { state }: ClearHistoryArgs): Promise<void> {
    delete state.messages;
  }

  /**
   * Forks in the state slot: the new session's slot (a copy of the source's) keeps the messages up
   * to and including `atMessageId`, or all of them. No copy of the messages themselves: they are
   * frozen, so both sessions can share them.
   * @throws InvalidInputError when `atMessageId` is not stored (the caller's mistake; nothing changes).
   */
  override async forkMessages(_fromSessionId: string, _toSessionId: string, args: ForkHistoryArgs): Promise<number> {
    args.signal?.throwIfAborted();
    const all = this.#list(args.fromState);
    const end = forkLength(this.sourceId, all, args.atMessageId);
    const kept: JsonValue[] = [];
    for (let i = 0; i < end; i++) kept.push(this.#prepare(all, i) as unknown as JsonValue);
    args.toState.messages = kept;
    return end;
  }

  /**
   * Merges the slot of two saves of one session made at once (`agent.saveSession` calls it on a
   * conflict): their messages, then the messages this save added that they lack. When this save
   * rewrote its history instead of appending (a retried turn, a rewind, compaction) and they only
   * appended, the other way round: ours, then what they added. Undefined (a `ConcurrencyError`)
   * when both rewrote, when both added a message with the same id (one input run twice at once), or
   * when both changed another field of the slot differently.
   */
  mergeState({ base, ours, theirs }: MergeStateArgs): JsonObject | undefined {
    const [b, o, t] = [base.messages ?? [], ours.messages ?? [], theirs.messages ?? []];
    if (!Array.isArray(b) || !Array.isArray(o) || !Array.isArray(t)) return undefined;
    const merged: JsonObject = {};
    for (const key of new Set([...Object.keys(base), ...Object.keys(ours), ...Object.keys(theirs)])) {
      if (key === 'messages') continue;
      const value = jsonEqual(base[key], ours[key]) ? theirs[key] : ours[key];
      if (!jsonEqual(base[key], ours[key]) && !jsonEqual(base[key], theirs[key]) && !jsonEqual(ours[key], theirs[key])) return undefined;
      if (value !== undefined) merged[key] = value;
    }
    const baseIds = new Set(b.map(idOf));
    const added = (list: JsonValue[]) => list.filter((m) => !baseIds.has(idOf(m)));
    const [oursAdded, theirsAdded] = [added(o), added(t)];
    const theirsAddedIds = new Set(theirsAdded.map(idOf));
    if (oursAdded.some((m) => theirsAddedIds.has(idOf(m)))) return undefined;
    const extends_ = (list: JsonValue[]) => list.length >= b.length && b.every((m, i) => idOf(list[i]) === idOf(m));
    let messages: JsonValue[];
    if (extends_(o)) messages = [...t, ...oursAdded];
    else if (extends_(t)) messages = [...o, ...theirsAdded];
    else return undefined;
    merged.messages = messages;
    return merged;
  }

  /** Checks the `messages` of a restored state slot; a `SessionStateError` names what is wrong. */
  validateState(state: JsonObject, path: string): void {
    if (state.messages === undefined) return;
    if (!Array.isArray(state.messages)) throw new SessionStateError(pathJoin(path, 'messages'), 'must be an array of messages');
    state.messages.forEach((m, i) => Message.isMessage(m) || Message.parse(m, formatPath(path, ['messages', i])));
  }

  #list(state: JsonObject): JsonValue[] {
    const messages = (state.messages ??= []);
    if (!Array.isArray(messages)) {
      throw new SessionStateError(
        pathJoin(pathJoin('$.state', this.sourceId), 'messages'),
        `must be an array of messages, got ${describeValue(messages)}`,
      );
    }
    return messages;
  }
}
