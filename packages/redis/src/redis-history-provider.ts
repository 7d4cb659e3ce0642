import {
  ConfigurationError,
  HistoryProvider,
  Message,
  SessionStateError,
  type ClearHistoryArgs,
  type ForkHistoryArgs,
  type GetHistoryArgs,
  type HistoryProviderOptions,
  type PopHistoryArgs,
  type SaveHistoryArgs,
} from '@ctx/core';
import {
  checkHistoryBatch,
  checkId,
  checkInteger,
  checkOptionNames,
  checkSessionId,
  HISTORY_PROVIDER_OPTIONS,
  messageIdConflict,
  optionNames,
  shortId,
} from '@ctx/core/backend';
import { CONNECTION_OPTIONS, type RedisClient, RedisConnection, type RedisConnectionOptions } from './connection.js';
import { decodeAll, repeatedIds } from './decode.js';
import { historyKeys, type HistoryKeys } from './keys.js';
import { ABSENT, BAD_ENTRY, BAD_IDS, CONFLICT, FORK_SCRIPT, NOT_EMPTY, PAGE_SCRIPT, POP_SCRIPT, SAVE_SCRIPT } from './scripts.js';

/** Options of `RedisHistoryProvider`: the history options of `@ctx/core`, the connection, and retention. */
export interface RedisHistoryProviderOptions extends HistoryProviderOptions, RedisConnectionOptions {
  /**
   * Keep at most this many of the newest messages per conversation; older ones are dropped in the
   * same script that appends. Default: keep all.
   */
  maxStored?: number;
  /**
   * Delete a conversation this many seconds after its last save (every save resets the clock; reads
   * do not). Default: never expires.
   */
  ttlSeconds?: number;
}

/** Every option name of `RedisHistoryProvider`: core's history options, the connection's, and its own. */
const OPTION_NAMES = optionNames<RedisHistoryProviderOptions>()({
  ...HISTORY_PROVIDER_OPTIONS,
  ...CONNECTION_OPTIONS,
  maxStored: true,
  ttlSeconds: true,
});

/** Options of `RedisHistoryProvider.listMessages`. */
export interface ListMessagesOptions {
  /** Where to continue: the `nextCursor` of the previous page. Default: from the oldest stored message. */
  cursor?: string;
  /** Messages per page. Default 100. */
  limit?: number;
  /** Aborts the call (rejects with the signal's reason). */
  signal?: AbortSignal;
}

/** One page of a conversation, oldest first. */
export interface MessagePage {
  /** The page's messages, oldest first. */
  messages: Message[];
  /** Pass it as `cursor` to get the next page; undefined when the page reached the newest stored message. */
  nextCursor: string | undefined;
}

/** Options of `RedisHistoryProvider.exportMessages`. */
export interface ExportMessagesOptions {
  /** Messages fetched per round trip. Default 500. */
  pageSize?: number;
  /** Aborts the export between or during pages. */
  signal?: AbortSignal;
}

/** Options of the provider's maintenance methods. */
export interface RedisCallOptions {
  /** Aborts the call (rejects with the signal's reason; a command already sent may still complete). */
  signal?: AbortSignal;
}

/**
 * Conversation history in Redis or Redis Cluster: one list of message JSON per (source id, session
 * id), loaded as a window of the newest `maxMessages` in one round trip, and appended once per turn
 * by one Lua script that skips message ids already stored (so a retried save never stores a message
 * twice), trims to `maxStored` and refreshes `ttlSeconds`. Default `sourceId` is `redis`.
 *
 * Failures: an unreachable or timed-out Redis gives `BackendUnavailableError` within `timeoutMs`;
 * a stored entry that is not a valid message gives `SessionStateError` naming the key and index.
 * Entries repeating a message id already loaded (written twice by an older version's retry, or by
 * hand) are loaded once, the first kept; a run reports them as a `duplicate-messages` diagnostic.
 * The history methods need no state slot: with `state` undefined, or called without arguments, they
 * work as with an empty one.
 * @throws ConfigurationError for bad options (not exactly one of client/url/nodes, bad prefix, bad
 *   limits, an empty or whitespace-only sourceId), or an option it does not know (named; only the
 *   top-level names: `redisOptions` and `clusterOptions` go to ioredis as they are).
 */
