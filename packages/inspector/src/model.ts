import type { AgentEvent, Contribution, JsonValue, Message, Tokenizer, ToolDefinition, Usage } from '@ctx/core';
import { createCharacterTokenizer, ProviderError } from '@ctx/core';
import { explainFirstChange, type RemovalContext } from './cache-advice.js';
import type { CacheView, CallItem, RemovedView, SentCall, SourceTokens } from './call-views.js';
import { removalsSince, removedSince } from './removals.js';

/** One model call of a run. */
export interface CallView {
  /** 1 for the run's first call. */
  index: number;
  /** Everything sent, in order. */
  items: CallItem[];
  /** Tokens per source, in the order the sources first appear. */
  sources: SourceTokens[];
  /** The sum of every item's tokens. */
  totalTokens: number;
  /** The prompt-cache prefix against the session's previous call. */
  cache: CacheView;
  /** Messages the previous call sent that this one does not (compaction, budgets). */
  removed: RemovedView[];
  /** Against the session's previous call: items added and removed, by kind and source. */
  diff: {
    /** Items this call sent that the previous one did not. */
    added: DiffEntry[];
    /** Items the previous call sent that this one does not. */
    removed: DiffEntry[];
  };
  /** How long the call took, once it answered. */
  durationMs?: number;
  /** The service's token counts. */
  usage?: Usage;
  /** Why the model stopped. */
  finishReason?: string;
  /** What came back. */
  response?: CallItem[];
  /** Tool calls the model asked for. */
  functionCalls?: number;
}

/** One line of a call's diff. */
export interface DiffEntry {
  /** `tool`, `instructions` or `message`. */
  kind: CallItem['kind'];
  /** Its source. */
  sourceId: string;
  /** Its label. */
  label: string;
  /** Its tokens. */
  tokens: number;
}

/** One tool call of a run. */
export interface ToolCallView {
  /** The model's call id. */
  callId: string;
  /** The tool. */
  toolName: string;
  /** The model call (index) that asked for it. */
  call: number;
  /** `running`, `done`, `failed`, or `awaiting approval` (asked for, not run, when the run ended). */
  status: 'running' | 'done' | 'failed' | 'awaiting approval';
  /** How long it took. */
  durationMs?: number;
  /** The arguments (JSON text), only with `showText`. */
  arguments?: string;
  /** The result, only with `showText`. */
  result?: JsonValue;
  /** Why it failed. */
  error?: string;
}

/** A diagnostic of the run: a warning, a provider's report, a skipped or failed provider, a budget. */
export interface DiagnosticView {
  /**
   * `warning`, `diagnostic`, `skipped` (a provider with `onError: 'skip'` that failed and was left
   * out), `failed` (the provider whose failure failed the run) or `budget`.
   */
  level: 'warning' | 'diagnostic' | 'skipped' | 'failed' | 'budget';
  /** The source concerned. */
  sourceId?: string;
  /** A code: a `WarningCode`, a provider's own code, or the hook that failed for a skip or a failure. */
  code: string;
  /** For people. */
  message: string;
}

/** One run, as the page shows it. */
export interface RunView {
  /** The run. */
  runId: string;
  /** Its session. */
  sessionId: string;
  /** The agent's name. */
  agentName: string;
  /** The chat client's provider name. */
  provider: string;
  /** The chat client's model. */
  modelId: string;
  /** The run's providers, in order. */
  providers: string[];
  /** When it started (ms since the epoch). */
  startedAt: number;
  /** `running`, `done` or `failed`. */
  status: 'running' | 'done' | 'failed';
  /** How long it took. */
  durationMs?: number;
  /** Why it failed. */
  error?: string;
  /** Tokens of all its model calls. */
  usage?: Usage;
  /** What each provider added (its hooks' contributions summed). */
  contributions: Record<string, Contribution>;
  /** Providers of the run that added nothing (gated off, or nothing to add); never one that failed or was skipped (see `diagnostics`). */
  idle: string[];
  /** Time spent per provider (its hooks, summed), and the model's calls under `model`, in ms. */
  latency: Record<string, number>;
  /** Its model calls. */
  calls: CallView[];
  /** Its tool calls. */
  tools: ToolCallView[];
  /** Warnings, reports, skips and budgets. */
  diagnostics: DiagnosticView[];
  /** What the run is doing now, for a long tool loop: `call 3 · 2 tools running`. */
  progress: string;
}

