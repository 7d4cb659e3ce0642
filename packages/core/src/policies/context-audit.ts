import type { Message } from '../messages/message.js';
import type { JsonObject } from '../contracts/json.js';
import type { ContextProvider, ProviderRunArgs, SessionContext } from '../contracts/run-view.js';
import type { Tokenizer } from '../contracts/tokenizer.js';
import { createCharacterTokenizer } from '../tokens/character-tokenizer.js';
import { type BudgetReport, budgetReportOf, countToolTokens } from './budget.js';

/** What one source put into a run's prompt. Ids, names, counts and tokens only, never message text. */
export interface SourceAudit {
  /** The provider's `sourceId`; `agent` for the agent's own instructions and tools, `input` for the run's input. */
  sourceId: string;
  /** How many messages it added. */
  messages: number;
  /** Ids of its messages, in order. */
  messageIds: string[];
  /** Tokens of those messages. */
  messageTokens: number;
  /** How many instruction texts it added. */
  instructions: number;
  /** Tokens of those instructions. */
  instructionTokens: number;
  /** How many tools it added. */
  tools: number;
  /** Names of its tools, in order. */
  toolNames: string[];
  /** Tokens of those tools (name, description, parameters). */
  toolTokens: number;
  /** `messageTokens + instructionTokens + toolTokens`. */
  tokens: number;
  /** How its budget was applied this run, when it has one. */
  budget?: BudgetReport;
}

/** The audit trail of one run's prompt: every source that added something, in order, with tokens. */
export interface ContextAudit {
  /** The run's session. */
  sessionId: string;
  /** `agent` first (when it has instructions or tools), then providers in the order they first added something, then `input`. */
  sources: SourceAudit[];
  /** The sum of every source's tokens. */
  totalTokens: number;
  /** How much of the request repeats the previous run's last request from the start (set by `createAuditProvider`). */
  prefix?: PrefixAudit;
}

/**
 * How much of a run's first model call repeats, from its very first token, the last call of the
 * session's previous run: what a provider's prompt cache can bill at its cached price (OpenAI,
 * for one, caches prefixes of at least 1,024 tokens, in 128-token steps). The request is read as
 * the model sees it: tools, then instructions, then messages.
 */
export interface PrefixAudit {
  /** Tokens at the start of this request that the previous request began with too. */
  repeatedTokens: number;
  /** The tokens of this request, counted the same way. */
  totalTokens: number;
  /** What differs first: `tools`, `instructions` or `messages`; absent when everything the previous request sent is repeated. */
  firstChange?: 'tools' | 'instructions' | 'messages';
}

function emptyAudit(sourceId: string): SourceAudit {
  return {
    sourceId,
    messages: 0,
    messageIds: [],
    messageTokens: 0,
    instructions: 0,
    instructionTokens: 0,
    tools: 0,
    toolNames: [],
    toolTokens: 0,
    tokens: 0,
  };
}

/**
 * Computes, per source, what `context` holds now: messages (ids), instructions, tools (names) and
 * their tokens by `tokenizer`. Call it after every provider's `beforeRun` (e.g. with
 * `createAuditProvider` last in the pipeline) to see exactly what enters the model call.
 */
export function auditContext(context: SessionContext, tokenizer: Tokenizer): ContextAudit {
  const bySource = new Map<string, SourceAudit>();
  const of = (sourceId: string) => {
    let audit = bySource.get(sourceId);
    if (!audit) bySource.set(sourceId, (audit = emptyAudit(sourceId)));
    return audit;
  };
  const agentInstructions = context.instructions.filter((i) => i.sourceId === 'agent');
  const agentTools = context.tools.filter((t) => sourceOf(t.metadata) === undefined);
  if (agentInstructions.length || agentTools.length) of('agent');
  for (const [sourceId, list] of context.contextMessages) {
    const audit = of(sourceId);
    for (const m of list) {
      audit.messages++;
      audit.messageIds.push(m.id);
      audit.messageTokens += tokenizer.countMessageTokens([m]);
    }
  }
  for (const i of context.instructions) {
    const audit = of(i.sourceId);
    audit.instructions++;
    audit.instructionTokens += tokenizer.countTokens(i.text);
  }
  for (const tool of context.tools) {
    const audit = of(sourceOf(tool.metadata) ?? 'agent');
    audit.tools++;
    audit.toolNames.push(tool.name);
    audit.toolTokens += countToolTokens(tool, tokenizer);
  }
  const input = of('input');
  bySource.delete('input');
  bySource.set('input', input); // last, as sent
  for (const m of context.inputMessages) {
    input.messages++;
    input.messageIds.push(m.id);
    input.messageTokens += tokenizer.countMessageTokens([m]);
  }
  let totalTokens = 0;
  for (const audit of bySource.values()) {
    audit.tokens = audit.messageTokens + audit.instructionTokens + audit.toolTokens;
    totalTokens += audit.tokens;
    const budget = budgetReportOf(context.metadata, audit.sourceId);
    if (budget) audit.budget = { ...budget };
  }
  return { sessionId: context.sessionId, sources: [...bySource.values()], totalTokens };
}

