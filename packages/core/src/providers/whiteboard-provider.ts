import { checkOptionNames, optionNames } from '../backend/checks.js';
import { ConfigurationError, CtxError, SessionStateError } from '../errors.js';
import { isPlainObject, jsonEqual, parseJsonAnswer, pathJoin } from '../messages/json.js';
import { Message } from '../messages/message.js';
import { type BudgetPolicy, fitPrefix, recordBudget, resolveBudget, type ResolvedBudget } from '../policies/budget.js';
import { checkDecayPolicy, DecayingList, type DecayPolicy } from '../policies/decay.js';
import { type ProviderGate, RunGate } from '../policies/gate.js';
import type { AgentSession } from '../session/agent-session.js';
import type { ChatClient } from '../contracts/chat-client.js';
import type { JsonObject, JsonValue } from '../contracts/json.js';
import type { ContextProvider, MergeStateArgs, ProviderRunArgs, SessionContext } from '../contracts/run-view.js';

/** What a whiteboard entry records. */
export type WhiteboardKind = 'requirement' | 'proposal' | 'decision' | 'action';

/** One entry of the whiteboard, as `entriesOf` returns it. */
export interface WhiteboardEntry {
  /** Short id the update model refers to it by (`r1`, `d4`...). */
  id: string;
  /** `'requirement'`, `'proposal'`, `'decision'` or `'action'`. */
  kind: WhiteboardKind;
  /** The entry, at most `maxEntryLength` characters. */
  text: string;
  /** When it was added or last confirmed, ms since the epoch (its age for decay). */
  addedAt: number;
}

/** The change the update model returns after a turn (`whiteboardUpdateSchema`). */
export interface WhiteboardUpdate {
  /** New entries. One equal to an existing entry of the same kind refreshes it instead. */
  add: Array<{ kind: WhiteboardKind; text: string }>;
  /** New text for existing entries (also refreshes their age). */
  update: Array<{ id: string; text: string }>;
  /** Ids of entries that no longer hold (done, dropped, superseded). */
  remove: string[];
}

/** Options of `WhiteboardProvider`. */
export interface WhiteboardProviderOptions {
  /** The model that updates the board after each run. Default: the agent's client. */
  client?: ChatClient;
  /** Default `whiteboard`. */
  sourceId?: string;
  /**
   * How the board reaches the model: `message` (default), one system context message placed after
   * loaded history, so a changing board does not invalidate a cached prompt prefix; or `instructions`.
   */
  inject?: 'message' | 'instructions';
  /** A token cap on the injected board: proposals go first, then actions, requirements, decisions; oldest first within a kind. */
  budget?: BudgetPolicy;
  /** When entries expire. Default `{ maxEntries: 50 }`. */
  decay?: DecayPolicy;
  /** The clock for entry ages, in ms since the epoch. Default `Date.now`. */
  now?: () => number;
  /** Gating: when it returns false the board is neither injected nor updated in that run. */
  when?: ProviderGate;
  /** Default `'skip'`: a failed or invalid update keeps the old board and emits `provider-skipped`. */
  onError?: 'throw' | 'skip';
  /** Bounds each of its hooks, in milliseconds (see `ContextProvider.timeoutMs`). Default: the agent's `providerTimeoutMs`. */
  timeoutMs?: number;
  /** Instructions for the update model; replaces the built-in prompt. */
  updateInstructions?: string;
  /** Longest entry text kept, in characters (longer text is cut). Default 300. */
  maxEntryLength?: number;
}

const KINDS: readonly WhiteboardKind[] = ['requirement', 'proposal', 'decision', 'action'];
const KIND_TITLES: Record<WhiteboardKind, string> = {
  requirement: 'Requirements',
  proposal: 'Proposals',
  decision: 'Decisions',
  action: 'Actions',
};
/** Budget value of each kind: the lowest goes first. */
const KIND_VALUE: Record<WhiteboardKind, number> = { proposal: 0, action: 1, requirement: 2, decision: 3 };
const ID_PREFIX: Record<WhiteboardKind, string> = { requirement: 'r', proposal: 'p', decision: 'd', action: 'a' };

