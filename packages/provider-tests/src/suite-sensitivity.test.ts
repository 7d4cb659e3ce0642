/**
 * The suites must fail for backends that break the contract. A faithful reference backend passes
 * every test; each broken variant below has exactly one fault, and lists the tests that must fail
 * because of it (run as `it.fails`, so a test that wrongly passes turns this file red) while every
 * other test still passes.
 */
import {
  HistoryProvider,
  Message,
  type GetHistoryArgs,
  type HistoryProviderOptions,
  type PopHistoryArgs,
  type ProviderRunArgs,
  type SessionJson,
  type SessionStore,
  type SetSessionOptions,
  type StoredSession,
} from '@ctx/core';
import {
  checkIfMatch,
  checkInteger,
  checkSessionForWrite,
  checkSessionId,
  findRetriedTurn,
  parseSessionJson,
  type SaveHistoryArgs,
} from '@ctx/core/backend';
import { expect, test } from 'vitest';
import { describeHistoryProvider, describeSessionStore } from './index.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

type HistoryFault =
  | 'ignores-limit'
  | 'oldest-window'
  | 'ignores-source-id'
  | 'no-dedupe'
  | 'appends-one-by-one'
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
  | 'ignores-turns';

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
    const turn = args?.turn;
    if (this.#fault !== 'accepts-blank-ids') checkSessionId(sessionId);
    if (this.#fault !== 'stores-non-json' && this.#fault !== 'stores-valid-prefix')
      messages.forEach((m, i) => Message.parse(m, `$.messages[${i}]`));
    await tick();
    const key = this.#key(sessionId);
    const list = this.#backend.get(key) ?? [];
    this.#backend.set(key, list);
    const retried =
      turn?.opens && this.#fault !== 'ignores-turns'
        ? findRetriedTurn(
            list.map((item) => (typeof item === 'string' ? JSON.parse(item) : item)),
            turn.inputIds,
          )
        : undefined;
    if (retried !== undefined) list.splice(retried);
    const ids = new Set(list.map((item) => (typeof item === 'string' ? (JSON.parse(item) as Message).id : (item as Message).id)));
    for (const [i, m] of messages.entries()) {
      if (this.#fault === 'stores-valid-prefix') Message.parse(m, `$.messages[${i}]`);
      if ((ids.has(m.id) || this.#popped.has(m.id)) && this.#fault !== 'no-dedupe') continue;
      ids.add(m.id);
      if (this.#fault === 'appends-one-by-one') await tick();
      list.push(
        this.#fault === 'live-references'
          ? structuredClone(m)
          : JSON.stringify(this.#fault === 'forgets-optional-fields' ? forgetOptional(m) : m),
      );
    }
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

function forgetOptional(m: Message): Message {
  const { authorName: _, ...rest } = m;
  return { ...rest, contents: m.contents.map((c) => (c.type === 'reasoning' ? { type: 'reasoning', text: c.text } : c)) };
}

type StoreFault =
  | 'ignores-if-match'
  | 'content-etag'
  | 'check-then-write-race'
  | 'live-references'
  | 'delete-always-true'
  | 'case-insensitive-ids'
  | 'plain-error-on-conflict'
  | 'writes-before-check'
  | 'drops-empty-objects'
  | 'null-when-missing'
  | 'caches-reads'
  | 'accepts-blank-ids'
  | 'stores-non-json'
  | 'validates-after-write';

/** A session store over a map of JSON text, with async I/O and optional faults. */
class MapSessionStore implements SessionStore {
  readonly #items = new Map<string, { json: string; live: SessionJson; etag: string }>();
  readonly #cache = new Map<string, StoredSession>();
  readonly #fault: StoreFault | undefined;
  #version = 0;

  constructor(fault?: StoreFault) {
    this.#fault = fault;
  }

  #key(sessionId: string): string {
    return this.#fault === 'case-insensitive-ids' ? sessionId.toLowerCase() : sessionId;
  }

  async get(sessionId: string): Promise<StoredSession | undefined> {
    if (this.#fault !== 'accepts-blank-ids') checkSessionId(sessionId);
    await tick();
    const cached = this.#fault === 'caches-reads' ? this.#cache.get(sessionId) : undefined;
    if (cached) return structuredClone(cached);
    const item = this.#items.get(this.#key(sessionId));
    if (!item) return this.#fault === 'null-when-missing' ? (null as unknown as undefined) : undefined;
    const stored = { session: this.#fault === 'live-references' ? item.live : (JSON.parse(item.json) as SessionJson), etag: item.etag };
    this.#cache.set(sessionId, structuredClone(stored));
    return stored;
  }

  async set(session: SessionJson, options: SetSessionOptions = {}): Promise<string> {
    if (this.#fault === 'accepts-blank-ids') parseSessionJson(session);
    else if (this.#fault === 'stores-non-json' || this.#fault === 'validates-after-write') checkSessionId(session.sessionId);
    else checkSessionForWrite(session);
    await tick();
    const key = this.#key(session.sessionId);
    const current = this.#items.get(key);
    if (this.#fault === 'check-then-write-race') await tick();
    const json =
      this.#fault === 'drops-empty-objects'
        ? JSON.stringify(session, (_, v: unknown) => (isEmptyObject(v) ? undefined : v))
        : JSON.stringify(session);
    const etag = this.#fault === 'content-etag' ? String(hash(json)) : String(++this.#version);
    if (this.#fault === 'writes-before-check') this.#items.set(key, { json, live: session, etag });
    if (this.#fault !== 'ignores-if-match') {
      if (this.#fault === 'plain-error-on-conflict') {
        if (options.ifMatch !== undefined && (options.ifMatch === null ? current !== undefined : current?.etag !== options.ifMatch))
          throw new Error('conflict');
      } else {
        checkIfMatch(session.sessionId, current?.etag, options.ifMatch);
      }
    }
    this.#items.set(key, { json, live: session, etag });
    if (this.#fault === 'validates-after-write') checkSessionForWrite(session);
    return etag;
  }

  async delete(sessionId: string): Promise<boolean> {
    if (this.#fault !== 'accepts-blank-ids') checkSessionId(sessionId);
    await tick();
    const existed = this.#items.delete(this.#key(sessionId));
    return this.#fault === 'delete-always-true' ? true : existed;
  }
}

function isEmptyObject(v: unknown): boolean {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0;
}

function hash(text: string): number {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (Math.imul(31, h) + text.charCodeAt(i)) | 0;
  return h;
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
  retriedTurn:
    'a run retried with the same input message is sent the history before its first attempt and stores its turn once, with its own reply',
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
} as const;

const sharedHistory = new Map<string, unknown[]>();
describeHistoryProvider('MapHistoryProvider (reference backend)', {
  create: (options) => new MapHistoryProvider(sharedHistory, options),
});

/** Every title except `passing`: for faults that break nearly everything. */
function allBut(titles: Record<string, string>, passing: readonly string[]): string[] {
  return Object.values(titles).filter((t) => !passing.includes(t));
}

const historyFaults: Record<HistoryFault | 'drops-options' | 'per-instance-backend', readonly string[]> = {
  'ignores-limit': [
    history.limit,
    history.maxMessages,
    history.orphan,
    history.fidelityDirect,
    history.hostile,
    history.pop,
    history.popTurn,
  ],
  'oldest-window': [
    history.limit,
    history.maxMessages,
    history.orphan,
    history.fidelityDirect,
    history.hostile,
    history.pop,
    history.popTurn,
  ],
  'ignores-source-id': [history.sourcesApart, history.popApart],
  'ignores-session-id': [history.contextStored, history.sessionsApart, history.hostile, history.popApart],
  'newest-first': allBut(history, [
    history.noEmpty,
    history.noneStored,
    history.notReStored,
    history.aborted,
    history.blankIds,
    history.nonJson,
    history.tooDeep,
    history.popCount,
    history.popApart,
  ]),
  'undefined-when-empty': allBut(history, [
    history.autoDefault,
    history.storeOnly,
    history.limit,
    history.fidelityDirect,
    history.copies,
    history.concurrentSaves,
    history.retry,
    history.overlap,
    history.blankIds,
    history.nonJson,
    history.tooDeep,
    history.pop,
    history.popCount,
    history.popApart,
    history.popRace,
    history.popRefusals,
  ]),
  'no-dedupe': [history.retry, history.overlap],
  'ignores-turns': [history.retriedTurn],
  'appends-one-by-one': [history.concurrentRuns, history.concurrentSaves],
  'forgets-optional-fields': [history.storesTurn, history.fidelityDirect, history.fidelityRun, history.copies],
  'normalizes-ids': [history.hostile],
  'truncates-ids': [history.hostile],
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
    history.interrupted,
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
  ],
  'stores-failed-runs': [history.modelFails, history.aborted],
  'keeps-leading-results': [history.orphan, history.retriedTurn],
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
  ],
  'per-instance-backend': [history.fromJson, history.fromId],
  'accepts-blank-ids': [history.blankIds, history.popRefusals],
  'stores-non-json': [history.nonJson, history.tooDeep],
  'stores-valid-prefix': [history.nonJson, history.tooDeep],
  'pops-oldest': [history.pop, history.popCount, history.popTurn, history.popRace],
  'pops-newest-first': [history.popCount, history.popTurn],
  'pop-read-then-remove': [history.popRace],
  'pop-keeps-ids': [history.popTurn],
  'pop-accepts-bad-count': [history.popRefusals],
};

for (const [fault, expectedFailures] of Object.entries(historyFaults)) {
  const backend = new Map<string, unknown[]>();
  describeHistoryProvider(`broken history: ${fault}`, {
    create: (options) => {
      if (fault === 'drops-options') return new MapHistoryProvider(backend, { sourceId: options.sourceId });
      if (fault === 'per-instance-backend') return new MapHistoryProvider(new Map(), options);
      return new MapHistoryProvider(backend, options, fault as HistoryFault);
    },
    expectedFailures,
  });
}

const store = {
  unknown: 'get of an unknown id resolves to undefined',
  roundTrip: 'set then get returns the same session, deep-equal, with the etag set returned',
  noService: 'a session without a serviceSessionId comes back without one',
  copies: 'the store holds copies: changing a session after set or after get changes nothing stored',
  etag: 'the etag changes on every set, even of identical content',
  delete: 'delete resolves to whether a session was stored',
  current: 'ifMatch with the current etag writes and returns a new etag',
  stale: 'ifMatch with a stale etag throws ConcurrencyError and writes nothing',
  createOnly: 'ifMatch null creates a session only when none is stored',
  missing: 'ifMatch with an etag on a missing session throws ConcurrencyError and creates nothing',
  raceIfMatch: '20 concurrent sets with the same ifMatch: exactly one wins, the others get ConcurrencyError',
  raceCreate: '20 concurrent creates with ifMatch null: exactly one wins, the others get ConcurrencyError',
  raceBlind: '20 concurrent unconditional sets leave one whole session with the etag its writer got',
  hostile: 'keeps every hostile session id apart and round-trips it',
  agents: 'continues a conversation across two agent instances',
  agentConflict: 'saveSession throws ConcurrencyError when someone saved the session after it was loaded',
  agentNew: 'two agents starting the same new session: the second saveSession throws ConcurrencyError',
  blankIds: 'get, set and delete refuse empty and whitespace-only session ids with ConfigurationError and touch nothing',
  nonJson: 'set of a session holding NaN, a Map, a Date or an array state slot throws SessionStateError and writes nothing',
  tooDeep: 'set of a session nested deeper than 128 levels or holding a cycle throws SessionStateError and writes nothing',
} as const;

describeSessionStore('MapSessionStore (reference store)', { create: () => new MapSessionStore() });

const storeFaults: Record<StoreFault, readonly string[]> = {
  'ignores-if-match': [
    store.stale,
    store.createOnly,
    store.missing,
    store.raceIfMatch,
    store.raceCreate,
    store.agentConflict,
    store.agentNew,
  ],
  'content-etag': [store.etag],
  'check-then-write-race': [store.raceIfMatch, store.raceCreate],
  'live-references': [store.copies],
  'delete-always-true': [store.delete],
  'case-insensitive-ids': [store.hostile],
  'plain-error-on-conflict': [
    store.stale,
    store.createOnly,
    store.missing,
    store.raceIfMatch,
    store.raceCreate,
    store.agentConflict,
    store.agentNew,
  ],
  'writes-before-check': [
    store.stale,
    store.createOnly,
    store.missing,
    store.raceIfMatch,
    store.raceCreate,
    store.agentConflict,
    store.agentNew,
  ],
  'drops-empty-objects': [
    store.roundTrip,
    store.noService,
    store.copies,
    store.etag,
    store.current,
    store.stale,
    store.createOnly,
    store.missing,
    store.raceIfMatch,
    store.raceCreate,
    store.raceBlind,
    store.hostile,
    store.blankIds,
    store.nonJson,
    store.tooDeep,
  ],
  'null-when-missing': [store.unknown, store.delete, store.missing, store.hostile, store.nonJson],
  'caches-reads': [store.hostile, store.agents, store.agentConflict],
  'accepts-blank-ids': [store.blankIds],
  'stores-non-json': [store.nonJson, store.tooDeep],
  'validates-after-write': [store.nonJson, store.tooDeep],
};

for (const [fault, expectedFailures] of Object.entries(storeFaults)) {
  describeSessionStore(`broken store: ${fault}`, { create: () => new MapSessionStore(fault as StoreFault), expectedFailures });
}

test('every test of both suites fails for at least one fault', () => {
  const caught = new Set([...Object.values(historyFaults).flat(), ...Object.values(storeFaults).flat()]);
  const uncaught = [...Object.values(history), ...Object.values(store)].filter((title) => !caught.has(title));
  expect(uncaught).toEqual([]);
});
