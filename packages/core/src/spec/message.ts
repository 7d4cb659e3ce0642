import type { JsonObject, JsonValue } from './json.js';

/** Who wrote a message. */
export type Role = 'system' | 'user' | 'assistant' | 'tool';

/** Plain text. */
export type TextContent = {
  type: 'text';
  text: string;
};

/** The model asks for a tool to be called. `arguments` is the JSON text the model produced. */
export type FunctionCallContent = {
  type: 'function-call';
  callId: string;
  name: string;
  arguments: string;
};

/** The result of a function call, matched to it by `callId`. */
export type FunctionResultContent = {
  type: 'function-result';
  callId: string;
  name?: string;
  result: JsonValue;
  /** The tool failed; `result` describes the failure. */
  isError?: boolean;
};

/** Binary or remote data (an image, a file): exactly one of `uri` and `data` (base64). */
export type DataContent = {
  type: 'data';
  mediaType: string;
  uri?: string;
  data?: string;
  name?: string;
};

/** The model's reasoning. `text` may be a summary; `encrypted` is opaque data some services return to be sent back. */
export type ReasoningContent = {
  type: 'reasoning';
  text: string;
  id?: string;
  encrypted?: string;
};

/** One piece of a message. */
export type Content = TextContent | FunctionCallContent | FunctionResultContent | DataContent | ReasoningContent;

/** Where a message came from: the user's input, loaded history, a context provider, or the model. */
export type SourceType = 'input' | 'history' | 'context' | 'response';

/** Attribution carried in `message.metadata.ctx`. */
export type MessageSource = {
  sourceId: string;
  sourceType: SourceType;
};

/** A chat message. Plain JSON: it survives `JSON.parse(JSON.stringify(m))` unchanged. */
export type Message = {
  /** Stable id, used to de-duplicate on retry. */
  id: string;
  role: Role;
  contents: Content[];
  authorName?: string;
  /** ISO 8601. */
  createdAt?: string;
  metadata?: JsonObject;
};
