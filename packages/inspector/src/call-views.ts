// The shapes a model call is read into, shared by the model (model.ts) and the advice it gives
// (cache-advice.ts, removals.ts), so that neither imports the other.

/** One thing a model call sent, in the order the model reads it: tools, then instructions, then messages. */
export interface CallItem {
  /** What it is. */
  kind: 'tool' | 'instructions' | 'message';
  /** The source that added it: a provider's `sourceId`, `agent`, `input`, or `response` for what the run's model and tools produced. */
  sourceId: string;
  /** A tool's name, a message's role, or `instructions`. */
  label: string;
  /** Its tokens, counted like `createAuditProvider` counts them. */
  tokens: number;
  /** The message's id. */
  id?: string;
  /** The text, only when the inspector shows text (`showText`); redacted when it has `redact`. */
  text?: string;
  /** What a message holds besides text: `function-call get_weather`, `function-result`, ... */
  parts?: string[];
  /** The compaction summary this message is, with how many messages it stands for. */
  summaryOf?: number;
  /** A short hash of what the model sees of it (a message's role and contents, a tool's definition, an instruction's text). */
  hash: string;
}

/** Tokens one source sent in one model call. */
export interface SourceTokens {
  /** The source. */
  sourceId: string;
  /** Its messages' tokens. */
  messageTokens: number;
  /** Its instructions' tokens. */
  instructionTokens: number;
  /** Its tools' tokens. */
  toolTokens: number;
  /** All of them. */
  tokens: number;
  /** How many items it sent. */
  items: number;
}

/** How much of a call repeats the session's previous call from its first token, and what changed first. */
export interface CacheView {
  /** Tokens at the start of the call that the previous call began with too. */
  repeatedTokens: number;
  /** The call's tokens, counted the same way. */
  totalTokens: number;
  /** The first item that differs, absent when the previous call is repeated whole (or there was none). */
  firstChange?: {
    /** `tools`, `instructions` or `messages`. */
    kind: 'tools' | 'instructions' | 'messages';
    /** The source whose item changed first (for an item removed: the source of the item that was there). */
    sourceId: string;
    /** What happened, for people: `instruction changed`, `tool "x" added`, `history compacted`. */
    reason: string;
    /** What to do about it, when something can be done. */
    advice?: string;
  };
  /** What the service says it read from its cache (`usage.cachedInputTokens`), once the call answered. */
  cachedInputTokens?: number;
  /** Whether there was a previous call to compare with. */
  compared: boolean;
}

/** What a call left out that the session's previous call had sent. */
export interface RemovedView {
  /** The source the messages belonged to. */
  sourceId: string;
  /** How many messages. */
  messages: number;
  /** Their tokens. */
  tokens: number;
  /**
   * Why: `compaction: replaced by a summary` (with `(the previous summary folded in)` when it
   * folded one), `removed from the front (...)` (truncation, a sliding window, a history's window),
   * or `left out, newer messages kept (...)` (a budget).
   */
  reason: string;
}

/** A call as sent, kept per session to compare the next call with (internal: not exported by the package). */
export interface SentCall {
  items: CallItem[];
  /** Core's prefix granularity: tools, the joined instructions as one item, messages. */
  hashes: string[];
  tokens: number[];
  kinds: Array<'tools' | 'instructions' | 'messages'>;
  /** One entry per item of `hashes`: the source(s) of that item. */
  owners: string[];
  instructionParts: Array<{ sourceId: string; text: string }>;
  /** Each message sent, in order: its source, tokens, and for a summary the ids it replaces. */
  messageIds: Map<string, { sourceId: string; tokens: number; summary?: readonly string[] }>;
}
