import type { JsonObject } from '../spec/json.js';
import type { ContextProvider, ProviderRunArgs, SessionContext } from '../spec/run-view.js';
import type { Tokenizer } from '../spec/tokenizer.js';
import { createCharacterTokenizer } from '../tokens/character-tokenizer.js';
import { type BudgetReport, budgetReportOf, countToolTokens } from './budget.js';

/** What one source put into a run's prompt. Ids, names, counts and tokens only, never message text. */
export interface SourceAudit {
  /** The provider's `sourceId`; `agent` for the agent's own instructions and tools, `input` for the run's input. */
  sourceId: string;
  messages: number;
  /** Ids of its messages, in order. */
  messageIds: string[];
  messageTokens: number;
  instructions: number;
  instructionTokens: number;
  tools: number;
  /** Names of its tools, in order. */
  toolNames: string[];
  toolTokens: number;
  /** `messageTokens + instructionTokens + toolTokens`. */
  tokens: number;
  /** How its budget was applied this run, when it has one. */
  budget?: BudgetReport;
}

/** The audit trail of one run's prompt: every source that added something, in order, with tokens. */
export interface ContextAudit {
  sessionId: string;
  /** `agent` first (when it has instructions or tools), then providers in the order they first added something, then `input`. */
  sources: SourceAudit[];
  /** The sum of every source's tokens. */
  totalTokens: number;
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
 * `provider-diagnostic` event with code `context-audit`) and to `onAudit`. Put it **last**
 * in `contextProviders`: its `beforeRun` then runs after every other provider's, right before the
 * model call, so the audit is what the model receives (before in-run compaction).
 */
export function createAuditProvider(options: AuditProviderOptions): ContextProvider {
  const tokenizer = options.tokenizer ?? createCharacterTokenizer();
  return {
    sourceId: options.sourceId ?? 'audit',
    onError: options.onError ?? 'skip',
    async beforeRun(args) {
      const audit = auditContext(args.context, tokenizer);
      args.report({
        code: 'context-audit',
        message: `${audit.totalTokens} tokens from ${audit.sources.length} sources`,
        data: JSON.parse(JSON.stringify(audit)) as JsonObject,
      });
      await options.onAudit?.(audit, args);
    },
  };
}
