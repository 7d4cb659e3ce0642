import type { JsonObject, JsonValue } from './json.js';

/** Who wrote a message. */
export type Role = 'system' | 'user' | 'assistant' | 'tool';

/** A source the model cites for a span of text: a web page. `startIndex`/`endIndex` are as the service gives them, into the text they annotate. */
export type UrlCitation = {
  type: 'url-citation';
  url: string;
  title?: string;
  startIndex?: number;
  endIndex?: number;
};

/** A file the model cites (file search) or a file it produced (code interpreter: `containerId` set). */
export type FileCitation = {
  type: 'file-citation';
  fileId: string;
  filename?: string;
  containerId?: string;
  /** Where the citation sits in the text; or its span with `startIndex`/`endIndex`. */
  index?: number;
  startIndex?: number;
  endIndex?: number;
};

/** Something the service attached to a span of text. */
export type Annotation = UrlCitation | FileCitation;

/**
 * Plain text. `annotations` are the citations the service attached to it. `phase` marks a model's
 * progress notes (`commentary`) apart from its `final-answer`: texts of different phases are never
 * joined, and a client that knows phases sends them back.
 */
export type TextContent = {
  type: 'text';
  text: string;
  annotations?: Annotation[];
  phase?: 'commentary' | 'final-answer';
};

/** The model declined to answer; `refusal` is its explanation. Not part of `Message.text`. */
export type RefusalContent = {
  type: 'refusal';
  refusal: string;
};

/**
 * A tool the service ran itself (web search, file search, code interpreter, MCP, tool search ...):
 * `item` is the service's own item, kept unchanged so it can be sent back when the conversation is
 * kept locally. `item.type` names it (e.g. `web_search_call`). Clients of other services skip it.
 */
export type HostedToolContent = {
  type: 'hosted-tool';
  item: JsonObject;
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
export type Content =
  | TextContent
  | RefusalContent
  | FunctionCallContent
  | FunctionResultContent
  | DataContent
  | ReasoningContent
  | HostedToolContent;

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
