import { checkInteger, checkOptionNames, optionNames } from '../backend/checks.js';
import { ConfigurationError, ContextWindowExceededError, describe } from '../errors.js';
import { Message } from '../messages/message.js';
import type { ChatClient } from '../contracts/chat-client.js';
import type { CompactionStrategy } from '../contracts/compaction-strategy.js';
import { flattenGroups, groupMessages, isSummary, splitProtected } from './message-groups.js';
import { type CompactionTrigger, compactWhen } from './triggers.js';
import { isoNow } from '../messages/iso-now.js';

/** What `metadata.ctx.summary` of a summary message holds. */
export interface SummaryInfo {
  /** Ids of every message the summary stands for, including those of summaries it folded in. */
  replaces: string[];
  /** When the summary was made (ISO 8601). */
  createdAt: string;
  /** Set when the messages it replaces were archived (`archive: true`), so they can still be searched. */
  archived?: true;
}

/** Options of `summarization`. */
export interface SummarizationOptions {
  /** The model that writes summaries (a small, cheap one is fine). */
  client: ChatClient;
  /** Groups (turns, tool exchanges) kept word for word before the newest user turn. Default 4. */
  keepRecentGroups?: number;
  /** Run only when this fires, e.g. `{ tokens: 8000 }`. Default: whenever there are older groups. */
  trigger?: CompactionTrigger;
  /** Instructions for the summarizer. */
  instructions?: string;
  /** Characters of a single tool result shown to the summarizer. Default 500. */
  maxResultChars?: number;
  /**
   * Used when the summarizer fails or answers with blank text, e.g. `truncation({ maxTokens })`.
   * Default: none, the messages stay as they were. Either way a `summary-failed` diagnostic is reported.
   */
  fallback?: CompactionStrategy;
  /**
   * Keep the messages a summary replaces findable: they go to the run's recall index
   * (`CompactOptions.archive`, which `CompactionProvider` sets when the run has a
   * `SemanticRecallProvider`) before the summary replaces them, and the summary says they can be
   * searched. When archiving fails nothing is summarized (`archive-failed` is reported). Default false.
   */
  archive?: boolean;
}

/** The note a summary carries when what it replaces was archived. */
export function archiveNote(what: string, toolName: string | undefined): string {
  return toolName
    ? `(${what} archived: call the \`${toolName}\` tool to search them for exact details.)`
    : `(${what} archived: exact details are recalled when relevant.)`;
}

const DEFAULT_INSTRUCTIONS =
  'Summarize the conversation below for the assistant that continues it. Keep facts, names, numbers, decisions, open questions and what tools returned that still matters. Write plain prose, at most 200 words. If an earlier summary is included, fold it in.';

/** The summary info of a message, if it is a summary. */
export function summaryInfo(message: Message): SummaryInfo | undefined {
  return isSummary(message) ? (message.metadata!.ctx as unknown as { summary: SummaryInfo }).summary : undefined;
}

const SUMMARIZATION_OPTIONS = optionNames<SummarizationOptions>()({
  client: true,
  keepRecentGroups: true,
  trigger: true,
  instructions: true,
  maxResultChars: true,
  fallback: true,
  archive: true,
});

/**
 * Summarizes the oldest groups into one system message marked `metadata.ctx.summary` (with the ids
 * it replaces). A later summarization folds the previous summary in, so there is at most one. A
 * service compaction item and what it stands for are kept: only groups after it are summarized, and
 * the summary follows it. A
 * summarizer that fails or answers blank changes nothing (or hands over to `fallback`) and reports
 * `summary-failed`; only an abort propagates.
 */
