import {
  ConfigurationError,
  CtxError,
  createCharacterTokenizer,
  Message,
  SessionStateError,
  type BudgetPolicy,
  type ContextProvider,
  type JsonObject,
  type JsonValue,
  type ProviderGate,
  type ProviderRunArgs,
  type SessionContext,
  type SessionHookArgs,
  type SessionView,
  type Tokenizer,
  type UserDataArgs,
} from '@ctx/core';
import { abortable, checkInteger, checkOptionNames, optionNames, recordBudget } from '@ctx/core/backend';
import { callMem0, toCtxError, type Mem0CallSite } from './errors.js';
import {
  createOssAdapter,
  createPlatformAdapter,
  isMem0Adapter,
  toMem0Adapter,
  type Mem0Adapter,
  type Mem0AddMessage,
  type Mem0Memory,
  type MemoryClientLike,
  type OssMemoryLike,
} from './mem0-adapter.js';
import { createMemoryMessage, fitMemories, isMemoryMessage, renderMemories, type Mem0Render } from './memory-message.js';
import {
  checkMem0Id,
  checkScopeKeys,
  MEM0_SCOPE_KEYS,
  pickScope,
  quoteId,
  resolveIds,
  scopeKey,
  type Mem0Scope,
  type Mem0ScopeKey,
} from './scope.js';

/** A background write that failed. */
export interface Mem0WriteFailure {
  sourceId: string;
  sessionId: string;
  /** The ids the turn was to be stored under. */
  scope: Mem0Scope;
  /** How many messages the write carried. */
  messages: number;
  /** A `BackendUnavailableError` or `ConfigurationError` (the client's error is its `cause`). */
  error: CtxError;
}

/** What `flush()` resolves to. */
export interface Mem0FlushResult {
  /** Background writes that settled since the last flush (succeeded or failed). */
  settled: number;
  /** The failures among them (the newest 100 at most). */
  failed: Mem0WriteFailure[];
}

/** What the provider did in one run, in `context.metadata['ctx.mem0'][sourceId]` (see `mem0ReportOf`). */
export interface Mem0RunReport {
  /** The search scopes that were searched (those whose ids were all known). */
  searched: Mem0Scope[];
  /** Distinct memories the searches returned. */
  found: number;
  /** Ids of the memories in the memory message, most relevant first. */
  injected: string[];
  /** Memories dropped because they belong to another user (or to a user, in a session without one). */
  droppedForeign: number;
  /** Memories dropped by `minScore`. */
  droppedBelowMinScore: number;
  /** Memories dropped by `topK` after merging the scopes. */
  droppedOverTopK: number;
  /** Memories dropped to fit `budget`. */
  droppedOverBudget: number;
  /** Results without an id or text, ignored. */
  malformed: number;
  /** Tokens of the memory message (by the budget's tokenizer, or the character estimate). */
  tokens: number;
  /**
   * What happened to the turn: `'stored'` (awaited), `'queued'` (background), or why nothing was
   * stored: `'failed-run'`, `'nothing-to-store'`, `'missing-scope'` (an id of `storeScope` is unknown).
   */
  write?: 'stored' | 'queued' | 'failed-run' | 'nothing-to-store' | 'missing-scope';
}