/** JSON Schema of `WhiteboardUpdate`, sent as `responseFormat` (strict-mode compatible). */
export const whiteboardUpdateSchema: JsonObject = {
  type: 'object',
  additionalProperties: false,
  required: ['add', 'update', 'remove'],
  properties: {
    add: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['kind', 'text'],
        properties: { kind: { type: 'string', enum: [...KINDS] }, text: { type: 'string' } },
      },
    },
    update: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'text'],
        properties: { id: { type: 'string' }, text: { type: 'string' } },
      },
    },
    remove: { type: 'array', items: { type: 'string' } },
  },
};

const DEFAULT_UPDATE_INSTRUCTIONS = `You maintain the whiteboard of a conversation between a user and an assistant: a short list of
its requirements (what the user needs or constraints they set), proposals (options suggested but
not yet agreed), decisions (what was agreed or chosen) and actions (tasks someone committed to).
You receive the current whiteboard and the newest turn only. Return JSON with:
- "add": new entries ({ "kind", "text" }), each one short self-contained sentence;
- "update": entries whose content changed ({ "id", "text" });
- "remove": ids of entries that no longer hold (a proposal that was accepted becomes a decision, an
  action that is done, a requirement the user withdrew).
Keep everything else unchanged by not mentioning it. Record only what the turn establishes; no
small talk. Return empty lists when nothing changed.`;

type StoredEntry = { id: string; kind: WhiteboardKind; text: string };
/** An entry as the state slot holds it. */
type StoredBoardEntry = { value: StoredEntry; addedAt: number };

/** The entries of a board's state slot, or undefined when they are malformed. */
function boardOf(slot: JsonObject): readonly StoredBoardEntry[] | undefined {
  try {
    DecayingList.validate(slot.entries, '$.entries', checkEntry);
  } catch {
    return undefined;
  }
  return (slot.entries ?? []) as unknown as StoredBoardEntry[];
}

const WHITEBOARD_PROVIDER_OPTIONS = optionNames<WhiteboardProviderOptions>()({
  client: true,
  sourceId: true,
  inject: true,
  budget: true,
  decay: true,
  now: true,
  when: true,
  onError: true,
  timeoutMs: true,
  updateInstructions: true,
  maxEntryLength: true,
});

/**
 * Keeps the requirements, proposals, decisions and actions of a conversation in the session state,
 * injects them before each run as one compact capsule, and after each successful run asks a model
 * (with `responseFormat` JSON) how the newest turn changes them. Only the turn (input and response)
 * and the current board are sent to that model, never the whole history.
 *
 * An update that fails or is not valid JSON of `whiteboardUpdateSchema` leaves the board as it was
 * and throws, so with the default `onError: 'skip'` the run goes on and a `provider-skipped` event
 * (phase `afterRun`) says why. State: `{ entries: [{ value: { id, kind, text }, addedAt }], nextId }`.
 * @throws ConfigurationError (constructor) for invalid options.
 */
export class WhiteboardProvider implements ContextProvider {
  /** The state slot and attribution of the board. Default `whiteboard`. */
  readonly sourceId: string;
  /** Default `'skip'`: a failed update keeps the old board and the run goes on. */
  readonly onError: 'throw' | 'skip';
  readonly timeoutMs: number | undefined;
  readonly #client: ChatClient | undefined;
  readonly #inject: 'message' | 'instructions';
  readonly #budget: ResolvedBudget | undefined;
  readonly #decay: DecayPolicy;
  readonly #now: () => number;
  readonly #gate: RunGate;
  readonly #instructions: string;
  readonly #maxLength: number;