function sourceOf(metadata: unknown): string | undefined {
  const ctx = (metadata as { ctx?: { sourceId?: unknown } } | undefined)?.ctx;
  return typeof ctx?.sourceId === 'string' ? ctx.sourceId : undefined;
}

/** A request as a chain of hashes, one per item (each covers every item before it), with each item's tokens. */
interface Fingerprint {
  hashes: string[];
  tokens: number[];
  kinds: Array<'tools' | 'instructions' | 'messages'>;
}

/** FNV-1a, 32 bits, as base-36 text: enough to tell items apart within one session. */
function fnv(text: string, seed = 0x811c9dc5): number {
  let h = seed;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** The request as the model reads it: tools, instructions, then `messages` (what the model sees of each: role and contents). */
function fingerprint(context: SessionContext, messages: readonly Message[], tokenizer: Tokenizer): Fingerprint {
  const out: Fingerprint = { hashes: [], tokens: [], kinds: [] };
  let chain = 0x811c9dc5;
  const add = (kind: Fingerprint['kinds'][number], text: string, tokens: number) => {
    chain = fnv(text, fnv(kind, chain));
    out.hashes.push(chain.toString(36));
    out.tokens.push(tokens);
    out.kinds.push(kind);
  };
  for (const tool of context.tools) {
    add('tools', JSON.stringify([tool.name, tool.description ?? '', tool.parameters]), countToolTokens(tool, tokenizer));
  }
  const instructions = context.getInstructions();
  if (instructions !== undefined) add('instructions', instructions, tokenizer.countTokens(instructions));
  for (const m of messages) add('messages', JSON.stringify([m.role, m.contents]), tokenizer.countMessageTokens([m]));
  return out;
}

function comparePrefix(current: Fingerprint, previous: readonly string[]): PrefixAudit {
  let repeatedTokens = 0;
  let i = 0;
  for (; i < current.hashes.length && i < previous.length && current.hashes[i] === previous[i]; i++) repeatedTokens += current.tokens[i]!;
  const totalTokens = current.tokens.reduce((a, b) => a + b, 0);
  const firstChange = i < previous.length ? (current.kinds[i] ?? 'messages') : undefined;
  return { repeatedTokens, totalTokens, ...(firstChange ? { firstChange } : {}) };
}

/** What the run's last model call sent: everything but the messages its final answer produced. */
function lastRequest(context: SessionContext): Message[] {
  const all = context.getMessages({ includeInput: true, includeResponse: true });
  const produced = context.response?.messages ?? [];
  let finalAnswer = 0;
  while (finalAnswer < produced.length && produced[produced.length - 1 - finalAnswer]!.role !== 'tool') finalAnswer++;
  return all.slice(0, all.length - finalAnswer);
}

/** Options of `createAuditProvider`. */
export interface AuditProviderOptions {
  /**
   * Receives each run's audit, before the model call, besides the `provider-diagnostic` event
   * (code `context-audit`) every audit is reported as. Should not throw (a throw fails the run
   * unless `onError: 'skip'`).
   */
  onAudit?: (audit: ContextAudit, args: ProviderRunArgs) => void | Promise<void>;
  /** Counts tokens. Default `createCharacterTokenizer()`. */
  tokenizer?: Tokenizer;
  /** Default `audit`. */
  sourceId?: string;
  /** Default `'skip'`: a failing `onAudit` never fails the run. */
  onError?: 'throw' | 'skip';
}

/**
 * A provider that adds nothing and reports `auditContext` of each run to the agent's `onEvent` (a
 * `provider-diagnostic` event with code `context-audit`) and to `onAudit`, with `prefix`: how many
 * tokens of the request repeat the previous run's last request from the start (what the provider's
 * prompt cache can reuse). For that it keeps one short hash per item of the last request in its
 * state slot (`state.audit.prefix`). Put it **last** in `contextProviders`: its `beforeRun` then runs
 * after every other provider's, right before the model call, so the audit is what the model
 * receives (before in-run compaction).
 */
export function createAuditProvider(options: AuditProviderOptions = {}): ContextProvider<{
  /** One short hash per item of the last request, to measure the next run's repeated prefix. */
  prefix?: string[];
}> {
  const tokenizer = options.tokenizer ?? createCharacterTokenizer();
  return {
    sourceId: options.sourceId ?? 'audit',
    onError: options.onError ?? 'skip',
    async beforeRun(args) {
      const audit = auditContext(args.context, tokenizer);
      const previous = Array.isArray(args.state.prefix) ? args.state.prefix : [];
      audit.prefix = comparePrefix(fingerprint(args.context, args.context.getMessages({ includeInput: true }), tokenizer), previous);
      args.report({
        code: 'context-audit',
        message: `${audit.totalTokens} tokens from ${audit.sources.length} sources; ${audit.prefix.repeatedTokens} repeat the previous request from the start`,
        data: JSON.parse(JSON.stringify(audit)) as JsonObject,
      });
      await options.onAudit?.(audit, args);
    },
    async afterRun({ context, state }) {
      if (context.response) state.prefix = fingerprint(context, lastRequest(context), tokenizer).hashes;
    },
  };
}