/** Options of `Mem0ContextProvider`. Give exactly one of `client`, `apiKey` and `oss`. */
export interface Mem0ContextProviderOptions {
  /**
   * An injected client: a platform `MemoryClient` from `mem0ai`, an open-source `Memory` from
   * `mem0ai/oss`, or any `Mem0Adapter`. Shared with the app, never closed here.
   */
  client?: MemoryClientLike | OssMemoryLike | Mem0Adapter;
  /** Creates a platform `MemoryClient` with this key (on first use). */
  apiKey?: string;
  /** The platform host for `apiKey`. Default mem0's (`https://api.mem0.ai`). */
  host?: string;
  /** Creates an open-source `Memory` from `mem0ai/oss` with this config (on first use). */
  oss?: Record<string, unknown>;
  /** Attribution of the memory message and the key of the state slot. Default `'mem0'`. */
  sourceId?: string;
  /** Default user id; `state.userId` of a session overrides it. */
  userId?: string;
  /** Default agent id; `state.agentId` overrides it. */
  agentId?: string;
  /** Default app id; `state.appId` overrides it. */
  appId?: string;
  /** Default run id; `state.runId` overrides it; without both, the session id. */
  runId?: string;
  /**
   * The ids a turn's memories are stored under. Every one is required: a session that lacks one
   * stores nothing. Default `['userId']`.
   */
  storeScope?: readonly Mem0ScopeKey[];
  /**
   * The searches before each run, one per entry, each filtering on exactly those ids (an entry
   * whose ids are not all known is not searched). Default `[['userId']]`. Results carrying another
   * user's id are dropped whatever the scope, so a shared scope such as `['agentId']` never serves
   * one user's memories to another.
   */
  searchScopes?: readonly (readonly Mem0ScopeKey[])[];
  /** How many conversation messages before the input join it in the search query. Default 0. */
  queryMessages?: number;
  /** The most memories injected, after merging the scopes. Default 5. Also each search's `topK`. */
  topK?: number;
  /** Memories scoring below this are dropped (and the backends are asked for it as `threshold`). In [0, 1]. */
  minScore?: number;
  /**
   * A token cap on the memory message (header and per-message overhead included), counted with
   * `budget.tokenizer` (default `createCharacterTokenizer()`); the least relevant memories go first.
   * Recorded for `auditContext` like core's providers. `budget.priority` does not apply: memories
   * are ranked by score.
   */
  budget?: BudgetPolicy;
  /**
   * Gating, evaluated once per run before the provider does anything. When it returns false the
   * provider takes no part in that run: it neither searches nor injects, and the turn is not
   * stored either (a run the gate declines leaves no memory behind). A throw counts as a mem0
   * failure of `beforeRun` (`onError` applies). Default: every run.
   */
  when?: ProviderGate;
  /** Role of the memory message. Default `'user'` (stored memories never gain system authority). */
  role?: 'user' | 'system';
  /** First line of the memory message. Default `DEFAULT_MEMORY_HEADER`. */
  header?: string;
  /** Replaces the whole rendering of the memory message text. */
  render?: Mem0Render;
  /** `'await'` (default): the run waits for mem0 to take the turn. `'background'`: it does not; see `flush()`. */
  writeMode?: 'await' | 'background';
  /** Metadata stored with every memory. */
  metadata?: JsonObject;
  /** mem0's `infer` for adds (extract facts with mem0's LLM). Default: mem0's (true). */
  infer?: boolean;
  /** `'parallel'` (default) runs the scope searches at once; `'sequential'` one after another. */
  searchConcurrency?: 'parallel' | 'sequential';
  /** Upper bound of one search in milliseconds. Default 10,000. */
  searchTimeoutMs?: number;
  /** Upper bound of one add in milliseconds. Default 60,000 (mem0 runs an LLM). */
  writeTimeoutMs?: number;
  /** `'skip'` (default): a mem0 failure leaves the provider out of the run with a `provider-skipped` event. `'throw'` fails the run. */
  onError?: 'skip' | 'throw';
  /**
   * `agent.deleteSession` deletes the memories stored for the session: those under its whole
   * `storeScope`, which must then include `'runId'` (memories stored without the session's run id
   * cannot be told apart by session), with no fixed `runId` option. Default `false`: memories are
   * long-term and outlive the session they came from.
   */
  forgetOnSessionDelete?: boolean;
  /**
   * Maps a ctx user id (a session's `metadata.userId`, the `userId` of `agent.exportUserData` and
   * `agent.deleteUserData`) to the mem0 `user_id`. Default: the same id. The result must be a valid
   * mem0 id (`checkMem0Id`).
   */
  mapUserId?: (userId: string) => string;
}

/** What `exportUserData` returns: the user's memories in the provider's user scope. */
export interface Mem0UserDataExport {
  /** The ids the memories were listed by: the mapped `userId`, and the `agentId` / `appId` options that `storeScope` names. */
  scope: Mem0Scope;
  /** Every memory stored under `scope`, as mem0 lists them. */
  memories: Mem0Memory[];
}

const OWNER = 'Mem0ContextProvider';
const OPTION_NAMES = optionNames<Mem0ContextProviderOptions>()({
  client: true,
  apiKey: true,
  host: true,
  oss: true,
  sourceId: true,
  userId: true,
  agentId: true,
  appId: true,
  runId: true,
  storeScope: true,
  searchScopes: true,
  queryMessages: true,
  topK: true,
  minScore: true,
  budget: true,
  when: true,
  role: true,
  header: true,
  render: true,
  writeMode: true,
  metadata: true,
  infer: true,
  searchConcurrency: true,
  searchTimeoutMs: true,
  writeTimeoutMs: true,
  onError: true,
  forgetOnSessionDelete: true,
  mapUserId: true,
});
const REPORT_KEY = 'ctx.mem0';
const MAX_QUERY_CHARS = 4000;
const MAX_KEPT_FAILURES = 100;

/** Sends a `provider-diagnostic` event through core's `report`, when the running core has it. */
function diagnose(report: ProviderRunArgs['report'] | undefined, code: string, message: string, data: JsonObject, error?: unknown): void {
  if (typeof report !== 'function') return;
  report({ code, message, data, ...(error !== undefined ? { error } : {}) });
}

