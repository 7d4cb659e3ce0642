import type { JsonObject } from './json.js';
import type { ProviderDiagnostic } from './run-view.js';

/** What `HistoryProvider.getMessages` receives. */
export interface GetHistoryArgs {
  /** The provider's state slot of this session. */
  state: JsonObject;
  /** Return at most this many of the newest messages. */
  limit?: number;
  /** Aborts the read. */
  signal?: AbortSignal;
  /** The run's diagnostic channel, when a run loads (e.g. to report repaired stored data). Ids and counts only. */
  report?: (diagnostic: ProviderDiagnostic) => void;
}

/**
 * The turn a batch of `saveMessages` belongs to, when a run stores it. A turn is identified by the
 * ids of its input messages: a caller that retries a run passes the same input messages (same ids).
 */
export interface HistoryTurn {
  /** The ids of the run's input messages, in order (empty when the run had no input). */
  readonly inputIds: readonly string[];
  /**
   * Whether this batch opens the turn: its first batch (the only one with `persistence: 'run'`; with
   * `'model-call'` the one stored after the first model call, later ones continue the turn). A backend
   * that honours retries finds where the turn is stored, wherever it sits (see `findRetriedTurn` in
   * `@ctx/core/backend`): the opening batch replaces a stored earlier attempt of it in place, so the
   * turn is stored once; a later batch goes right after the stored turn, so it stays in one piece
   * when other turns were stored after it.
   */
  readonly opens: boolean;
}

/** What `HistoryProvider.saveMessages` and `replaceMessages` receive. */
export interface SaveHistoryArgs {
  /** The provider's state slot of this session. */
  state: JsonObject;
  /** Aborts the write. */
  signal?: AbortSignal;
  /** The run's diagnostic channel, when a run stores. Ids and counts only. */
  report?: (diagnostic: ProviderDiagnostic) => void;
  /** Set when a run stores (not for `replaceMessages` or direct calls): the turn this batch belongs to. */
  turn?: HistoryTurn;
}

/** What `HistoryProvider.popMessages` receives. */
export interface PopHistoryArgs extends SaveHistoryArgs {
  /** How many of the newest messages to remove. Default 1. */
  count?: number;
}

/** What `HistoryProvider.forkMessages` receives. */
export interface ForkHistoryArgs {
  /** The provider's state slot of the session forked from. */
  fromState: JsonObject;
  /** The provider's state slot of the new session (a copy of `fromState`); the provider may change it. */
  toState: JsonObject;
  /**
   * Copy the history up to and including this message; absent copies all of it. One not in the
   * history is refused with `InvalidInputError` (the caller's mistake) before anything is written.
   */
  atMessageId?: string;
  /** Aborts the copy. */
  signal?: AbortSignal;
}

/** What `HistoryProvider.clearMessages` receives. */
export interface ClearHistoryArgs {
  /** The provider's state slot of the session. */
  state: JsonObject;
  /** Aborts the delete. */
  signal?: AbortSignal;
}