  constructor(options: WhiteboardProviderOptions = {}) {
    this.sourceId = options.sourceId ?? 'whiteboard';
    const owner = `WhiteboardProvider("${this.sourceId}")`;
    checkOptionNames(owner, options, WHITEBOARD_PROVIDER_OPTIONS);
    this.#client = options.client;
    this.#inject = options.inject ?? 'message';
    if (this.#inject !== 'message' && this.#inject !== 'instructions')
      throw new ConfigurationError(`${owner}: inject must be "message" or "instructions".`);
    this.#budget = resolveBudget(owner, options.budget);
    this.#decay = options.decay ?? { maxEntries: 50 };
    checkDecayPolicy(owner, this.#decay);
    this.#now = options.now ?? Date.now;
    this.#gate = new RunGate(options.when);
    this.onError = options.onError ?? 'skip';
    this.timeoutMs = options.timeoutMs;
    this.#instructions = options.updateInstructions ?? DEFAULT_UPDATE_INSTRUCTIONS;
    this.#maxLength = options.maxEntryLength ?? 300;
    if (!Number.isInteger(this.#maxLength) || this.#maxLength <= 0)
      throw new ConfigurationError(`${owner}: maxEntryLength must be a positive integer.`);
  }

  /** The live (not expired) entries of a session's board, oldest first. */
  entriesOf(session: AgentSession): WhiteboardEntry[] {
    const state = session.state[this.sourceId];
    if (!state) return [];
    return this.#list(state)
      .entries()
      .map((e) => ({ ...e.value, addedAt: e.addedAt }));
  }

  /** Checks a restored board. @throws SessionStateError naming the offending entry. */
  validateState(state: JsonObject, path: string): void {
    DecayingList.validate(state.entries, pathJoin(path, 'entries'), checkEntry);
    if (state.nextId !== undefined && !(Number.isInteger(state.nextId) && (state.nextId as number) >= 0)) {
      throw new SessionStateError(pathJoin(path, 'nextId'), 'must be a non-negative integer');
    }
  }

  /** Prunes expired entries and injects the board (within the budget), unless gated off or empty. */
  async beforeRun(args: ProviderRunArgs): Promise<void> {
    if (!(await this.#gate.enter(args))) return;
    const { context, state } = args;
    const list = this.#list(state);
    list.prune();
    const entries = list.entries();
    if (!entries.length) return;
    const items = entries.map((e) => ({ ...e.value, addedAt: e.addedAt }));
    let kept = items;
    if (this.#budget) {
      const { maxTokens } = this.#budget;
      // Most valuable first: by kind, then newest.
      const ranked = [...items].sort((a, b) => KIND_VALUE[b.kind] - KIND_VALUE[a.kind] || b.addedAt - a.addedAt);
      kept = ranked.slice(
        0,
        fitPrefix(ranked, maxTokens, (prefix) => this.#tokens(prefix)),
      );
      recordBudget(context.metadata, this.sourceId, {
        maxTokens,
        tokens: kept.length ? this.#tokens(kept) : 0,
        dropped: items.length - kept.length,
      });
      if (!kept.length) return;
    }
    this.#injectCapsule(context, kept);
  }

  /**
   * After a successful run, sends the board and the newest turn to the update model and applies its
   * answer. @throws CtxError for an invalid answer, before changing anything.
   */
  async afterRun(args: ProviderRunArgs): Promise<void> {
    const { agent, context, state, signal } = args;
    if (!this.#gate.isOpen(context) || context.error !== undefined || !context.response) return;
    const turn = turnText(context);
    if (!turn) return;
    const list = this.#list(state);
    const board = list.entries().map((e) => e.value);
    const client = this.#client ?? agent.client;
    const prompt = `Current whiteboard (JSON lines; empty when nothing is recorded yet):\n${board.map((e) => JSON.stringify(e)).join('\n') || '(empty)'}\n\nNewest turn:\n${turn}`;
    const response = await client.getResponse([Message.user(prompt)], {
      instructions: this.#instructions,
      responseFormat: { type: 'json', schema: whiteboardUpdateSchema, name: 'whiteboard_update' },
      store: false,
      signal,
    });
    const text = response.messages.map((m) => Message.text(m)).join('');
    const update = parseUpdate(text, this.sourceId); // throws before anything changed
    this.#apply(state, list, update);
  }

  /**
   * Merges the board of two saves of one session made at once (`agent.saveSession` calls it on a
   * conflict), entry by entry: an entry either side removed is gone; one only we changed takes our
   * version, else theirs; the entries both added are kept, ours renumbered when theirs took the same
   * id, and dropped when theirs added the same text of the same kind. Undefined when a board is
   * malformed (a `ConcurrencyError` then).
   */
  mergeState({ base, ours, theirs }: MergeStateArgs): JsonObject | undefined {
    const [b, o, t] = [boardOf(base), boardOf(ours), boardOf(theirs)];
    if (!b || !o || !t) return undefined;
    const byId = (list: readonly StoredBoardEntry[]) => new Map(list.map((e) => [e.value.id, e]));
    const [baseIds, ourIds, theirIds] = [byId(b), byId(o), byId(t)];
    const entries: StoredBoardEntry[] = [];
    for (const entry of t) {
      const before = baseIds.get(entry.value.id);
      if (!before) {
        entries.push(entry); // theirs, new
        continue;
      }
      const mine = ourIds.get(entry.value.id);
      if (!mine) continue; // we removed it
      entries.push(jsonEqual(mine, before) ? entry : mine);
    }
    const numbers = [b, o, t].flatMap((list) => list.map((e) => Number.parseInt(e.value.id.slice(1), 10) || 0));
    const counters = [base, ours, theirs].map((slot) => (typeof slot.nextId === 'number' ? slot.nextId : 0));
    let nextId = Math.max(0, ...numbers, ...counters);
    const theirsAdded = t.filter((e) => !baseIds.has(e.value.id));
    const same = (x: StoredEntry, y: StoredEntry) => x.kind === y.kind && x.text.toLowerCase() === y.text.toLowerCase();
    for (const entry of o) {
      if (baseIds.has(entry.value.id) || theirsAdded.some((e) => same(e.value, entry.value))) continue;
      const id = theirIds.has(entry.value.id) ? `${ID_PREFIX[entry.value.kind]}${++nextId}` : entry.value.id;
      entries.push({ ...entry, value: { ...entry.value, id } });
    }
    return { ...theirs, entries: entries as unknown as JsonValue[], nextId };
  }

  #apply(state: JsonObject, list: DecayingList<StoredEntry>, update: WhiteboardUpdate): void {
    const clean = (text: string) => text.replace(/\s+/g, ' ').trim().slice(0, this.#maxLength);
    const removed = new Set(update.remove);
    list.remove((e) => removed.has(e.id));
    for (const { id, text } of update.update) {
      const t = clean(text);
      if (!t) continue;
      list.update(
        (e) => e.id === id,
        (e) => ({ ...e, text: t }),
      );
      list.refresh((e) => e.id === id);
    }
    let nextId =
      typeof state.nextId === 'number'
        ? state.nextId
        : Math.max(0, ...list.all().map((e) => Number.parseInt(e.value.id.slice(1), 10) || 0));
    for (const { kind, text } of update.add) {
      const t = clean(text);
      if (!t) continue;
      const same = (e: StoredEntry) => e.kind === kind && e.text.toLowerCase() === t.toLowerCase();
      if (list.refresh(same) === 0) list.add({ id: `${ID_PREFIX[kind]}${++nextId}`, kind, text: t });
    }
    state.nextId = nextId;
    list.prune();
  }

  #list(state: JsonObject): DecayingList<StoredEntry> {
    return new DecayingList<StoredEntry>(state, 'entries', {
      ...this.#decay,
      now: this.#now,
      path: pathJoin(pathJoin('$.state', this.sourceId), 'entries'),
      validateValue: checkEntry,
    });
  }

  #tokens(entries: readonly WhiteboardEntry[]): number {
    const { tokenizer } = this.#budget!;
    const text = capsule(entries);
    return this.#inject === 'message' ? tokenizer.countMessageTokens([Message.system(text)]) : tokenizer.countTokens(text);
  }

  #injectCapsule(context: SessionContext, entries: readonly WhiteboardEntry[]): void {
    const text = capsule(entries);
    if (this.#inject === 'instructions') context.extendInstructions(this.sourceId, text);
    else context.extendMessages(this.sourceId, [Message.system(text)]);
  }
}

/** The board as compact text, grouped by kind, oldest first within a kind. */
function capsule(entries: readonly WhiteboardEntry[]): string {
  const lines = ['Whiteboard of this conversation so far (requirements, proposals, decisions, actions):'];
  for (const kind of KINDS) {
    const ofKind = entries.filter((e) => e.kind === kind).sort((a, b) => a.addedAt - b.addedAt);
    if (!ofKind.length) continue;
    lines.push(`${KIND_TITLES[kind]}:`);
    for (const e of ofKind) lines.push(`- ${e.text}`);
  }
  return lines.join('\n');
}

const MAX_RESULT_CHARS = 500;

/** The newest turn as text: the input, then what the model said and did. */
export function turnText(context: SessionContext): string {
  const lines: string[] = [];
  for (const m of [...context.inputMessages, ...(context.response?.messages ?? [])]) {
    const who = m.role === 'user' ? 'User' : m.role === 'assistant' ? 'Assistant' : m.role === 'tool' ? 'Tool' : 'System';
    for (const c of m.contents) {
      if (c.type === 'text' && c.text.trim()) lines.push(`${who}: ${c.text.trim()}`);
      else if (c.type === 'function-call') lines.push(`${who} called ${c.name}(${c.arguments})`);
      else if (c.type === 'function-result') {
        const result = typeof c.result === 'string' ? c.result : JSON.stringify(c.result);
        lines.push(
          `${c.name ?? 'Tool'} returned${c.isError ? ' an error' : ''}: ${result.length > MAX_RESULT_CHARS ? `${result.slice(0, MAX_RESULT_CHARS)}…` : result}`,
        );
      }
    }
  }
  return lines.join('\n');
}

/**
 * Parses and checks the update model's answer (a JSON object, optionally in a ``` fence).
 * @throws CtxError naming what is wrong, before anything is changed.
 */
function parseUpdate(text: string, sourceId: string): WhiteboardUpdate {
  const fail = (problem: string): never => {
    throw new CtxError(`The whiteboard "${sourceId}" was not updated: the model's answer ${problem}. The board was left as it was.`);
  };
  const value = parseJsonAnswer(text, fail);
  const list = (key: string): unknown[] => {
    const v = value[key];
    if (v === undefined) return [];
    return Array.isArray(v) ? v : fail(`has "${key}" that is not an array`);
  };
  const add = list('add').map((a, i) => {
    if (!isPlainObject(a) || !KINDS.includes(a.kind as WhiteboardKind) || typeof a.text !== 'string')
      return fail(`has an invalid "add[${i}]" (needs a kind of ${KINDS.join(', ')} and a text)`);
    return { kind: a.kind as WhiteboardKind, text: a.text };
  });
  const update = list('update').map((u, i) => {
    if (!isPlainObject(u) || typeof u.id !== 'string' || typeof u.text !== 'string')
      return fail(`has an invalid "update[${i}]" (needs an id and a text)`);
    return { id: u.id, text: u.text };
  });
  const remove = list('remove').map((id, i) => (typeof id === 'string' ? id : fail(`has a "remove[${i}]" that is not a string id`)));
  return { add, update, remove };
}

function checkEntry(value: JsonValue, path: string): void {
  if (!isPlainObject(value)) throw new SessionStateError(path, 'must be an object { id, kind, text }');
  if (typeof value.id !== 'string') throw new SessionStateError(pathJoin(path, 'id'), 'must be a string');
  if (!KINDS.includes(value.kind as WhiteboardKind))
    throw new SessionStateError(pathJoin(path, 'kind'), `must be one of ${KINDS.join(', ')}`);
  if (typeof value.text !== 'string') throw new SessionStateError(pathJoin(path, 'text'), 'must be a string');
}