/** The report of the provider `sourceId` for the run `context` belongs to, once its `beforeRun` has run. */
export function mem0ReportOf(context: SessionContext, sourceId = 'mem0'): Mem0RunReport | undefined {
  const all = context.metadata[REPORT_KEY] as Record<string, Mem0RunReport> | undefined;
  return all?.[sourceId];
}

/** An integer option (at least `min`), or `fallback` when it is not given. */
function integerOption(value: number | undefined, fallback: number, name: string, min = 1): number {
  return value === undefined ? fallback : checkInteger(OWNER, name, value, min);
}

/**
 * Long-term memory across sessions with mem0. Before each run it searches mem0 with the input (in
 * every configured scope, in parallel), merges the results by memory id, and injects the most
 * relevant ones as one attributed context message. After the run it hands the user's input and the
 * assistant's reply, and nothing else, to mem0 for extraction. Works with the platform
 * `MemoryClient` and the open-source `Memory`; stateless, so one instance serves every session.
 * @throws ConfigurationError for invalid options, or an option it does not know (named in the message).
 */
export class Mem0ContextProvider implements ContextProvider {
  readonly sourceId: string;
  readonly onError: 'skip' | 'throw';
  readonly #adapter: () => Promise<Mem0Adapter>;
  readonly #ids: Mem0Scope;
  readonly #storeScope: readonly Mem0ScopeKey[];
  readonly #searchScopes: readonly (readonly Mem0ScopeKey[])[];
  readonly #queryMessages: number;
  readonly #topK: number;
  readonly #minScore: number | undefined;
  readonly #maxTokens: number | undefined;
  readonly #tokenizer: Tokenizer;
  readonly #role: 'user' | 'system';
  readonly #render: Mem0Render;
  readonly #writeMode: 'await' | 'background';
  readonly #metadata: JsonObject | undefined;
  readonly #infer: boolean | undefined;
  readonly #parallel: boolean;
  readonly #searchTimeoutMs: number;
  readonly #writeTimeoutMs: number;
  readonly #forgetOnSessionDelete: boolean;
  readonly #mapUserId: (userId: string) => string;
  readonly #when: ProviderGate | undefined;
  /** Each gated run's decision, by its context, so `afterRun` follows what `beforeRun` decided. */
  readonly #gateDecisions = new WeakMap<SessionContext, boolean>();
  /** Writes not yet settled, with the id of the session each came from. */
  readonly #pending = new Map<Promise<void>, string>();
  /** The writes of each scope, chained (by `scopeKey`): the last one's settling, and the scope. */
  readonly #chains = new Map<string, { scope: Mem0Scope; settled: Promise<void> }>();
  /** Background writes settled since the last flush, by session id. */
  readonly #settled = new Map<string, number>();
  #failures: Mem0WriteFailure[] = [];

