import type { JsonObject } from './json.js';

/** The serialized form of a session. Version 1. */
export interface SessionJson {
  /** Always `ctx.session`. */
  type: 'ctx.session';
  /** The format version. */
  version: 1;
  /** The session's id. */
  sessionId: string;
  /** The service conversation id, when the service keeps the conversation. */
  serviceSessionId?: string;
  /** Each provider's JSON slot, keyed by `sourceId`. */
  state: Record<string, JsonObject>;
}