/** A session and its runs (ids only; the runs are in `InspectorSnapshot.runs`). */
export interface SessionView {
  /** The session. */
  sessionId: string;
  /** Its owner, when the store says. */
  userId?: string;
  /** Its title, when the store says. */
  title?: string;
  /** Its runs the inspector still holds, oldest first. */
  runIds: string[];
  /** Runs it had that were dropped (the `maxRuns` limit). */
  droppedRuns: number;
}

/** Everything the page needs. */
export interface InspectorSnapshot {
  /** Sessions, most recently active first. */
  sessions: SessionView[];
  /** Runs by id. */
  runs: Record<string, RunView>;
  /** Whether message text is shown. */
  showText: boolean;
  /** The most runs kept. */
  maxRuns: number;
}

/** Options of `createInspectorModel`. */
export interface InspectorModelOptions {
  /** Keep message text, tool arguments and results. Default false: only ids, roles, sources and tokens. */
  showText?: boolean;
  /** The most runs kept; the oldest are dropped past it. Default 200. */
  maxRuns?: number;
  /** Counts tokens. Default `createCharacterTokenizer()`, as `createAuditProvider` does. */
  tokenizer?: Tokenizer;
  /** The clock (ms since the epoch). Default `Date.now`. */
  now?: () => number;
}

/** The event-to-view layer the inspector's page reads: feed it a run's events in order. */
export interface InspectorModel {
  /** Takes one event; returns the id of the run it changed, if any. */
  apply(event: AgentEvent): string | undefined;
  /** One run, or undefined when unknown or dropped. */
  run(runId: string): RunView | undefined;
  /** Everything, for the page (a deep copy). */
  snapshot(): InspectorSnapshot;
  /** Names a session's owner and title (from a `SessionStore`). */
  describeSession(sessionId: string, info: { userId?: string; title?: string }): void;
}

/** `DEFAULT_MAX_RUNS`: runs kept by default. */
export const DEFAULT_MAX_RUNS = 200;

/**
 * Builds the inspector's view of runs from agent events (`model-call` content is needed for the
 * per-item view: an `EventHandler` with `includeContent: true`). Pure and synchronous: no I/O, no
 * timers; memory is bounded by `maxRuns` (the oldest runs dropped first).
 *
 * @throws RangeError for a `maxRuns` that is not a positive integer (the inspector checks it first).
 */
