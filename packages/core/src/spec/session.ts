import type { JsonObject } from './json.js';

/** The serialized form of a session. Version 1. */
export interface SessionJson {
  type: 'ctx.session';
  version: 1;
  sessionId: string;
  serviceSessionId?: string;
  /** Each provider's JSON slot, keyed by `sourceId`. */
  state: Record<string, JsonObject>;
}
