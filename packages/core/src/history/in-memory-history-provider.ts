import { checkInteger, checkOptionNames, optionNames } from '../backend/checks.js';
import { dropLeadingResults } from '../compaction/message-groups.js';
import { ConfigurationError, SessionStateError } from '../errors.js';
import { freezeMessageInPlace, frozenMessage, markAttributed } from '../messages/frozen.js';
import { describeValue, formatPath, jsonEqual, pathJoin } from '../messages/json.js';
import { Message } from '../messages/message.js';
import type { ClearHistoryArgs, ForkHistoryArgs, GetHistoryArgs, PopHistoryArgs, SaveHistoryArgs } from '../contracts/history.js';
import type { JsonObject, JsonValue } from '../contracts/json.js';
import type { MergeStateArgs, ProviderRunArgs } from '../contracts/run-view.js';
import { forkLength, HISTORY_PROVIDER_OPTIONS, HistoryProvider, type HistoryProviderOptions } from './history-provider.js';
import { HistoryViews } from './history-views.js';
import { messageIdConflict, sameMessageContent } from './message-conflict.js';
import { noteReplacedMessages } from './replaced-messages.js';
import { IdPositions } from './id-positions.js';
import { idOf, storedTurnAt, type StoredTurn } from './retried-turn.js';

/** Checks every message of a batch before any is stored. */
function checkMessages(messages: readonly Message[]): void {
  if (!Array.isArray(messages)) throw new SessionStateError('$.messages', `must be an array of messages, got ${describeValue(messages)}`);
  for (let i = 0; i < messages.length; i++) Message.parse(messages[i], formatPath('$.messages', [i]));
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

  /** Where each message id of a stored list sits, per list. */
  readonly #indexes = new WeakMap<JsonValue[], IdPositions>();

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
    const loaded = this.#views.of(all, start, (i, entry) => this.#prepare(all, i, entry));
    const ids = args.context.inputMessages.map((m) => m.id);
    let retried: StoredTurn | undefined;
    if (ids.some((id) => this.#find(all, id) !== -1)) {
      const inputs = await this.inputsAsStored(args);
      this.checkInputIds(args.context.sessionId, inputs, (id) => all[this.#find(all, id)]);
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
   * Stored messages are checked once and then frozen, so loading costs no copy and nothing a run
   * does to a loaded message can change the stored history (a write throws instead). A frozen entry
   * is taken as stored deep-frozen (by `saveMessages`, or by a restore), and not walked again. A restored
   * message was frozen by the restore (`validateState`). A message put in the state by hand was
   * checked when the list was indexed (`#index`) and is replaced by its frozen copy here, when a run
   * first loads it: the caller may still hold it, so it is not frozen in place.
   */
  #prepare(all: JsonValue[], index: number, m: unknown = all[index]): Message {
    if (Object.isFrozen(m)) return m as unknown as Message;
    this.#index(all);
    const copy = frozenMessage(m as unknown as Message);
    all[index] = copy as unknown as JsonValue;
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
      const at = this.#find(all, m.id);
      const stored = at === -1 ? undefined : all[at];
      // The entries of an attempt being replaced give way to the batch, whatever they held.
      if (stored !== undefined && !replaced?.has(stored)) {
        if (!sameMessageContent(stored, m)) throw conflict();
        return;
      }
      // Copies share strings and frozen parts: a stored message costs its structure, not a second copy of its text.
      fresh.push(frozenMessage(m));
    });
    const added = fresh as unknown as JsonValue[];
    const index = this.#index(all);
    if (replaced !== undefined) {
      all.splice(span!.start, span!.end - span!.start, ...added);
      index.indexFrom(all, span!.start);
    } else if (span !== undefined && span.end < all.length) {
      all.splice(span.end, 0, ...added);
      index.indexFrom(all, span.end);
    } else {
      for (const m of added) all.push(m);
      index.indexFrom(all, all.length - added.length);
    }
  }

  /**
   * The index of a stored list, brought up to date: built on first use, and extended over entries
   * stored since by someone else (a restored or merged list, a message put in the state by hand),
   * which are checked as they are indexed. A list cut short needs nothing: the ids past its end
   * are stale, which `IdPositions.find` tells.
   * @throws SessionStateError naming `$.state.<sourceId>.messages[i]...` for an entry that is not
   *   a well-formed message.
   */
  #index(all: JsonValue[]): IdPositions {
    let index = this.#indexes.get(all);
    if (index === undefined) {
      index = new IdPositions(all.length);
      this.#indexes.set(all, index);
    }
    if (index.length > all.length) index.length = all.length;
    else if (index.length < all.length) this.#check(all, index, (i) => formatPath('$.state', [this.sourceId, 'messages', i]));
    return index;
  }

  /** Checks the entries `index` does not cover yet, then indexes them. */
  #check(all: JsonValue[], index: IdPositions, pathOf: (i: number) => string): void {
    for (let i = index.length; i < all.length; i++) {
      const m = all[i];
      if (!Object.isFrozen(m) && !Message.isMessage(m)) Message.parse(m, pathOf(i));
    }
    index.indexFrom(all, index.length);
  }

  /** The position of the first stored entry with message id `id`, or -1. */
  #find(all: JsonValue[], id: string): number {
    return this.#index(all).find(all, id);
  }

  /**
   * `findRetriedTurn` without reading the whole history: the index says where each input is
   * stored, if at all.
   */
  #storedTurn(all: JsonValue[], inputIds: readonly string[], inputs: readonly Message[]): StoredTurn | undefined {
    if (inputIds.length === 0) return undefined;
    let first = -1;
    for (const id of inputIds) {
      const at = this.#find(all, id);
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
    this.#index(all).length = start;
    return all.splice(start) as Message[];
  }

  /** Removes every stored message of the session from its state slot (`agent.deleteSession` calls it). */
  override async clearMessages(_sessionId: string, { state }: ClearHistoryArgs): Promise<void> {
    this.#list(state);
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
    this.#list(args.toState);
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

  /**
   * Checks the `messages` of a restored state slot; a `SessionStateError` names what is wrong. The
   * same pass makes them what a run sends, so the first run after a restore reads none of them
   * again and copies none: each parsed message is frozen in place (the restore owns it alone; a
   * frozen copy would double what it costs) and its id indexed, and the window the next run loads
   * (all of it without `maxMessages`) is attributed to this history once, here.
   */
  validateState(state: JsonObject, path: string): void {
    const all = state.messages;
    if (all === undefined) return;
    if (!Array.isArray(all)) throw new SessionStateError(pathJoin(path, 'messages'), 'must be an array of messages');
    for (let i = 0; i < all.length; i++) {
      const m = all[i];
      // The path is formatted only for the error (`parse` throws it).
      const message = Message.isMessage(m) ? m : Message.parse(m, formatPath(path, ['messages', i]));
      all[i] = freezeMessageInPlace(message) as unknown as JsonValue;
    }
    const index = new IdPositions(all.length);
    index.indexFrom(all, 0);
    this.#indexes.set(all, index);
    // A list parsed from JSON has no room to grow: its first append copies it whole. Growing it
    // once here, while the restore reads it anyway, keeps that copy out of the first run.
    all.push(null);
    all.pop();
    if (this.loadMessages === false || this.getMessages !== InMemoryHistoryProvider.prototype.getMessages) return;
    const start = this.maxMessages === undefined ? 0 : Math.max(0, all.length - this.maxMessages);
    this.#views.of(all, start, (_, entry) => entry as unknown as Message);
  }

  /**
   * The stored list of a state slot, created empty when there is none.
   * @throws ConfigurationError when `state` is not the session's slot object (a call made by hand
   *   without `session.stateOf(sourceId)`); SessionStateError when the slot holds something else.
   */
  #list(state: JsonObject): JsonValue[] {
    if (typeof state !== 'object' || state === null || Array.isArray(state)) {
      throw new ConfigurationError(
        `History provider "${this.sourceId}" was called without its state slot (got ${describeValue(state)}): pass the session's slot, { state: session.stateOf('${this.sourceId}') }.`,
      );
    }
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