export function createInspectorModel(options: InspectorModelOptions = {}): InspectorModel {
  const showText = options.showText === true;
  const maxRuns = options.maxRuns ?? DEFAULT_MAX_RUNS;
  if (!Number.isInteger(maxRuns) || maxRuns < 1) throw new RangeError(`maxRuns must be a positive integer, got ${String(maxRuns)}.`);
  const tokenizer = options.tokenizer ?? createCharacterTokenizer();
  const now = options.now ?? Date.now;
  const runs = new Map<string, RunView>();
  const sessions = new Map<string, SessionView>();
  /** The last call sent per session, to compare the next one with. */
  const lastSent = new Map<string, SentCall>();
  /** Per session: the instruction text each source sent last time, and how many runs in a row it changed. */
  const instructionHistory = new Map<string, Map<string, { text: string; changes: number }>>();
  /** Per session and source: in how many runs in a row the first call found the history cut from the front. */
  const frontCuts = new Map<string, Map<string, number>>();

  const touch = (sessionId: string): SessionView => {
    let s = sessions.get(sessionId);
    if (!s) s = { sessionId, runIds: [], droppedRuns: 0 };
    sessions.delete(sessionId);
    sessions.set(sessionId, s); // most recent last in the map
    return s;
  };

  const dropOldest = () => {
    while (runs.size > maxRuns) {
      const oldest = runs.keys().next().value as string;
      const run = runs.get(oldest)!;
      runs.delete(oldest);
      const s = sessions.get(run.sessionId);
      if (s) {
        s.runIds = s.runIds.filter((id) => id !== oldest);
        s.droppedRuns++;
        if (s.runIds.length === 0 && !runsOf(run.sessionId)) {
          sessions.delete(run.sessionId);
          lastSent.delete(run.sessionId);
          instructionHistory.delete(run.sessionId);
          frontCuts.delete(run.sessionId);
        }
      }
    }
  };
  const runsOf = (sessionId: string) => [...runs.values()].some((r) => r.sessionId === sessionId);

  const itemsOf = (event: Extract<AgentEvent, { type: 'model-call' }>): { items: CallItem[]; sent: SentCall } => {
    const content = event.content;
    const items: CallItem[] = [];
    const sent: SentCall = {
      items,
      hashes: [],
      tokens: [],
      kinds: [],
      owners: [],
      instructionParts: [],
      messageIds: new Map(),
    };
    let chain = FNV_SEED;
    const add = (kind: SentCall['kinds'][number], text: string, tokens: number, owner: string) => {
      chain = fnv(text, fnv(kind, chain));
      sent.hashes.push(chain.toString(36));
      sent.tokens.push(tokens);
      sent.kinds.push(kind);
      sent.owners.push(owner);
    };
    for (const tool of content?.tools ?? []) {
      const tokens = toolTokens(tool, tokenizer);
      const sourceId = sourceOf(tool.metadata) ?? 'agent';
      const seen = JSON.stringify([tool.name, tool.description ?? '', tool.parameters]);
      items.push({ kind: 'tool', sourceId, label: tool.name, tokens, hash: fnv(seen).toString(36) });
      add('tools', seen, tokens, sourceId);
    }
    const parts =
      content?.instructionSources ?? (content?.instructions !== undefined ? [{ sourceId: 'agent', text: content.instructions }] : []);
    for (const part of parts) {
      const item: CallItem = {
        kind: 'instructions',
        sourceId: part.sourceId,
        label: 'instructions',
        tokens: tokenizer.countTokens(part.text),
        hash: fnv(part.text).toString(36),
      };
      if (showText) item.text = part.text;
      items.push(item);
      sent.instructionParts.push({ sourceId: part.sourceId, text: part.text });
    }
    if (content?.instructions !== undefined) {
      add('instructions', content.instructions, tokenizer.countTokens(content.instructions), parts.map((p) => p.sourceId).join(','));
    }
    for (const m of content?.messages ?? []) {
      const item = messageItem(m, tokenizer, showText);
      items.push(item);
      const replaces = summaryReplaces(m.metadata);
      sent.messageIds.set(m.id, { sourceId: item.sourceId, tokens: item.tokens, ...(replaces ? { summary: replaces } : {}) });
      add('messages', JSON.stringify([m.role, m.contents]), item.tokens, item.sourceId);
    }
    return { items, sent };
  };

  const apply = (event: AgentEvent): string | undefined => {
    if (event.type === 'run-start') {
      const session = touch(event.sessionId);
      session.runIds.push(event.runId);
      runs.set(event.runId, {
        runId: event.runId,
        sessionId: event.sessionId,
        agentName: event.agentName,
        provider: event.provider,
        modelId: event.modelId,
        providers: [...event.providers],
        startedAt: now(),
        status: 'running',
        contributions: {},
        idle: [],
        latency: {},
        calls: [],
        tools: [],
        diagnostics: [],
        progress: 'providers running',
      });
      dropOldest();
      return event.runId;
    }
    if (event.type === 'warning' && event.runId === undefined) return undefined;
    const run = runs.get(event.runId!);
    if (!run) return undefined;
    switch (event.type) {
      case 'provider-end': {
        const sum = (run.contributions[event.sourceId] ??= { messages: 0, instructions: 0, tools: 0 });
        sum.messages += event.added.messages;
        sum.instructions += event.added.instructions;
        sum.tools += event.added.tools;
        run.latency[event.sourceId] = (run.latency[event.sourceId] ?? 0) + event.durationMs;
        break;
      }
      case 'provider-skipped':
        run.diagnostics.push({
          level: 'skipped',
          sourceId: event.sourceId,
          code: event.phase,
          message: `left out of the run: ${describe(event.error)}`,
        });
        run.idle = run.idle.filter((p) => p !== event.sourceId);
        break;
      case 'warning':
        run.diagnostics.push({
          level: 'warning',
          ...(event.sourceId ? { sourceId: event.sourceId } : {}),
          code: event.code,
          message: event.message,
        });
        break;
      case 'provider-diagnostic':
        run.diagnostics.push({ level: 'diagnostic', sourceId: event.sourceId, code: event.code, message: event.message });
        if (event.code === 'context-audit') addBudgets(run, event.data);
        break;
      case 'model-call': {
        const { items, sent } = itemsOf(event);
        const previous = lastSent.get(run.sessionId);
        const firstOfRun = run.calls.length === 0;
        const history = (() => {
          let h = instructionHistory.get(run.sessionId);
          if (!h) instructionHistory.set(run.sessionId, (h = new Map()));
          return h;
        })();
        if (firstOfRun) {
          for (const part of sent.instructionParts) {
            const before = history.get(part.sourceId);
            history.set(part.sourceId, { text: part.text, changes: before && before.text !== part.text ? before.changes + 1 : 0 });
          }
        }
        const removals = previous ? removalsSince(previous, sent) : [];
        let cuts = frontCuts.get(run.sessionId);
        if (!cuts) frontCuts.set(run.sessionId, (cuts = new Map()));
        if (firstOfRun) {
          const cut = new Set(removals.filter((r) => r.kind === 'front').map((r) => r.sourceId));
          for (const sourceId of cuts.keys()) if (!cut.has(sourceId)) cuts.delete(sourceId);
          for (const sourceId of cut) cuts.set(sourceId, (cuts.get(sourceId) ?? 0) + 1);
        }
        const call: CallView = {
          index: run.calls.length + 1,
          items,
          sources: bySource(items),
          totalTokens: items.reduce((a, i) => a + i.tokens, 0),
          cache: comparePrefix(sent, previous, history, { removals, frontCuts: cuts }),
          removed: previous ? removedSince(previous, sent) : [],
          diff: diffOf(previous?.items ?? [], items),
        };
        run.calls.push(call);
        lastSent.set(run.sessionId, sent);
        if (firstOfRun) {
          const failed = new Set(run.diagnostics.filter((d) => d.level === 'skipped' || d.level === 'failed').map((d) => d.sourceId));
          run.idle = run.providers.filter((p) => !failed.has(p) && !hasAdded(run.contributions[p]) && !items.some((i) => i.sourceId === p));
        }
        run.progress = `call ${call.index} · waiting for the model`;
        break;
      }
      case 'model-response': {
        const call = run.calls[event.roundtrip];
        if (!call) break;
        call.durationMs = event.durationMs;
        run.latency.model = (run.latency.model ?? 0) + event.durationMs;
        if (event.usage) {
          call.usage = { ...event.usage };
          if (event.usage.cachedInputTokens !== undefined) call.cache.cachedInputTokens = event.usage.cachedInputTokens;
        }
        if (event.finishReason) call.finishReason = event.finishReason;
        call.functionCalls = event.functionCalls;
        if (event.content) {
          call.response = event.content.messages.map((m) => messageItem(m, tokenizer, showText, 'response'));
          for (const m of event.content.messages)
            for (const c of m.contents)
              if (c.type === 'function-call')
                run.tools.push({
                  callId: c.callId,
                  toolName: c.name,
                  call: call.index,
                  status: 'awaiting approval',
                  ...(showText ? { arguments: c.arguments } : {}),
                });
        }
        run.progress = event.functionCalls
          ? `call ${call.index} · ${plural(event.functionCalls, 'tool call')} asked`
          : `call ${call.index} · answered`;
        break;
      }
      case 'tool-start': {
        let tool = run.tools.find((t) => t.callId === event.callId);
        if (!tool) run.tools.push((tool = { callId: event.callId, toolName: event.toolName, call: run.calls.length, status: 'running' }));
        tool.status = 'running';
        if (showText && event.content) tool.arguments = event.content.arguments;
        run.progress = progressOf(run);
        break;
      }
      case 'tool-end': {
        let tool = run.tools.find((t) => t.callId === event.callId);
        if (!tool) run.tools.push((tool = { callId: event.callId, toolName: event.toolName, call: run.calls.length, status: 'done' }));
        tool.durationMs = event.durationMs;
        if (event.error !== undefined) {
          tool.status = 'failed';
          tool.error = describe(event.error);
        } else tool.status = 'done';
        if (showText && event.content) tool.result = event.content.result;
        run.progress = progressOf(run);
        break;
      }
      case 'run-end': {
        run.durationMs = event.durationMs;
        if (event.usage) run.usage = { ...event.usage };
        run.status = event.error === undefined ? 'done' : 'failed';
        if (event.error !== undefined) run.error = describe(event.error);
        if (ProviderError.isInstance(event.error)) {
          const { sourceId, phase } = event.error;
          run.diagnostics.push({
            level: 'failed',
            sourceId,
            code: phase,
            message: `failed, so the run failed: ${describe(event.error.cause)}`,
          });
          run.idle = run.idle.filter((p) => p !== sourceId);
        }
        const waiting = run.tools.filter((t) => t.status === 'awaiting approval').length;
        run.progress =
          run.status === 'failed'
            ? 'failed'
            : `done · ${plural(run.calls.length, 'model call')} · ${plural(run.tools.length - waiting, 'tool call')}${waiting ? ` · ${waiting} awaiting approval` : ''}`;
        break;
      }
    }
    return run.runId;
  };

  return {
    apply,
    run: (runId) => {
      const run = runs.get(runId);
      return run && structuredClone(run);
    },
    snapshot: () => ({
      sessions: structuredClone([...sessions.values()].reverse()),
      runs: structuredClone(Object.fromEntries(runs)),
      showText,
      maxRuns,
    }),
    describeSession(sessionId, info) {
      let s = sessions.get(sessionId);
      if (!s) {
        // Sessions known only from a store are bounded too.
        if (sessions.size >= maxRuns * 2) return;
        sessions.set(sessionId, (s = { sessionId, runIds: [], droppedRuns: 0 }));
      }
      if (info.userId !== undefined) s.userId = info.userId;
      if (info.title !== undefined) s.title = info.title;
    },
  };
}

