/**
 * The history suite must fail for backends that break the contract (the session store suite's
 * faults are in session-store-sensitivity.test.ts). A faithful reference backend passes
 * every test; each broken variant below has exactly one fault, and lists the tests that must fail
 * because of it (run as `it.fails`, so a test that wrongly passes turns this file red) while every
 * other test still passes.
 */
import {
  ConfigurationError,
  HistoryProvider,
  Message,
  type ForkHistoryArgs,
  type GetHistoryArgs,
  type HistoryProviderOptions,
  type PopHistoryArgs,
  type ProviderRunArgs,
} from '@ctx/core';
import {
  checkInteger,
  checkSessionId,
  findRetriedTurn,
  messageIdConflict,
  sameMessageContent,
  type SaveHistoryArgs,
} from '@ctx/core/backend';
import { describe, expect, test } from 'vitest';
import { describeHistoryProvider, type HistoryProviderCapabilities } from './index.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

type HistoryFault =
  | 'ignores-limit'
  | 'oldest-window'
  | 'ignores-source-id'
  | 'no-dedupe'
  | 'appends-one-by-one'
  | 'abandons-midway'
  | 'forgets-optional-fields'
  | 'normalizes-ids'
  | 'truncates-ids'
  | 'live-references'
  | 'always-loads'
  | 'stores-whole-context'
  | 'stores-failed-runs'
  | 'keeps-leading-results'
  | 'never-loads'
  | 'ignores-session-id'
  | 'newest-first'
  | 'undefined-when-empty'
  | 'accepts-blank-ids'
  | 'stores-non-json'
  | 'stores-valid-prefix'
  | 'pops-oldest'
  | 'pops-newest-first'
  | 'pop-read-then-remove'
  | 'pop-keeps-ids'
  | 'pop-accepts-bad-count'
  | 'ignores-turns'
  | 'skips-conflicts'
  | 'retries-at-tail-only'
  | 'appends-later-batches'
  | 'clear-keeps-messages'
  | 'clear-keeps-ids'
  | 'clear-fails-when-empty'
  | 'clear-glob'
  | 'fork-window'
  | 'fork-excludes-at'
  | 'fork-writes-before-check'
  | 'fork-moves'
  | 'fork-shares'
  | 'fork-first-page'
  | 'fork-wrong-count'
  | 'fork-trims-target'
  | 'fork-refuses-untyped'
  | 'no-transaction'
  | 'declares-missing-pop'
  | 'declares-missing-clear'
  | 'declares-absent-clear';

/**
 * The write lock of each backend map for the `no-transaction` fault: its writers take turns per
 * session, so batches never interleave, but readers take no lock and see a batch half written.
 */
const writeLocks = new WeakMap<Map<string, unknown[]>, Map<string, Promise<void>>>();

/** A backend-style history: JSON text per message in a shared map keyed by source id and session id, with async I/O. */
class MapHistoryProvider extends HistoryProvider {
  readonly #backend: Map<string, unknown[]>;
  readonly #fault: HistoryFault | undefined;
  /** Ids of popped messages, which the `pop-keeps-ids` fault keeps treating as stored. */
  readonly #popped = new Set<string>();

  constructor(backend: Map<string, unknown[]>, options: HistoryProviderOptions & { sourceId: string }, fault?: HistoryFault) {
    super(options);
    this.#backend = backend;
    this.#fault = fault;
    // A provider that lost a capability it declares: the method is gone from the instance.
    if (fault === 'declares-missing-pop') Object.assign(this, { popMessages: undefined });
    if (fault === 'declares-missing-clear') Object.assign(this, { clearMessages: undefined });
  }

