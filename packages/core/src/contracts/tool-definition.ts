import type { JsonObject } from './json.js';

/** A tool as the model sees it: its name, what it does and the JSON Schema of its arguments. */
export interface ToolDefinition {
  /** Letters, digits, `_` and `-`, at most 64 characters. */
  readonly name: string;
  /** What the tool does and when to use it, for the model. */
  readonly description?: string;
  /** JSON Schema of the arguments object. */
  readonly parameters: JsonObject;
  /** Attribution and other JSON data; `metadata.ctx.sourceId` names the provider that added the tool. */
  readonly metadata?: JsonObject;
}