export class RedisHistoryProvider extends HistoryProvider {
  /** Retention cap per conversation, or undefined for none. */
  readonly maxStored: number | undefined;
  /** Seconds of inactivity after which a conversation is deleted, or undefined for none. */
  readonly ttlSeconds: number | undefined;
  readonly #connection: RedisConnection;
  /** Keys by session id, so a turn does not encode its ids again (bounded: emptied when full). */
  readonly #keys = new Map<string, HistoryKeys>();
  /** The save script's `maxStored` and `ttlSeconds` arguments. */
  readonly #fixedArgs: readonly [string, string];

  constructor(options: RedisHistoryProviderOptions) {
    checkOptionNames('RedisHistoryProvider', options, OPTION_NAMES);
    super({ ...options, sourceId: options.sourceId ?? 'redis' });
    checkId(this.sourceId, 'sourceId of RedisHistoryProvider');
    if (options.maxStored !== undefined) checkInteger('RedisHistoryProvider', 'maxStored', options.maxStored);
    if (options.ttlSeconds !== undefined) checkInteger('RedisHistoryProvider', 'ttlSeconds', options.ttlSeconds);
    this.maxStored = options.maxStored;
    this.ttlSeconds = options.ttlSeconds;
    this.#fixedArgs = [String(this.maxStored ?? 0), String(this.ttlSeconds ?? 0)];
    this.#connection = new RedisConnection(options, 'RedisHistoryProvider');
  }

  /** The ioredis client in use (injected or owned). */
  get client(): RedisClient {
    return this.#connection.client;
  }