  #key(sessionId: string): string {
    let id = sessionId;
    if (this.#fault === 'normalizes-ids') id = id.normalize('NFC').trim();
    if (this.#fault === 'truncates-ids') id = id.slice(0, 1024);
    if (this.#fault === 'ignores-session-id') id = '';
    return JSON.stringify([this.#fault === 'ignores-source-id' ? '' : this.sourceId, id]);
  }

  async getMessages(sessionId: string, { limit }: GetHistoryArgs): Promise<Message[]> {
    if (this.#fault !== 'accepts-blank-ids') checkSessionId(sessionId);
    await tick();
    if (this.#fault === 'undefined-when-empty' && !this.#backend.has(this.#key(sessionId))) return undefined as unknown as Message[];
    let list = this.#backend.get(this.#key(sessionId)) ?? [];
    if (this.#fault === 'newest-first') list = [...list].reverse();
    let window = list;
    if (limit !== undefined && this.#fault !== 'ignores-limit')
      window = this.#fault === 'oldest-window' ? list.slice(0, limit) : list.slice(Math.max(0, list.length - limit));
    return window.map((item) => (this.#fault === 'live-references' ? (item as Message) : (JSON.parse(item as string) as Message)));
  }

  async saveMessages(sessionId: string, messages: readonly Message[], args?: SaveHistoryArgs): Promise<void> {
    if (this.#fault === 'abandons-midway' && args?.signal && !args.turn) {
      // Gives up waiting when the signal aborts while the write goes on, one message at a time: a
      // read then sees part of the batch.
      const { signal, ...rest } = args;
      const work = (async () => {
        for (const m of messages) await this.saveMessages(sessionId, [m], rest);
      })();
      work.catch(() => {});
      return new Promise<void>((resolve, reject) => {
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        work.then(resolve, reject);
      });
    }
    if (this.#fault === 'no-transaction') {
      const locks = writeLocks.get(this.#backend) ?? new Map<string, Promise<void>>();
      writeLocks.set(this.#backend, locks);
      const key = this.#key(sessionId);
      const mine = (locks.get(key) ?? Promise.resolve()).then(() => this.#save(sessionId, messages, args));
      locks.set(
        key,
        mine.catch(() => {}),
      );
      return mine;
    }
    return this.#save(sessionId, messages, args);
  }

  async #save(sessionId: string, messages: readonly Message[], args?: SaveHistoryArgs): Promise<void> {
    const turn = args?.turn;
    if (this.#fault !== 'accepts-blank-ids') checkSessionId(sessionId);
    if (this.#fault !== 'stores-non-json' && this.#fault !== 'stores-valid-prefix')
      messages.forEach((m, i) => Message.parse(m, `$.messages[${i}]`));
    await tick();
    const key = this.#key(sessionId);
    const list = this.#backend.get(key) ?? [];
    this.#backend.set(key, list);
    const stored = list.map(parse);
    const inputs = turn ? messages.filter((m) => turn.inputIds.includes(m.id)) : [];
    let span = turn && this.#fault !== 'ignores-turns' ? findRetriedTurn(stored, turn.inputIds, inputs) : undefined;
    // The fault of a backend that only looks for an earlier attempt at the end of the history.
    if (span !== undefined && this.#fault === 'retries-at-tail-only' && span.end < stored.length) span = undefined;
    const replacing = turn?.opens === true && span !== undefined;
    const at = new Map<string, number>();
    stored.forEach((m, i) => at.has(m.id) || at.set(m.id, i));
    const fresh: unknown[] = [];
    const ids = new Set<string>();
    for (const [i, m] of messages.entries()) {
      if (this.#fault === 'stores-valid-prefix') {
        try {
          Message.parse(m, `$.messages[${i}]`);
        } catch (error) {
          list.push(...fresh); // what it had before the bad message
          throw error;
        }
      }
      const index = at.get(m.id);
      const inSpan = replacing && index !== undefined && index >= span!.start && index < span!.end;
      if (((index !== undefined && !inSpan) || ids.has(m.id) || this.#popped.has(m.id)) && this.#fault !== 'no-dedupe') {
        if (index !== undefined && !inSpan && !sameMessageContent(stored[index], m) && this.#fault !== 'skips-conflicts')
          throw messageIdConflict({
            sourceId: this.sourceId,
            sessionId,
            messageId: m.id,
            index: i,
            batchSize: messages.length,
            report: args?.report,
          });
        continue;
      }
      ids.add(m.id);
      if (this.#fault === 'appends-one-by-one') await tick();
      fresh.push(
        this.#fault === 'live-references'
          ? structuredClone(m)
          : JSON.stringify(this.#fault === 'forgets-optional-fields' ? forgetOptional(m) : m),
      );
      if (this.#fault === 'appends-one-by-one') list.push(fresh.pop());
    }
    if (replacing) list.splice(span!.start, span!.end - span!.start, ...fresh);
    else if (span !== undefined && this.#fault !== 'appends-later-batches') list.splice(span.end, 0, ...fresh);
    else if (this.#fault === 'no-transaction') {
      // Checked whole, then written a message at a time: only a reader sees the difference.
      for (const item of fresh) {
        await tick();
        list.push(item);
      }
    } else list.push(...fresh);
  }

  override async popMessages(sessionId: string, { count = 1 }: PopHistoryArgs): Promise<Message[]> {
    if (this.#fault !== 'accepts-blank-ids') checkSessionId(sessionId);
    if (this.#fault !== 'pop-accepts-bad-count') checkInteger('MapHistoryProvider.popMessages', 'count', count);
    if (this.#fault === 'pop-read-then-remove') {
      const list = this.#backend.get(this.#key(sessionId)) ?? [];
      const read = list.slice(Math.max(0, list.length - count));
      await tick();
      list.splice(Math.max(0, list.length - read.length));
      return read.map((item) => JSON.parse(item as string) as Message);
    }
    await tick();
    const list = this.#backend.get(this.#key(sessionId)) ?? [];
    const start = Math.max(0, list.length - count);
    const popped = (this.#fault === 'pops-oldest' ? list.splice(0, Math.min(count, list.length)) : list.splice(start)).map((item) =>
      this.#fault === 'live-references' ? (item as Message) : (JSON.parse(item as string) as Message),
    );
    if (this.#fault === 'pop-keeps-ids') for (const m of popped) this.#popped.add(m.id);
    return this.#fault === 'pops-newest-first' ? popped.reverse() : popped;
  }

  override async clearMessages(sessionId: string): Promise<void> {
    if (this.#fault !== 'accepts-blank-ids') checkSessionId(sessionId);
    await tick();
    const key = this.#key(sessionId);
    if (this.#fault === 'clear-keeps-messages') return;
    if (this.#fault === 'clear-fails-when-empty' && !this.#backend.has(key)) throw new Error(`no such key: ${key}`);
    if (this.#fault === 'clear-keeps-ids') for (const item of this.#backend.get(key) ?? []) this.#popped.add(parse(item).id);
    if (this.#fault === 'clear-glob') {
      // A key pattern built from the id without escaping it: `*` matches every session of the source.
      const glob = new RegExp(`^${sessionId.split('*').map(escapeRegExp).join('.*')}$`);
      for (const k of [...this.#backend.keys()]) {
        const [source, id] = JSON.parse(k) as [string, string];
        if (source === this.sourceId && glob.test(id)) this.#backend.delete(k);
      }
    }
    this.#backend.delete(key);
  }

  /**
   * The reference backend forks with the default (read, then save), which refuses a message not in
   * the history with `InvalidInputError`; the `fork-*` faults copy on the "server" instead, and
   * refuse with the `ConfigurationError` of backends published before (which the suite accepts),
   * or, with `fork-refuses-untyped`, with an error that is no `CtxError` (which it does not).
   */
  override async forkMessages(fromSessionId: string, toSessionId: string, args: ForkHistoryArgs): Promise<number> {
    if (!this.#fault?.startsWith('fork-')) return super.forkMessages(fromSessionId, toSessionId, args);
    checkSessionId(fromSessionId);
    checkSessionId(toSessionId);
    await tick();
    const list = this.#backend.get(this.#key(fromSessionId)) ?? [];
    const target = this.#key(this.#fault === 'fork-trims-target' ? toSessionId.trim() : toSessionId);
    let end = list.length;
    if (args.atMessageId !== undefined) {
      end = list.findIndex((item) => parse(item).id === args.atMessageId) + 1;
      if (end === 0) {
        if (this.#fault === 'fork-writes-before-check') this.#backend.set(target, [...list]);
        if (this.#fault === 'fork-refuses-untyped') throw new Error(`message ${args.atMessageId} is not stored`);
        throw new ConfigurationError(`message ${args.atMessageId} is not stored`);
      }
      if (this.#fault === 'fork-excludes-at') end--;
    }
    if (this.#fault === 'fork-first-page') end = Math.min(end, 100);
    const start = this.#fault === 'fork-window' && this.maxMessages ? Math.max(0, end - this.maxMessages) : 0;
    if (this.#fault === 'fork-shares') this.#backend.set(target, list);
    else this.#backend.set(target, [...(this.#backend.get(target) ?? []), ...list.slice(start, end)]);
    if (this.#fault === 'fork-moves') list.splice(start, end - start);
    return this.#fault === 'fork-wrong-count' ? list.length : end - start;
  }

  override shouldLoad(args: Pick<ProviderRunArgs, 'agent' | 'session' | 'context'>): boolean {
    if (this.#fault === 'never-loads') return false;
    return this.#fault === 'always-loads' ? true : super.shouldLoad(args);
  }

  override async beforeRun(args: ProviderRunArgs): Promise<void> {
    if (this.#fault !== 'keeps-leading-results') return super.beforeRun(args);
    if (!this.shouldLoad(args)) return;
    const limit = this.maxMessages;
    args.context.extendMessages(
      this.sourceId,
      await this.getMessages(args.context.sessionId, { state: args.state, ...(limit ? { limit } : {}) }),
      'history',
    );
  }

  override async afterRun(args: ProviderRunArgs): Promise<void> {
    const { context } = args;
    if (this.#fault === 'stores-whole-context') {
      if (context.error === undefined)
        await this.saveMessages(context.sessionId, context.getMessages({ includeInput: true, includeResponse: true }));
      return;
    }
    if (this.#fault === 'stores-failed-runs' && context.error !== undefined) {
      await this.saveMessages(context.sessionId, context.inputMessages);
      return;
    }
    return super.afterRun(args);
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A stored entry as a message: JSON text, or the object itself (the `live-references` fault). */
function parse(item: unknown): Message {
  return typeof item === 'string' ? (JSON.parse(item) as Message) : (item as Message);
}

function forgetOptional(m: Message): Message {
  const { authorName: _, ...rest } = m;
  return { ...rest, contents: m.contents.map((c) => (c.type === 'reasoning' ? { type: 'reasoning', text: c.text } : c)) };
}

const history = {
  noEmpty: 'getMessages of a session with no history is empty',
  loads: 'loads the stored conversation before a run, oldest first, attributed as history',
  autoService: "loadMessages 'auto' does not load once the session has a serviceSessionId, but still stores",
  autoStore: "loadMessages 'auto' does not load when the run sets store: true",
  autoDefault: "loadMessages 'auto' does not load when the client stores by default, unless the run sets store: false",
  loadTrue: 'loadMessages true loads even when the service keeps the conversation',
  storeOnly: 'loadMessages false never loads but still stores inputs, outputs and tool exchanges',
  storesTurn: 'stores the input, then the reply, with input and response attribution',
  toolExchange: 'stores a whole tool exchange in order: calls, results, final answer',
  failingTool: 'a failing tool is not a failed run: its error result is stored',
  noInputs: 'storeInputs: false stores only the replies',
  noOutputs: 'storeOutputs: false stores only the inputs',
  noneStored: 'storeInputs and storeOutputs both false store nothing',
  contextDefault: 'does not store injected context by default',
  contextStored: 'storeContextMessages: true stores injected context before the input, whatever the provider order',
  contextFrom: 'storeContextFrom stores injected context from the named sources only',
  otherHistory: "storeContextMessages never stores another history provider's loaded messages",
  notReStored: 'does not store the messages it loaded again',
  limit: 'getMessages with a limit returns the newest messages, newest last',
  maxMessages: 'maxMessages loads only the newest N messages, newest last, and still stores everything',
  orphan: 'a window that begins with a tool result drops it, so no result is orphaned',
  order: 'keeps the order of many turns',
  sessionsApart: 'keeps sessions apart',
  sourcesApart: 'keeps providers with different source ids apart on one backend',
  fromJson: "continues a conversation from the session's JSON, in a new agent with a new provider instance",
  fromId: 'continues a conversation from the session id alone',
  fidelityDirect: 'getMessages returns exactly what saveMessages stored, for every content kind',
  fidelityRun: 'a run stores every content kind unchanged and loads it back for the model',
  copies: 'changing what was saved or loaded changes nothing stored (loaded messages may be copies or read-only)',
  modelFails: 'a run whose model call fails stores nothing',
  aborted: 'an aborted run stores nothing',
  hostile: 'keeps every hostile session id apart and round-trips it',
  concurrentRuns: '50 concurrent runs on one session store every message once, each turn contiguous',
  concurrentSaves: '50 concurrent saveMessages calls on one session store every message once, each batch contiguous',
  retry: 'saving the same messages twice stores them once',
  overlap: 'a retried batch that overlaps the stored tail stores only the new messages',
  abandoned: 'a save abandoned when its signal aborts leaves the batch whole or absent, and its retry stores it once',
  retriedTurn:
    'a run retried with the same input message is sent the history before its first attempt and stores its turn once, with its own reply',
  conflict:
    'a message whose id is stored with other content refuses the whole batch with SessionStateError naming the id, reports message-id-conflict, and stores nothing',
  sameAgain: 'the same message saved again, with another createdAt and metadata, is stored once and silently',
  sameIdClient: 'a client that gives every reply the same id fails the next turn loudly instead of dropping its reply',
  retriedMiddle:
    'a retried turn that is not the newest is replaced in place, and the retry is sent every other turn but not its earlier attempt',
  modelCallMiddle: 'a retried turn that is not the newest is stored in its place, in one piece, batch after batch',
  modelCall: "stores a tool run as 'run' does, each message once",
  interrupted: 'a run aborted in a tool keeps its input and calls, and the next run is sent them answered as interrupted',
  blankIds: 'getMessages and saveMessages refuse empty and whitespace-only session ids with ConfigurationError and store nothing',
  nonJson: 'saveMessages of a message with a non-JSON value in metadata or a function result throws SessionStateError and stores nothing',
  tooDeep: 'saveMessages of a message nested deeper than 128 levels throws SessionStateError and stores nothing',
  pop: 'popMessages removes the newest message and resolves to it; the rest stays in order',
  popCount: 'popMessages with a count removes that many, oldest first; past the start it removes what there is, then []',
  popTurn: 'popping the last turn undoes it: the next run does not see it, and its messages can be saved again',
  popApart: 'popMessages touches only its own session and source id',
  popRace: 'concurrent pops of one message each return distinct messages, and every one is gone',
  popRefusals:
    'popMessages refuses a count that is not a positive integer, and blank session ids, with ConfigurationError; nothing changes',
  clear:
    'clearMessages removes every message of the session: nothing loads, the next run starts afresh, and the same ids can be saved again',
  clearTwice: 'clearMessages is idempotent: clearing a session with nothing stored, or clearing twice, resolves',
  clearApart: 'clearMessages touches only its own session and source id, even beside glob and look-alike session ids',
  clearBlank: 'clearMessages refuses blank session ids with ConfigurationError; nothing changes',
  forkAll:
    'forkMessages copies the whole history, every content kind, whatever maxMessages says, and resolves to the count; the source is untouched',
  forkAt: 'forkMessages with atMessageId copies up to and including that message',
  forkUnknown:
    'forkMessages refuses a message id not in the history (unknown, empty, or of another session) with InvalidInputError (ConfigurationError still accepted), before anything is written',
  forkEmpty:
    'forkMessages of a session with no history copies nothing and resolves to 0; with a message id it is refused with InvalidInputError (ConfigurationError still accepted)',
  forkDiverge: 'a fork and its source diverge: what is added to one never shows in the other',
  forkLong: 'forkMessages copies a long history (300 messages) whole and in order',
  forkHostile: 'forkMessages keeps every hostile session id apart, as source and as target',
  forkBlank: 'forkMessages refuses blank session ids, as source or target, with ConfigurationError; nothing is written',
  recallStoreFails: 'a turn whose store fails is never indexed',
  recallAborted: 'a run aborted while its turn is stored indexes nothing the history does not hold',
  recallRetried: 'a retried turn (same input message) leaves the answer the history kept in the index, once',
  tornRead: 'a reader racing a multi-message saveMessages sees the batch whole or not at all, in full reads and in windows',
  declared: 'declares its optional capabilities (popMessages, clearMessages) as it has them',
} as const;

/** What the reference backend has, as a first-party backend declares it. */
const HAS_EVERYTHING = { popMessages: true, clearMessages: true } as const;

/** What a fault variant declares instead, where that is the fault. */
const declaredBy: Partial<Record<HistoryFault, HistoryProviderCapabilities>> = {
  'declares-absent-clear': { clearMessages: false },
};

const sharedHistory = new Map<string, unknown[]>();
describeHistoryProvider('MapHistoryProvider (reference backend)', {
  create: (options) => new MapHistoryProvider(sharedHistory, options),
  capabilities: HAS_EVERYTHING,
});

/** Every title except `passing`: for faults that break nearly everything. */
function allBut(titles: Record<string, string>, passing: readonly string[]): string[] {
  return Object.values(titles).filter((t) => !passing.includes(t));
}

const historyFaults: Record<HistoryFault | 'drops-options' | 'per-instance-backend', readonly string[]> = {
  'ignores-limit': [
    history.tornRead,
    history.limit,
    history.maxMessages,
    history.orphan,
    history.fidelityDirect,
    history.hostile,
    history.pop,
    history.popTurn,
    history.forkAll,
  ],
  'oldest-window': [
    history.tornRead,
    history.limit,
    history.maxMessages,
    history.orphan,
    history.fidelityDirect,
    history.hostile,
    history.pop,
    history.popTurn,
    history.forkAll,
  ],
  'ignores-source-id': [history.sourcesApart, history.popApart, history.clearApart, history.forkHostile],
  'ignores-session-id': [
    history.contextStored,
    history.sessionsApart,
    history.hostile,
    history.popApart,
    history.clearApart,
    history.forkAt,
    history.forkUnknown,
    history.forkDiverge,
    history.forkLong,
    history.forkHostile,
  ],
  'newest-first': allBut(history, [
    history.declared,
    history.noEmpty,
    history.noneStored,
    history.notReStored,
    history.aborted,
    history.blankIds,
    history.nonJson,
    history.tooDeep,
    history.popCount,
    history.popApart,
    history.clearTwice,
    history.clearApart,
    history.clearBlank,
    history.forkEmpty,
    history.forkBlank,
    history.recallAborted,
  ]),
  'undefined-when-empty': allBut(history, [
    history.tornRead,
    history.declared,
    history.abandoned,
    history.autoDefault,
    history.storeOnly,
    history.limit,
    history.fidelityDirect,
    history.copies,
    history.concurrentSaves,
    history.retry,
    history.overlap,
    history.conflict,
    history.sameAgain,
    history.blankIds,
    history.nonJson,
    history.tooDeep,
    history.pop,
    history.popCount,
    history.popApart,
    history.popRace,
    history.popRefusals,
    history.clearBlank,
    history.forkAll,
    history.forkAt,
    history.forkLong,
    history.forkHostile,
    history.forkBlank,
  ]),
  'abandons-midway': [history.abandoned],
  'no-dedupe': [history.retry, history.overlap, history.abandoned, history.conflict, history.sameAgain, history.sameIdClient],
  'ignores-turns': [history.retriedTurn, history.retriedMiddle, history.modelCallMiddle, history.recallRetried],
  'skips-conflicts': [history.conflict, history.sameAgain, history.sameIdClient],
  'retries-at-tail-only': [history.retriedMiddle, history.modelCallMiddle],
  'appends-later-batches': [history.modelCallMiddle],
  'appends-one-by-one': [
    history.tornRead,
    history.concurrentRuns,
    history.concurrentSaves,
    history.conflict,
    history.sameIdClient,
    history.retriedMiddle,
    history.modelCallMiddle,
  ],
  'forgets-optional-fields': [
    history.storesTurn,
    history.fidelityDirect,
    history.fidelityRun,
    history.copies,
    history.sameAgain,
    history.forkAll,
  ],
  'normalizes-ids': [history.hostile, history.clearApart, history.forkHostile],
  'truncates-ids': [history.hostile, history.clearApart, history.forkHostile],
  'live-references': [history.copies],
  'never-loads': [
    history.loads,
    history.autoStore,
    history.autoDefault,
    history.loadTrue,
    history.maxMessages,
    history.orphan,
    history.order,
    history.sessionsApart,
    history.sourcesApart,
    history.fromJson,
    history.fromId,
    history.fidelityRun,
    history.popTurn,
    history.retriedTurn,
    history.retriedMiddle,
    history.modelCallMiddle,
    history.interrupted,
    history.forkDiverge,
    history.recallRetried,
  ],
  'always-loads': [history.autoService, history.autoStore, history.autoDefault, history.storeOnly],
  'stores-whole-context': [
    history.storesTurn,
    history.toolExchange,
    history.noInputs,
    history.noOutputs,
    history.noneStored,
    history.contextDefault,
    history.contextFrom,
    history.otherHistory,
    history.notReStored,
    history.fidelityRun,
    history.retriedTurn,
    history.retriedMiddle,
    history.recallRetried,
  ],
  'stores-failed-runs': [history.modelFails, history.aborted],
  'keeps-leading-results': [history.orphan, history.retriedTurn, history.retriedMiddle, history.modelCallMiddle, history.recallRetried],
  'drops-options': [
    history.loadTrue,
    history.storeOnly,
    history.noInputs,
    history.noOutputs,
    history.noneStored,
    history.contextStored,
    history.contextFrom,
    history.otherHistory,
    history.maxMessages,
    history.orphan,
    history.forkAll,
  ],
  'per-instance-backend': [history.fromJson, history.fromId, history.tornRead],
  'accepts-blank-ids': [history.blankIds, history.popRefusals, history.clearBlank, history.forkBlank],
  'stores-non-json': [history.nonJson, history.tooDeep],
  'stores-valid-prefix': [history.nonJson, history.tooDeep],
  'pops-oldest': [history.pop, history.popCount, history.popTurn, history.popRace],
  'pops-newest-first': [history.popCount, history.popTurn],
  'pop-read-then-remove': [history.popRace],
  'pop-keeps-ids': [history.popTurn],
  'pop-accepts-bad-count': [history.popRefusals],
  'clear-keeps-messages': [history.clear, history.clearTwice, history.clearApart],
  'clear-keeps-ids': [history.clear],
  'clear-fails-when-empty': [history.clearTwice],
  'clear-glob': [history.clearApart],
  'fork-window': [history.forkAll],
  'fork-excludes-at': [history.forkAt, history.forkDiverge, history.forkLong, history.forkHostile],
  'fork-writes-before-check': [history.forkUnknown],
  'fork-moves': [history.forkAll, history.forkAt, history.forkDiverge, history.forkLong, history.forkHostile],
  'fork-shares': [history.forkAt, history.forkDiverge, history.forkLong, history.forkHostile],
  'fork-first-page': [history.forkLong],
  'fork-wrong-count': [history.forkAt, history.forkLong],
  'fork-trims-target': [history.forkHostile],
  'fork-refuses-untyped': [history.forkUnknown, history.forkEmpty],
  'no-transaction': [history.tornRead],
  'declares-missing-pop': [
    history.pop,
    history.popCount,
    history.popTurn,
    history.popApart,
    history.popRace,
    history.popRefusals,
    history.declared,
  ],
  'declares-missing-clear': [history.clear, history.clearTwice, history.clearApart, history.clearBlank, history.declared],
  'declares-absent-clear': [history.declared],
};

describe('seeded faults', { tags: ['seeded-fault'] }, () => {
  for (const [fault, expectedFailures] of Object.entries(historyFaults)) {
    const backend = new Map<string, unknown[]>();
    describeHistoryProvider(`broken history: ${fault}`, {
      create: (options) => {
        if (fault === 'drops-options') return new MapHistoryProvider(backend, { sourceId: options.sourceId });
        if (fault === 'per-instance-backend') return new MapHistoryProvider(new Map(), options);
        return new MapHistoryProvider(backend, options, fault as HistoryFault);
      },
      capabilities: { ...HAS_EVERYTHING, ...declaredBy[fault as HistoryFault] },
      expectedFailures,
    });
  }
});

test('every test of the history suite fails for at least one fault', () => {
  const caught = new Set(Object.values(historyFaults).flat());
  const uncaught = Object.values(history).filter((title) => !caught.has(title));
  expect(uncaught).toEqual([]);
});
