import type { JsonObject } from './json.js';
import type { ProviderDiagnostic } from './run-view.js';

/** What `HistoryProvider.getMessages` receives. */
export interface GetHistoryArgs {
  /** The provider's state slot of this session. */
  state: JsonObject;
  /** Return at most this many of the newest messages. */
  limit?: number;
  signal?: AbortSignal;
  /** The run's diagnostic channel, when a run loads (e.g. to report repaired stored data). Ids and counts only. */
  report?: (diagnostic: ProviderDiagnostic) => void;
}

/** What `HistoryProvider.saveMessages` and `replaceMessages` receive. */
export interface SaveHistoryArgs {
  /** The provider's state slot of this session. */
  state: JsonObject;
  signal?: AbortSignal;
  /** The run's diagnostic channel, when a run stores. Ids and counts only. */
  report?: (diagnostic: ProviderDiagnostic) => void;
}

/** What `HistoryProvider.popMessages` receives. */
export interface PopHistoryArgs extends SaveHistoryArgs {
  /** How many of the newest messages to remove. Default 1. */
  count?: number;
}