  /**
   * The Redis keys that hold a session's history for this provider's `sourceId`.
   * @throws ConfigurationError for an empty or whitespace-only session id.
   */
  keys(sessionId: string): HistoryKeys {
    return { ...this.#keysOf(sessionId) };
  }

  /** `keys(sessionId)`, shared with later calls for the same session: never handed out. */
  #keysOf(sessionId: string): HistoryKeys {
    let keys = this.#keys.get(sessionId);
    if (keys === undefined) {
      keys = historyKeys(this.#connection.prefix, this.sourceId, checkSessionId(sessionId));
      if (this.#keys.size >= KEY_CACHE_SIZE) this.#keys.clear();
      this.#keys.set(sessionId, keys);
    }
    return keys;
  }

  /**
   * The newest `limit` messages (all without a limit), oldest first, in one `LRANGE`. A message id
   * stored more than once in the window is returned once (its first entry).
   * @throws SessionStateError when a stored entry is not a valid message (path: `redis:<key>[index]`).
   * @throws ConfigurationError for an empty or whitespace-only session id, before any round trip.
   * @throws BackendUnavailableError when Redis cannot be reached within `timeoutMs`.
   */
  async getMessages(sessionId: string, { limit, signal, report }: GetHistoryArgs = { state: {} }): Promise<Message[]> {
    const key = this.#keysOf(sessionId).messages;
    if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1))
      checkInteger(`RedisHistoryProvider.getMessages for session ${shortId(sessionId)}`, 'limit', limit);
    const raw = await this.#connection.call({ operation: 'getMessages', sessionId, key }, signal, (c) =>
      c.lrange(key, limit === undefined ? 0 : -limit, -1),
    );
    // A window is read from the end, so its entries are named by their index from the end (as LINDEX takes it).
    const messages = decodeAll(raw, key, limit === undefined ? 0 : -raw.length);
    const repeats = repeatedIds(messages);
    return repeats === undefined ? messages : this.#dropRepeats(messages, repeats, key, report);
  }

  /** `messages` without the entries at `repeats` (ids already loaded from an earlier entry), reported when called within a run. */
  #dropRepeats(messages: Message[], repeats: number[], key: string, report?: GetHistoryArgs['report']): Message[] {
    const drop = new Set(repeats);
    this.#report(
      repeats.map((i) => messages[i]!.id),
      key,
      report,
    );
    return messages.filter((_, i) => !drop.has(i));
  }

  /**
   * `messages` with every message id once (its first entry). The save script never stores an id
   * twice, but a list may hold repeats written by an older version's retried write or by hand;
   * the model must not see them twice. Reports what it dropped when called within a run.
   */
  #unique(messages: Message[], key: string, report?: GetHistoryArgs['report'], seen = new Set<string>()): Message[] {
    const repeated: string[] = [];
    const unique = messages.filter((m) => {
      if (seen.has(m.id)) {
        repeated.push(m.id);
        return false;
      }
      seen.add(m.id);
      return true;
    });
    this.#report(repeated, key, report);
    return unique;
  }

  /** Reports the ids of entries left out because their id was loaded already (nothing when none were). */
  #report(repeated: string[], key: string, report?: GetHistoryArgs['report']): void {
    if (repeated.length > 0) {
      const ids = [...new Set(repeated)];
      report?.({
        code: 'duplicate-messages',
        message: `Redis list ${shortId(key, 120)} holds ${repeated.length} more entr${repeated.length === 1 ? 'y' : 'ies'} under message ids already loaded (${ids
          .slice(0, 5)
          .map((id) => shortId(id))
          .join(
            ', ',
          )}${ids.length > 5 ? ', ...' : ''}); each id was loaded once, from its first entry. Remove the repeats (LREM) or rewrite the history with replaceMessages.`,
        data: { key, duplicates: repeated.length, messageIds: ids.slice(0, 20) },
      });
    }
  }

  /**
   * Saves messages in one atomic script call (one round trip): ids already stored with the same
   * content are skipped, the list is trimmed to `maxStored`, the TTL refreshed. A batch of a run
   * goes where its turn is stored (`SaveHistoryArgs.turn`, core's `findRetriedTurn`, in the same
   * script): the opening batch replaces a stored earlier attempt of the turn in place, wherever it
   * sits, and a later batch goes right after the turn; the messages after it are renumbered.
   * @throws SessionStateError when a message is malformed or not plain JSON (a NaN, a Map, a Date,
   *   `undefined`, anything `JSON.stringify` would change), naming the path; or when a message id
   *   is already stored with other content (with a `message-id-conflict` diagnostic). Nothing is
   *   stored either way.
   * @throws ConfigurationError for an empty or whitespace-only session id, before any round trip.
   * @throws BackendUnavailableError when Redis cannot be reached within `timeoutMs`; retrying the
   *   same messages is safe, and so is retrying the run.
   */
  async saveMessages(
    sessionId: string,
    messages: readonly Message[],
    { signal, turn, report }: SaveHistoryArgs = { state: {} },
  ): Promise<void> {
    checkSessionId(sessionId);
    if (Array.isArray(messages) && messages.length === 0) return;
    await this.#write('append', sessionId, messages, signal, turn, report);
  }

  /**
   * `saveMessages`, resolving to how many messages were new (the rest were already stored).
   * @throws like `saveMessages`.
   */
  async append(sessionId: string, messages: readonly Message[], options: RedisCallOptions = {}): Promise<number> {
    checkSessionId(sessionId);
    if (Array.isArray(messages) && messages.length === 0) return 0;
    return this.#write('append', sessionId, messages, options.signal);
  }

  /**
   * Replaces the whole stored conversation with `messages`, atomically, in one round trip (the
   * capability compaction rewrites history through). Trimmed to `maxStored`, TTL refreshed.
   * @throws like `saveMessages`.
   */
  override async replaceMessages(
    sessionId: string,
    messages: readonly Message[],
    { signal }: SaveHistoryArgs = { state: {} },
  ): Promise<void> {
    await this.#write('replace', sessionId, messages, signal);
  }

  /**
   * Removes the newest `count` (default 1) messages of a session and resolves to them, oldest
   * first, in one atomic script call (one round trip): their entries leave the list and their ids
   * the id set, so a popped message can be saved again. Expiry is left as it was. The sequence
   * numbers of popped messages are handed out again, so a `listMessages` cursor taken past a
   * popped message skips the message saved in its place: export again from the start after a pop.
   * @throws SessionStateError when an entry to pop is not a message (path `redis:<key>[index from
   *   the end]`); nothing is removed.
   * @throws ConfigurationError for a `count` that is not a positive integer or a blank session id,
   *   before any round trip.
   * @throws BackendUnavailableError when Redis cannot be reached within `timeoutMs`.
   */
  override async popMessages(sessionId: string, { count = 1, signal }: PopHistoryArgs = { state: {} }): Promise<Message[]> {
    const keys = this.#keysOf(sessionId);
    checkInteger(`RedisHistoryProvider.popMessages for session ${shortId(sessionId)}`, 'count', count);
    const reply = (await this.#connection.call({ operation: 'popMessages', sessionId, key: keys.messages }, signal, (c) =>
      this.#connection.script(c, POP_SCRIPT, [keys.messages, keys.ids], [count]),
    )) as unknown[];
    if (reply[0] === BAD_ENTRY) {
      throw new SessionStateError(
        `redis:${keys.messages}[${Number(reply[1])}]`,
        'is not a message (not JSON, or no string id, known role and contents array); nothing was popped. Delete the entry (LSET, LREM) or clear the session.',
      );
    }
    return decodeAll(reply as string[], keys.messages, -reply.length);
  }

  /**
   * Validates `messages` and runs the save script over them; resolves to how many were written.
   * With `turn`, the batch goes where that turn is stored (see `saveMessages`).
   */
  async #write(
    mode: 'append' | 'replace',
    sessionId: string,
    messages: readonly Message[],
    signal: AbortSignal | undefined,
    turn?: SaveHistoryArgs['turn'],
    report?: SaveHistoryArgs['report'],
  ): Promise<number> {
    const keys = this.#keysOf(sessionId);
    const inputIds = turn?.inputIds === undefined ? [] : [...new Set(turn.inputIds)];
    // The arguments that do not depend on the batch are made once per provider.
    const args: string[] =
      inputIds.length === 0 && !turn?.opens
        ? [mode, ...this.#fixedArgs, '0', '0']
        : [mode, ...this.#fixedArgs, String(inputIds.length), turn?.opens ? '1' : '0', ...inputIds];
    // What is stored must read back as what was saved: the check refuses what JSON.stringify would change.
    const { messages: batch, indexes } = checkHistoryBatch(sessionId, messages, { sourceId: this.sourceId, report });
    const sizeToCheck = this.#connection.maxValueBytes / 3; // at most 3 UTF-8 bytes per UTF-16 unit: shorter JSON is within the limit
    for (let j = 0; j < batch.length; j++) {
      const m = batch[j]!;
      const i = indexes[j]!;
      const text = JSON.stringify(m);
      if (text.length > sizeToCheck) this.#connection.checkValueSize(text, `$.messages[${i}]`, `Message ${shortId(m.id)}`);
      args.push(m.id, text);
    }
    const operation = mode === 'append' ? 'saveMessages' : 'replaceMessages';
    const reply = await this.#connection.call({ operation, sessionId, key: keys.messages }, signal, (c) =>
      this.#connection.script(c, SAVE_SCRIPT, [keys.messages, keys.ids], args),
    );
    checkIds(reply, keys);
    if (Array.isArray(reply) && reply[0] === CONFLICT) {
      const index = indexes[Number(reply[2])] ?? 0;
      throw messageIdConflict({
        sourceId: this.sourceId,
        sessionId,
        messageId: String(reply[1]),
        index,
        batchSize: messages.length,
        report,
      });
    }
    return Number(reply);
  }

  /**
   * One page of a session's stored messages, oldest first, for export or inspection (one round
   * trip). The cursor is a sequence number, so pages stay consistent while new turns are appended;
   * messages trimmed or expired between two calls are skipped. A message id stored more than once
   * is returned once per page (its first entry).
   * @throws SessionStateError for a corrupt entry, BackendUnavailableError when Redis is unreachable.
   */
  async listMessages(sessionId: string, options: ListMessagesOptions = {}): Promise<MessagePage> {
    return this.#page(sessionId, options, new Set());
  }

  /** One page of `listMessages`, leaving out message ids in `seen` (and adding the page's). */
  async #page(sessionId: string, options: ListMessagesOptions, seen: Set<string>): Promise<MessagePage> {
    const keys = this.#keysOf(sessionId);
    const owner = `RedisHistoryProvider.listMessages for session ${shortId(sessionId)}`;
    const limit = checkInteger(owner, 'limit', options.limit ?? 100);
    const after = options.cursor === undefined ? 0 : Number(options.cursor);
    if (!(Number.isSafeInteger(after) && after >= 0)) {
      throw new ConfigurationError(
        `${owner}: cursor must be the nextCursor of a previous page, got ${shortId(String(options.cursor))}. Omit it to start from the oldest stored message.`,
      );
    }
    const reply = await this.#connection.call({ operation: 'listMessages', sessionId, key: keys.messages }, options.signal, (c) =>
      this.#connection.script(c, PAGE_SCRIPT, [keys.messages, keys.ids], [after, limit]),
    );
    checkIds(reply, keys);
    const [from, last, start, items] = reply as [number, number, number, string[]];
    const len = Number(last) - Number(from) + 1;
    const messages = this.#unique(decodeAll(items, keys.messages, Number(start)), keys.messages, undefined, seen);
    const end = Number(from) + items.length - 1;
    return { messages, nextCursor: items.length > 0 && items.length < len ? String(end) : undefined };
  }

  /**
   * Every stored message of a session, oldest first, fetched `pageSize` at a time; each message id
   * once (its first entry), across pages too.
   * @throws like `listMessages`.
   */
  async *exportMessages(sessionId: string, options: ExportMessagesOptions = {}): AsyncGenerator<Message, void, undefined> {
    const seen = new Set<string>();
    let cursor: string | undefined;
    do {
      const page = await this.#page(
        sessionId,
        {
          limit: options.pageSize ?? 500,
          ...(cursor === undefined ? {} : { cursor }),
          ...(options.signal ? { signal: options.signal } : {}),
        },
        seen,
      );
      yield* page.messages;
      cursor = page.nextCursor;
    } while (cursor !== undefined);
  }

  /** How many messages are stored for a session (`LLEN`). */
  async countMessages(sessionId: string, options: RedisCallOptions = {}): Promise<number> {
    const key = this.#keysOf(sessionId).messages;
    return this.#connection.call({ operation: 'countMessages', sessionId, key }, options.signal, (c) => c.llen(key));
  }

  /**
   * Removes everything this provider keeps for a session (both keys, `DEL` in one round trip); what
   * `agent.deleteSession` calls through `onSessionDeleted`. Resolves also when nothing was stored.
   * @throws BackendUnavailableError when Redis cannot be reached within `timeoutMs`.
   */
  override async clearMessages(sessionId: string, { signal }: ClearHistoryArgs = { state: {} }): Promise<void> {
    await this.clear(sessionId, signal ? { signal } : {});
  }

  /**
   * Copies a session's history up to and including `atMessageId` (or all of it) to `toSessionId`;
   * resolves to how many messages were copied (at most `maxStored`; `ttlSeconds` applies to the
   * copy). On a single node one script copies the list and its id set on the server (one round
   * trip). On a cluster the two sessions' keys live in different slots, so it reads the history and
   * saves the copy (two round trips), as it also does when the new session already holds messages
   * (appending those not stored yet).
   * @throws InvalidInputError when `atMessageId` is not in the history (the caller's mistake); nothing
   *   is written. ConfigurationError for a blank session id or an `atMessageId` that is not a string.
   * @throws SessionStateError for a corrupt id set or entry; BackendUnavailableError when Redis
   *   cannot be reached within `timeoutMs`.
   */
  override async forkMessages(
    fromSessionId: string,
    toSessionId: string,
    args: ForkHistoryArgs = { fromState: {}, toState: {} },
  ): Promise<number> {
    const from = this.#keysOf(fromSessionId);
    const to = this.#keysOf(toSessionId);
    const { atMessageId, signal } = args;
    if (atMessageId !== undefined && typeof atMessageId !== 'string') {
      throw new ConfigurationError(`RedisHistoryProvider.forkMessages: atMessageId must be a string, got ${typeof atMessageId}.`);
    }
    if (!this.#connection.isCluster) {
      const reply = await this.#connection.call({ operation: 'forkMessages', sessionId: fromSessionId, key: from.messages }, signal, (c) =>
        this.#connection.script(
          c,
          FORK_SCRIPT,
          [from.messages, from.ids, to.messages, to.ids],
          [atMessageId === undefined ? '0' : '1', atMessageId ?? '', this.maxStored ?? 0, this.ttlSeconds ?? 0],
        ),
      );
      checkIds(reply, from);
      // Not in the id set (which may have been deleted to repair it) or a destination with messages:
      // the general copy finds the message in the list itself, and refuses as the contract says.
      if (!Array.isArray(reply) || (reply[0] !== ABSENT && reply[0] !== NOT_EMPTY)) return Number(reply);
    }
    return super.forkMessages(fromSessionId, toSessionId, args);
  }

  /** Deletes a session's history for this provider's `sourceId`; resolves to whether there was any. */
  async clear(sessionId: string, options: RedisCallOptions = {}): Promise<boolean> {
    const keys = this.#keysOf(sessionId);
    const deleted = await this.#connection.call({ operation: 'clear', sessionId, key: keys.messages }, options.signal, (c) =>
      c.del(keys.messages, keys.ids),
    );
    return deleted > 0;
  }

  /** Closes the connection if this provider opened it (`url` / `nodes`); an injected client stays open. */
  async close(): Promise<void> {
    await this.#connection.close();
  }
}

/**
 * Throws when a script found the id set corrupt (its highest score is not a sequence number).
 * @throws SessionStateError naming the ids key.
 */
function checkIds(reply: unknown, keys: HistoryKeys): void {
  if (!Array.isArray(reply) || reply[0] !== BAD_IDS) return;
  throw new SessionStateError(
    `redis:${keys.ids}`,
    `holds sequence number ${shortId(String(reply[1]))}, not an integer; nothing was changed. Delete that key (only de-duplication and listMessages cursors use it; numbering restarts after the stored messages) or clear the session.`,
  );
}

/** How many sessions' keys a provider keeps computed. */
const KEY_CACHE_SIZE = 1024;