export function summarization(options: SummarizationOptions): CompactionStrategy {
  checkOptionNames('summarization', options, SUMMARIZATION_OPTIONS);
  const keep = checkInteger('summarization', 'keepRecentGroups', options.keepRecentGroups ?? 4, 0);
  const maxResultChars = checkInteger('summarization', 'maxResultChars', options.maxResultChars ?? 500, 0);
  if (typeof options.client?.getResponse !== 'function')
    throw new ConfigurationError('summarization: client must be a ChatClient (an object with getResponse).');
  const strategy: CompactionStrategy = {
    ...(options.archive || options.fallback?.archives ? { archives: true } : {}),
    async compact(messages, compactOptions) {
      const { signal } = compactOptions;
      const groups = groupMessages(messages);
      const { system, older: all, recent } = splitProtected(groups);
      // A service compaction item already stands for what came before it: it is kept as it is, and
      // the summary (of what follows it) comes after it, where the service still reads it.
      const compacted = all.filter((g) => g.kind === 'compaction');
      const older = all.filter((g) => g.kind !== 'compaction');
      const cut = Math.max(0, older.length - keep);
      const folded = older.slice(0, cut);
      if (folded.length === 0 || (folded.length === 1 && folded[0]!.kind === 'summary')) return [...messages];
      const foldedMessages = flattenGroups(folded);
      // A failed or blank summary must not replace history: keep it (or use the fallback) and say so.
      const failed = (message: string, error?: unknown) => {
        compactOptions.report?.({ code: 'summary-failed', message, ...(error === undefined ? {} : { error }) });
        return options.fallback ? options.fallback.compact(messages, compactOptions) : [...messages];
      };
      const archive = options.archive ? compactOptions.archive : undefined;
      if (archive) {
        try {
          await archive.store(
            foldedMessages.filter((m) => !isSummary(m)),
            signal ? { signal } : {},
          );
        } catch (error) {
          if (signal?.aborted) throw error;
          compactOptions.report?.({
            code: 'archive-failed',
            message: `Archiving ${foldedMessages.length} messages failed, so they were not summarized: ${describe(error)}`,
            error,
          });
          return [...messages];
        }
      }
      let text: string;
      try {
        const response = await options.client.getResponse([Message.user(transcript(foldedMessages, maxResultChars))], {
          instructions: options.instructions ?? DEFAULT_INSTRUCTIONS,
          ...(signal ? { signal } : {}),
        });
        text = response.messages
          .map((m) => Message.text(m))
          .join('')
          .trim();
      } catch (error) {
        if (signal?.aborted || ContextWindowExceededError.isInstance(error)) throw error;
        return failed(`The summarizer failed, so ${foldedMessages.length} messages were not summarized: ${describe(error)}`, error);
      }
      if (!text) return failed(`The summarizer answered with blank text, so ${foldedMessages.length} messages were not summarized.`);
      const replaces = foldedMessages.flatMap((m) => summaryInfo(m)?.replaces ?? [m.id]);
      const note = archive ? `\n\n${archiveNote('The messages this summary replaces are', archive.toolName)}` : '';
      const info = { replaces, createdAt: isoNow(), ...(archive ? { archived: true } : {}) };
      const summary = Message.system(`Summary of the earlier conversation:\n${text}${note}`, {
        metadata: { ctx: { sourceId: 'compaction', sourceType: 'context', summary: info } },
      });
      return [...flattenGroups([...system, ...compacted]), summary, ...flattenGroups([...older.slice(cut), ...recent])];
    },
  };
  return options.trigger ? compactWhen(options.trigger, strategy) : strategy;
}

function transcript(messages: readonly Message[], maxResultChars: number): string {
  const lines: string[] = [];
  for (const m of messages) {
    const summary = summaryInfo(m);
    if (summary) {
      lines.push(
        `[earlier summary] ${Message.text(m)
          .replace(/^Summary of the earlier conversation:\n/, '')
          .replace(/\n\n\(The messages this summary replaces are archived: [^\n]*\)$/, '')}`,
      );
      continue;
    }
    for (const c of m.contents) {
      if (c.type === 'text') lines.push(`${m.role}: ${c.text}`);
      else if (c.type === 'function-call') lines.push(`${m.role} called ${c.name}(${c.arguments})`);
      else if (c.type === 'function-result') {
        const text = typeof c.result === 'string' ? c.result : JSON.stringify(c.result);
        lines.push(`result of ${c.name ?? c.callId}: ${text.length > maxResultChars ? `${text.slice(0, maxResultChars)}…` : text}`);
      } else if (c.type === 'data') lines.push(`${m.role} attached ${c.name ?? c.mediaType}`);
    }
  }
  return lines.join('\n');
}
