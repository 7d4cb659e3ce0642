import type { JsonObject } from './json.js';

/** What `HistoryProvider.getMessages` receives. */
export interface GetHistoryArgs {
  /** The provider's state slot of this session. */
  state: JsonObject;
  /** Return at most this many of the newest messages. */
  limit?: number;
  signal?: AbortSignal;
}

/** What `HistoryProvider.saveMessages` and `replaceMessages` receive. */
export interface SaveHistoryArgs {
  /** The provider's state slot of this session. */
  state: JsonObject;
  signal?: AbortSignal;
}