const FNV_SEED = 0x811c9dc5;

/** FNV-1a, 32 bits: the hash `createAuditProvider` chains, so both measure the same prefix. */
function fnv(text: string, seed = FNV_SEED): number {
  let h = seed;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

function toolTokens(tool: ToolDefinition, tokenizer: Tokenizer): number {
  return tokenizer.countTokens(JSON.stringify({ name: tool.name, description: tool.description ?? '', parameters: tool.parameters }));
}

function sourceOf(metadata: unknown): string | undefined {
  const ctx = (metadata as { ctx?: { sourceId?: unknown } } | undefined)?.ctx;
  return typeof ctx?.sourceId === 'string' ? ctx.sourceId : undefined;
}

/** The ids a compaction summary stands for (`metadata.ctx.summary.replaces`), when the message is one. */
function summaryReplaces(metadata: unknown): string[] | undefined {
  const summary = (metadata as { ctx?: { summary?: { replaces?: unknown } } } | undefined)?.ctx?.summary;
  return Array.isArray(summary?.replaces) ? summary.replaces.filter((id): id is string => typeof id === 'string') : undefined;
}

function messageItem(m: Message, tokenizer: Tokenizer, showText: boolean, fallbackSource = 'response'): CallItem {
  const item: CallItem = {
    kind: 'message',
    sourceId: sourceOf(m.metadata) ?? fallbackSource,
    label: m.role,
    tokens: tokenizer.countMessageTokens([m]),
    id: m.id,
    hash: fnv(JSON.stringify([m.role, m.contents])).toString(36),
  };
  const parts: string[] = [];
  for (const c of m.contents) {
    if (c.type === 'function-call') parts.push(`call ${c.name}`);
    else if (c.type === 'function-result') parts.push(`result ${c.name ?? c.callId}`);
    else if (c.type !== 'text') parts.push(c.type);
  }
  if (parts.length) item.parts = parts;
  const summaryOf = summaryReplaces(m.metadata)?.length;
  if (summaryOf !== undefined) item.summaryOf = summaryOf;
  if (showText) {
    const text = m.contents.map((c) => (c.type === 'text' ? c.text : '')).join('');
    if (text) item.text = text;
  }
  return item;
}

function bySource(items: readonly CallItem[]): SourceTokens[] {
  const out = new Map<string, SourceTokens>();
  for (const i of items) {
    let s = out.get(i.sourceId);
    if (!s) out.set(i.sourceId, (s = { sourceId: i.sourceId, messageTokens: 0, instructionTokens: 0, toolTokens: 0, tokens: 0, items: 0 }));
    if (i.kind === 'message') s.messageTokens += i.tokens;
    else if (i.kind === 'instructions') s.instructionTokens += i.tokens;
    else s.toolTokens += i.tokens;
    s.tokens += i.tokens;
    s.items++;
  }
  return [...out.values()];
}

function comparePrefix(
  current: SentCall,
  previous: SentCall | undefined,
  history: ReadonlyMap<string, { text: string; changes: number }>,
  removals: RemovalContext,
): CacheView {
  const totalTokens = current.tokens.reduce((a, b) => a + b, 0);
  if (!previous) return { repeatedTokens: 0, totalTokens, compared: false };
  let repeatedTokens = 0;
  let i = 0;
  for (; i < current.hashes.length && i < previous.hashes.length && current.hashes[i] === previous.hashes[i]; i++)
    repeatedTokens += current.tokens[i]!;
  if (i >= previous.hashes.length) return { repeatedTokens, totalTokens, compared: true };
  const firstChange = explainFirstChange(current, previous, i, history, removals);
  return { repeatedTokens, totalTokens, compared: true, firstChange };
}

function diffOf(before: readonly CallItem[], after: readonly CallItem[]): CallView['diff'] {
  // What the model sees: the same message from another source (the input, stored as history) is no change.
  const key = (i: CallItem) => `${i.kind}|${i.hash}`;
  const had = new Map<string, number>();
  for (const i of before) had.set(key(i), (had.get(key(i)) ?? 0) + 1);
  const added: DiffEntry[] = [];
  for (const i of after) {
    const n = had.get(key(i)) ?? 0;
    if (n > 0) had.set(key(i), n - 1);
    else added.push(entry(i));
  }
  const has = new Map<string, number>();
  for (const i of after) has.set(key(i), (has.get(key(i)) ?? 0) + 1);
  const removed: DiffEntry[] = [];
  for (const i of before) {
    const n = has.get(key(i)) ?? 0;
    if (n > 0) has.set(key(i), n - 1);
    else removed.push(entry(i));
  }
  return { added, removed };
}

function entry(i: CallItem): DiffEntry {
  return { kind: i.kind, sourceId: i.sourceId, label: i.label, tokens: i.tokens };
}

function addBudgets(run: RunView, data: unknown): void {
  const sources = (data as { sources?: unknown } | undefined)?.sources;
  if (!Array.isArray(sources)) return;
  for (const s of sources as Array<{ sourceId?: unknown; budget?: { maxTokens?: unknown; tokens?: unknown; dropped?: unknown } }>) {
    const b = s.budget;
    if (typeof s.sourceId !== 'string' || !b || typeof b.maxTokens !== 'number') continue;
    const dropped = typeof b.dropped === 'number' ? b.dropped : 0;
    run.diagnostics.push({
      level: 'budget',
      sourceId: s.sourceId,
      code: 'budget',
      message: `cap ${b.maxTokens} tokens: kept ${String(b.tokens)}, dropped ${plural(dropped, 'item')}${dropped ? ' (lowest value first)' : ''}`,
    });
  }
}

function hasAdded(c: Contribution | undefined): boolean {
  return !!c && c.messages + c.instructions + c.tools > 0;
}

function progressOf(run: RunView): string {
  const running = run.tools.filter((t) => t.status === 'running').length;
  const done = run.tools.filter((t) => t.status === 'done' || t.status === 'failed').length;
  return `call ${run.calls.length} · ${plural(done, 'tool call')} done${running ? ` · ${running} running` : ''}`;
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function describe(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

export type { CacheView, CallItem, RemovedView, SourceTokens } from './call-views.js';