  constructor(options: Mem0ContextProviderOptions) {
    checkOptionNames(OWNER, options, OPTION_NAMES);
    const sources = [options.client !== undefined, options.apiKey !== undefined, options.oss !== undefined].filter(Boolean).length;
    if (sources !== 1)
      throw new ConfigurationError(
        `Mem0ContextProvider needs exactly one of \`client\` (a MemoryClient, a Memory or a Mem0Adapter), \`apiKey\` (platform) or \`oss\` (a mem0ai/oss Memory config); got ${sources}.`,
      );
    if (options.host !== undefined && options.apiKey === undefined)
      throw new ConfigurationError('Mem0ContextProvider: `host` goes with `apiKey`; for an injected client set the host on the client.');
    this.sourceId = options.sourceId ?? 'mem0';
    if (typeof this.sourceId !== 'string' || this.sourceId === '')
      throw new ConfigurationError('Mem0ContextProvider: sourceId must be a non-empty string.');
    this.onError = options.onError ?? 'skip';
    if (this.onError !== 'skip' && this.onError !== 'throw')
      throw new ConfigurationError(`Mem0ContextProvider: onError must be 'skip' or 'throw', got ${quoteId(this.onError)}.`);
    this.#adapter = this.#connect(options);

    this.#ids = {};
    for (const key of MEM0_SCOPE_KEYS) {
      const value = options[key];
      if (value === undefined) continue;
      const problem = checkMem0Id(value);
      if (problem) throw new ConfigurationError(`Mem0ContextProvider: ${key} ${quoteId(value)} ${problem}.`);
      this.#ids[key] = value;
    }
    this.#storeScope = checkScopeKeys(options.storeScope ?? ['userId'], 'storeScope');
    const searchScopes = options.searchScopes ?? [['userId']];
    if (!Array.isArray(searchScopes))
      throw new ConfigurationError('Mem0ContextProvider: searchScopes must be a list of scopes, e.g. [["userId"]].');
    this.#searchScopes = searchScopes.map((s, i) => checkScopeKeys(s, `searchScopes[${i}]`));
    this.#queryMessages = integerOption(options.queryMessages, 0, 'queryMessages', 0);
    this.#topK = integerOption(options.topK, 5, 'topK');
    if (options.minScore !== undefined && !(typeof options.minScore === 'number' && options.minScore >= 0 && options.minScore <= 1)) {
      throw new ConfigurationError(`Mem0ContextProvider: minScore must be a number in [0, 1], got ${String(options.minScore)}.`);
    }
    this.#minScore = options.minScore;
    if (options.budget !== undefined) this.#maxTokens = checkInteger(OWNER, 'budget.maxTokens', options.budget?.maxTokens, 0);
    this.#tokenizer = options.budget?.tokenizer ?? createCharacterTokenizer();
    this.#role = options.role ?? 'user';
    if (this.#role !== 'user' && this.#role !== 'system')
      throw new ConfigurationError(`Mem0ContextProvider: role must be 'user' or 'system', got ${quoteId(this.#role)}.`);
    const header = options.header;
    this.#render = options.render ?? ((memories) => renderMemories(memories, header));
    this.#writeMode = options.writeMode ?? 'await';
    if (this.#writeMode !== 'await' && this.#writeMode !== 'background')
      throw new ConfigurationError(`Mem0ContextProvider: writeMode must be 'await' or 'background', got ${quoteId(this.#writeMode)}.`);
    this.#metadata = options.metadata;
    this.#infer = options.infer;
    this.#parallel = (options.searchConcurrency ?? 'parallel') === 'parallel';
    this.#searchTimeoutMs = integerOption(options.searchTimeoutMs, 10_000, 'searchTimeoutMs');
    this.#writeTimeoutMs = integerOption(options.writeTimeoutMs, 60_000, 'writeTimeoutMs');
    this.#mapUserId = options.mapUserId ?? ((userId) => userId);
    if (typeof this.#mapUserId !== 'function')
      throw new ConfigurationError('Mem0ContextProvider: mapUserId must be a function from a ctx user id to a mem0 user_id.');
    if (options.when !== undefined && typeof options.when !== 'function')
      throw new ConfigurationError('Mem0ContextProvider: when must be a function (context, args) => boolean | Promise<boolean>.');
    this.#when = options.when;
    this.#forgetOnSessionDelete = options.forgetOnSessionDelete ?? false;
    if (typeof this.#forgetOnSessionDelete !== 'boolean')
      throw new ConfigurationError(
        `Mem0ContextProvider: forgetOnSessionDelete must be a boolean, got ${quoteId(this.#forgetOnSessionDelete)}.`,
      );
    if (this.#forgetOnSessionDelete) {
      if (!this.#storeScope.includes('runId'))
        throw new ConfigurationError(
          "Mem0ContextProvider: forgetOnSessionDelete needs 'runId' in storeScope (e.g. ['userId', 'runId']): memories stored without the session's run id cannot be told apart by session.",
        );
      if (this.#ids.runId !== undefined)
        throw new ConfigurationError(
          'Mem0ContextProvider: forgetOnSessionDelete cannot go with a fixed runId option: every session would share that run id, so deleting one would delete the memories of all.',
        );
      if (isMem0Adapter(options.client) && typeof options.client.deleteAll !== 'function')
        throw new ConfigurationError('Mem0ContextProvider: forgetOnSessionDelete needs a client adapter with deleteAll.');
    }
  }

  /** Background writes not yet settled. */
  get pendingWrites(): number {
    return this.#pending.size;
  }

  /**
   * Waits until every background write (including those started while waiting) has settled, and
   * returns how many settled since the last flush and which failed; with `sessionId`
   * (`agent.flush({ session })`), only the writes of that session, and only those are counted and
   * reported (the others' wait for a later flush). Call it before the process exits, or between
   * turns that must see each other's memories. Rejects only with the reason of `signal` when it
   * aborts first; the writes carry on and a later flush reports them.
   */
  async flush(options: { signal?: AbortSignal; sessionId?: string } = {}): Promise<Mem0FlushResult> {
    const { sessionId } = options;
    const ofSession = (id: string) => sessionId === undefined || id === sessionId;
    for (;;) {
      const waiting = [...this.#pending].filter(([, id]) => ofSession(id)).map(([write]) => write);
      if (waiting.length === 0) break;
      await abortable(Promise.allSettled(waiting), options.signal);
    }
    let settled = 0;
    for (const [id, count] of this.#settled) {
      if (!ofSession(id)) continue;
      settled += count;
      this.#settled.delete(id);
    }
    const failed = this.#failures.filter((f) => ofSession(f.sessionId));
    this.#failures = this.#failures.filter((f) => !ofSession(f.sessionId));
    return { settled, failed };
  }

  /** Checks a restored session's state slot: each id present must be a valid mem0 id. */
  validateState(state: JsonObject, path: string): void {
    resolveIds({}, state, path);
  }

  /**
   * Searches mem0 and injects the memory message, unless `when` declines the run (then nothing is
   * searched, injected or, in `afterRun`, stored).
   */
  async beforeRun(args: ProviderRunArgs): Promise<void> {
    const { session, context, state, signal, report } = args;
    if (this.#when) {
      const open = Boolean(await this.#when(context, args));
      this.#gateDecisions.set(context, open);
      if (!open) return;
    }
    const run: Mem0RunReport = {
      searched: [],
      found: 0,
      injected: [],
      droppedForeign: 0,
      droppedBelowMinScore: 0,
      droppedOverTopK: 0,
      droppedOverBudget: 0,
      malformed: 0,
      tokens: 0,
    };
    const reports = (context.metadata[REPORT_KEY] ??= {}) as Record<string, Mem0RunReport>;
    reports[this.sourceId] = run;
    const ids = this.#idsOf(session, state);
    const query = this.#query(context);
    if (query === '') return;
    const scopes: Mem0Scope[] = [];
    for (const keys of this.#searchScopes) {
      const scope = pickScope(keys, ids, session.sessionId);
      if (scope && !scopes.some((s) => scopeKey(s) === scopeKey(scope))) scopes.push(scope);
    }
    if (scopes.length === 0) return;
    const adapter = await this.#adapter();
    const site: Mem0CallSite = { operation: 'search', kind: adapter.kind, sessionId: session.sessionId };
    const searchOne = (scope: Mem0Scope) => {
      const request = { query, scope, topK: this.#topK, ...(this.#minScore !== undefined ? { threshold: this.#minScore } : {}) };
      return callMem0(() => adapter.search(request), site, this.#searchTimeoutMs, 'searchTimeoutMs', signal);
    };
    let lists: Mem0Memory[][];
    if (this.#parallel) {
      lists = await Promise.all(scopes.map(searchOne));
    } else {
      lists = [];
      for (const scope of scopes) lists.push(await searchOne(scope));
    }
    run.searched = scopes;

    const byId = new Map<string, Mem0Memory>();
    for (const list of lists) {
      for (const memory of Array.isArray(list) ? list : []) {
        if (typeof memory?.id !== 'string' || memory.id === '' || typeof memory.text !== 'string' || memory.text.trim() === '') {
          run.malformed++;
          continue;
        }
        const seen = byId.get(memory.id);
        if (!seen || (memory.score ?? -Infinity) > (seen.score ?? -Infinity)) byId.set(memory.id, memory);
      }
    }
    run.found = byId.size;
    let ranked = [...byId.values()].filter((m) => {
      // Whatever the scope searched, a memory of another user is never served.
      const foreign = m.userId !== undefined && m.userId !== ids.userId;
      if (foreign) run.droppedForeign++;
      return !foreign;
    });
    if (this.#minScore !== undefined) {
      const min = this.#minScore;
      const before = ranked.length;
      ranked = ranked.filter((m) => m.score === undefined || m.score >= min);
      run.droppedBelowMinScore = before - ranked.length;
    }
    ranked = ranked
      .map((m, i) => ({ m, i }))
      .sort((a, b) => (b.m.score ?? -Infinity) - (a.m.score ?? -Infinity) || a.i - b.i)
      .map((x) => x.m);
    run.droppedOverTopK = Math.max(0, ranked.length - this.#topK);
    ranked = ranked.slice(0, this.#topK);
    const fit = fitMemories(ranked, (kept) => createMemoryMessage(kept, this.#role, this.#render), this.#tokenizer, this.#maxTokens);
    run.droppedOverBudget = ranked.length - fit.kept.length;
    run.tokens = fit.tokens;
    if (this.#maxTokens !== undefined)
      recordBudget(context.metadata, this.sourceId, { maxTokens: this.#maxTokens, tokens: fit.tokens, dropped: run.droppedOverBudget });
    if (run.droppedForeign > 0) {
      diagnose(
        report,
        'foreign-memories-dropped',
        `${run.droppedForeign} memories of other users came back from mem0 and were dropped; check searchScopes.`,
        { sessionId: session.sessionId, dropped: run.droppedForeign },
      );
    }
    if (run.malformed > 0)
      diagnose(report, 'malformed-memories', `${run.malformed} mem0 results had no id or text and were ignored.`, {
        sessionId: session.sessionId,
        malformed: run.malformed,
      });
    if (!fit.message) return;
    run.injected = fit.kept.map((m) => m.id);
    context.extendMessages(this.sourceId, [fit.message]);
  }

  /** Hands the turn (input and reply) to mem0, unless `when` declined the run in `beforeRun`. */
  async afterRun({ session, context, state, signal, report, redact }: ProviderRunArgs): Promise<void> {
    if (this.#when && this.#gateDecisions.get(context) !== true) return;
    const run = mem0ReportOf(context, this.sourceId);
    const note = (write: NonNullable<Mem0RunReport['write']>) => {
      if (run) run.write = write;
    };
    if (context.error !== undefined || !context.response) return note('failed-run');
    const turn = turnSelection(context);
    if (turn.length === 0) return note('nothing-to-store');
    const ids = this.#idsOf(session, state);
    const scope = pickScope(this.#storeScope, ids, session.sessionId);
    if (!scope) {
      const missing = this.#storeScope.filter((k) => ids[k] === undefined && k !== 'runId');
      diagnose(report, 'write-skipped', `The turn was not stored: the session has no ${missing.join(', ')} (storeScope).`, {
        sessionId: session.sessionId,
        missing,
      });
      return note('missing-scope');
    }
    // What mem0 gets is what the agent's `redact` lets out, never the original text.
    const messages = addMessages(redact ? await redact(turn) : turn, turn);
    if (messages.length === 0) return note('nothing-to-store');
    const adapter = await this.#adapter();
    const site: Mem0CallSite = { operation: 'add', kind: adapter.kind, sessionId: session.sessionId };
    const request = {
      messages,
      scope,
      ...(this.#metadata !== undefined ? { metadata: this.#metadata } : {}),
      ...(this.#infer !== undefined ? { infer: this.#infer } : {}),
    };
    // Writes of one scope run in order, so two quick turns reach mem0's extraction in sequence.
    const write = this.#enqueue(scope, () => callMem0(() => adapter.add(request), site, this.#writeTimeoutMs, 'writeTimeoutMs'));
    if (this.#writeMode === 'await') {
      // Tracked too: if the run is aborted while it waits, flush() still covers the write.
      const settled = write.then(
        () => {},
        () => {},
      );
      this.#pending.set(settled, session.sessionId);
      void settled.finally(() => this.#pending.delete(settled));
      // Bounds the wait in the queue too, and lets the run's signal end it.
      await callMem0(() => write, site, this.#writeTimeoutMs + 1000, 'writeTimeoutMs', signal);
      return note('stored');
    }
    const tracked = write.then(
      () => this.#countSettled(session.sessionId),
      (error: unknown) => {
        this.#countSettled(session.sessionId);
        const failure: Mem0WriteFailure = {
          sourceId: this.sourceId,
          sessionId: session.sessionId,
          scope,
          messages: messages.length,
          error: toCtxError(error, site),
        };
        this.#failures.push(failure);
        if (this.#failures.length > MAX_KEPT_FAILURES) this.#failures.shift();
        // Reaches the agent's onEvent as a `provider-diagnostic` event of the run that queued the write.
        diagnose(
          report,
          'background-write-failed',
          failure.error.message,
          { sessionId: failure.sessionId, scope: { ...scope }, messages: failure.messages },
          failure.error,
        );
      },
    );
    this.#pending.set(tracked, session.sessionId);
    void tracked.finally(() => this.#pending.delete(tracked));
    note('queued');
  }

  #countSettled(sessionId: string): void {
    this.#settled.set(sessionId, (this.#settled.get(sessionId) ?? 0) + 1);
  }

  /** The search query: the input's text, after the last `queryMessages` conversation messages. */
  #query(context: SessionContext): string {
    const parts: string[] = [];
    if (this.#queryMessages > 0) {
      const earlier = context.getMessages().filter((m) => {
        const type = Message.source(m)?.sourceType;
        return (type === 'history' || type === 'input') && (m.role === 'user' || m.role === 'assistant') && !isMemoryMessage(m);
      });
      for (const m of earlier.slice(-this.#queryMessages)) parts.push(Message.text(m));
    }
    for (const m of context.inputMessages) if (m.role === 'user' && !isMemoryMessage(m)) parts.push(Message.text(m));
    const query = parts
      .map((p) => p.trim())
      .filter(Boolean)
      .join('\n');
    return query.length > MAX_QUERY_CHARS ? query.slice(-MAX_QUERY_CHARS) : query;
  }

  #enqueue(scope: Mem0Scope, task: () => Promise<void>): Promise<void> {
    const key = scopeKey(scope);
    const previous = this.#chains.get(key)?.settled ?? Promise.resolve();
    const run = previous.then(task);
    const settled = run.then(
      () => {},
      () => {},
    );
    this.#chains.set(key, { scope, settled });
    void settled.then(() => {
      if (this.#chains.get(key)?.settled === settled) this.#chains.delete(key);
    });
    return run;
  }

  /** Waits (until `signal` aborts) for the writes in flight whose memories `filter` would match, so none lands after a delete. */
  async #writesSettled(filter: Mem0Scope, signal: AbortSignal): Promise<void> {
    const matches = (scope: Mem0Scope) => MEM0_SCOPE_KEYS.every((k) => filter[k] === undefined || filter[k] === scope[k]);
    const writes = [...this.#chains.values()].filter((chain) => matches(chain.scope)).map((chain) => chain.settled);
    if (writes.length > 0) await abortable(Promise.all(writes), signal);
  }

  /** The ids of a session: its state slot's, over its owner (`metadata.userId`, mapped) for `userId`, over the options. */
  #idsOf(session: SessionView, state: JsonObject): Mem0Scope {
    const defaults = { ...this.#ids };
    const owner = session.metadata?.userId;
    if (owner !== undefined && state.userId === undefined) {
      const { userId, problem } = this.#mem0User(owner);
      if (problem) throw new SessionStateError('$.metadata.userId', `${problem}, or set state.${this.sourceId}.userId.`);
      defaults.userId = userId;
    }
    return resolveIds(defaults, state, `$.state.${this.sourceId}`);
  }

  /** The mem0 user_id of a ctx user (`mapUserId`), and why it cannot be one, if so. */
  #mem0User(owner: string): { userId: string; problem?: string } {
    const userId = this.#mapUserId(owner);
    const problem = checkMem0Id(userId);
    if (!problem) return { userId };
    return {
      userId,
      problem: `maps to the mem0 user_id ${quoteId(userId)}, which ${problem}; give Mem0ContextProvider a mapUserId that makes valid ids`,
    };
  }

  /**
   * The scope of a user's memories: the mapped id with the `agentId` and `appId` options that
   * `storeScope` names (ids set per session, and the run id, are left out, so every session's
   * memories match). `undefined` when `storeScope` has no `userId`: memories are not kept per user.
   * @throws ConfigurationError when the mapped id is not a valid mem0 id.
   */
  #userScope(userId: string): Mem0Scope | undefined {
    if (!this.#storeScope.includes('userId')) return undefined;
    const mapped = this.#mem0User(userId);
    if (mapped.problem) throw new ConfigurationError(`Mem0ContextProvider: the user ${quoteId(userId)} ${mapped.problem}.`);
    const scope: Mem0Scope = { userId: mapped.userId };
    for (const key of ['agentId', 'appId'] as const) {
      const value = this.#ids[key];
      if (this.#storeScope.includes(key) && value !== undefined) scope[key] = value;
    }
    return scope;
  }

  /** The adapter, which must have `method` for `what`. */
  async #adapterWith(method: 'list' | 'deleteAll', what: string): Promise<Mem0Adapter & Required<Pick<Mem0Adapter, typeof method>>> {
    const adapter = await this.#adapter();
    if (typeof adapter[method] !== 'function')
      throw new ConfigurationError(`Mem0ContextProvider: ${what} needs the mem0 adapter "${adapter.kind}" to implement ${method}.`);
    return adapter as Mem0Adapter & Required<Pick<Mem0Adapter, typeof method>>;
  }

  /**
   * With `forgetOnSessionDelete`, deletes the memories stored under the session's `storeScope`
   * (its run id included), after any write of theirs still in flight. Otherwise does nothing.
   * @throws BackendUnavailableError or ConfigurationError (mapped as for writes) when mem0 fails; the delete can be retried.
   */
  async onSessionDeleted({ session, state, signal }: SessionHookArgs): Promise<void> {
    if (!this.#forgetOnSessionDelete) return;
    const scope = pickScope(this.#storeScope, this.#idsOf(session, state), session.sessionId);
    if (!scope) return; // an id of storeScope is unknown: nothing was ever stored for this session
    await this.#writesSettled(scope, signal);
    const adapter = await this.#adapterWith('deleteAll', 'forgetOnSessionDelete');
    const site: Mem0CallSite = { operation: 'delete', kind: adapter.kind, sessionId: session.sessionId };
    await callMem0(() => adapter.deleteAll({ scope }), site, this.#writeTimeoutMs, 'writeTimeoutMs', signal);
  }

  /**
   * Every memory of the user (mem0 `getAll` in the user's scope, all pages), as
   * `Mem0UserDataExport`; undefined when there is none or `storeScope` keeps no memories per user.
   * Each page is bounded by `searchTimeoutMs` and `signal`.
   */
  async exportUserData({ userId, signal }: UserDataArgs): Promise<JsonValue | undefined> {
    const scope = this.#userScope(userId);
    if (!scope) return undefined;
    const adapter = await this.#adapterWith('list', 'exportUserData');
    const site: Mem0CallSite = { operation: 'list', kind: adapter.kind, userId };
    const memories: Mem0Memory[] = [];
    const seen = new Set<string>();
    let cursor: string | undefined;
    do {
      const request = { scope, ...(cursor !== undefined ? { cursor } : {}) };
      const page = await callMem0(() => adapter.list(request), site, this.#searchTimeoutMs, 'searchTimeoutMs', signal);
      memories.push(...page.memories);
      cursor = page.cursor;
      if (cursor !== undefined && seen.has(cursor))
        throw new ConfigurationError(
          `Mem0ContextProvider: the mem0 adapter "${adapter.kind}" returned the list cursor ${quoteId(cursor)} twice.`,
        );
      if (cursor !== undefined) seen.add(cursor);
    } while (cursor !== undefined);
    if (memories.length === 0) return undefined;
    const out: Mem0UserDataExport = { scope, memories };
    return out as unknown as JsonValue;
  }

  /**
   * Deletes every memory of the user (mem0 `deleteAll` in the user's scope), after any write of
   * theirs still in flight; nothing when `storeScope` keeps no memories per user. Idempotent.
   * Bounded by `writeTimeoutMs` and `signal`.
   */
  async deleteUserData({ userId, signal }: UserDataArgs): Promise<void> {
    const scope = this.#userScope(userId);
    if (!scope) return;
    await this.#writesSettled(scope, signal);
    const adapter = await this.#adapterWith('deleteAll', 'deleteUserData');
    const site: Mem0CallSite = { operation: 'delete', kind: adapter.kind, userId };
    await callMem0(() => adapter.deleteAll({ scope }), site, this.#writeTimeoutMs, 'writeTimeoutMs', signal);
  }

  #connect(options: Mem0ContextProviderOptions): () => Promise<Mem0Adapter> {
    if (options.client !== undefined) {
      const adapter = toMem0Adapter(options.client);
      const ready = Promise.resolve(adapter);
      return () => ready;
    }
    let created: Promise<Mem0Adapter> | undefined;
    const create = options.apiKey !== undefined ? platformFactory(options.apiKey, options.host) : ossFactory(options.oss!);
    return () => {
      created ??= create().catch((error: unknown) => {
        created = undefined; // try again on the next run
        throw CtxError.isInstance(error)
          ? error
          : new ConfigurationError(
              `Mem0ContextProvider could not create its mem0 client: ${error instanceof Error ? error.message : String(error)}`,
              { cause: error },
            );
      });
      return created;
    };
  }
}

function platformFactory(apiKey: string, host: string | undefined): () => Promise<Mem0Adapter> {
  if (typeof apiKey !== 'string' || apiKey.trim() === '')
    throw new ConfigurationError('Mem0ContextProvider: apiKey must be a non-empty string (the mem0 platform API key).');
  if (host !== undefined && (typeof host !== 'string' || !/^https?:\/\//.test(host)))
    throw new ConfigurationError(`Mem0ContextProvider: host must be an http(s) URL, got ${quoteId(host)}.`);
  return async () => {
    const { MemoryClient } = await import('mem0ai');
    return createPlatformAdapter(new MemoryClient({ apiKey, ...(host !== undefined ? { host } : {}) }) as unknown as MemoryClientLike);
  };
}

function ossFactory(config: Record<string, unknown>): () => Promise<Mem0Adapter> {
  if (typeof config !== 'object' || config === null || Array.isArray(config))
    throw new ConfigurationError('Mem0ContextProvider: oss must be the config object of `new Memory(config)` from "mem0ai/oss".');
  return async () => {
    const { Memory } = await import('mem0ai/oss');
    return createOssAdapter(new Memory(config) as unknown as OssMemoryLike);
  };
}

/**
 * The turn to hand to mem0, chosen by attribution: the text of the run's `user` input messages
 * (`sourceType: 'input'`) and of the assistant's reply messages (unattributed or `'response'`).
 * Never context injected by any provider or loaded history (`'context'`, `'history'`), never
 * function calls, tool results or the assistant text that goes with a function call, never a
 * memory message passed back as input.
 */
export function turnMessages(context: SessionContext): Mem0AddMessage[] {
  const turn = turnSelection(context);
  return addMessages(turn, turn);
}

/** The messages of the turn (see `turnMessages`), as they are, for `redact`. */
function turnSelection(context: SessionContext): Message[] {
  const out: Message[] = [];
  for (const m of context.inputMessages) {
    if (m.role === 'user' && Message.source(m)?.sourceType === 'input' && !isMemoryMessage(m)) out.push(m);
  }
  for (const m of context.response?.messages ?? []) {
    const type = Message.source(m)?.sourceType;
    if (type !== undefined && type !== 'response') continue;
    if (m.role !== 'assistant' || isMemoryMessage(m) || m.contents.some((c) => c.type === 'function-call')) continue;
    out.push(m);
  }
  return out;
}

/** The text of each message (`redacted`, one per message of `turn`) with the role it had in `turn`; empty ones left out. */
function addMessages(redacted: readonly Message[], turn: readonly Message[]): Mem0AddMessage[] {
  const out: Mem0AddMessage[] = [];
  redacted.forEach((m, i) => {
    const content = Message.text(m).trim();
    if (content) out.push({ role: turn[i]!.role as 'user' | 'assistant', content });
  });
  return out;
}
