import type { JsonObject, JsonValue } from './json.js';

/** Who wrote a message. */
export type Role = 'system' | 'user' | 'assistant' | 'tool';

/** A source the model cites for a span of text: a web page. `startIndex`/`endIndex` are as the service gives them, into the text they annotate. */
export type UrlCitation = {
  /** The content kind. */
  type: 'url-citation';
  /** The cited page. */
  url: string;
  /** The page's title, when the service gives one. */
  title?: string;
  /** Start of the cited span in the text. */
  startIndex?: number;
  /** End of the cited span in the text (exclusive). */
  endIndex?: number;
};

/** A file the model cites (file search) or a file it produced (code interpreter: `containerId` set). */
export type FileCitation = {
  /** The content kind. */
  type: 'file-citation';
  /** The service's id of the file. */
  fileId: string;
  /** The file's name, when the service gives one. */
  filename?: string;
  /** The code interpreter container that produced the file. */
  containerId?: string;
  /** Where the citation sits in the text; or its span with `startIndex`/`endIndex`. */
  index?: number;
  /** Start of the cited span in the text. */
  startIndex?: number;
  /** End of the cited span in the text (exclusive). */
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
  /** The content kind. */
  type: 'text';
  /** The text. */
  text: string;
  /** Citations the service attached to the text. */
  annotations?: Annotation[];
  /** `'commentary'` for progress notes, `'final-answer'` for the answer; absent when the service does not say. */
  phase?: 'commentary' | 'final-answer';
};

/** The model declined to answer; `refusal` is its explanation. Not part of `Message.text`. */
export type RefusalContent = {
  /** The content kind. */
  type: 'refusal';
  /** The model's explanation of why it declined. */
  refusal: string;
};

/**
 * A tool the service ran itself (web search, file search, code interpreter, MCP, tool search ...):
 * `item` is the service's own item, kept unchanged so it can be sent back when the conversation is
 * kept locally. `item.type` names it (e.g. `web_search_call`). Clients of other services skip it.
 * An item of type `compaction` is the service's compaction of the conversation: opaque, it stands
 * for everything before it (see `isCompactionItem` and `withoutCompacted`).
 */
export type HostedToolContent = {
  /** The content kind. */
  type: 'hosted-tool';
  /** The service's own item, unchanged. */
  item: JsonObject;
};

/** The model asks for a tool to be called. `arguments` is the JSON text the model produced. */
export type FunctionCallContent = {
  /** The content kind. */
  type: 'function-call';
  /** Matches the call to its result. */
  callId: string;
  /** The tool to call. */
  name: string;
  /** The arguments as the JSON text the model produced (not yet parsed or validated). */
  arguments: string;
};

/** The result of a function call, matched to it by `callId`. */
export type FunctionResultContent = {
  /** The content kind. */
  type: 'function-result';
  /** The `callId` of the call this answers. */
  callId: string;
  /** The tool that was called. */
  name?: string;
  /** The tool's result (or, with `isError`, the failure). */
  result: JsonValue;
  /** The tool failed; `result` describes the failure. */
  isError?: boolean;
};

/** Binary or remote data (an image, a file): exactly one of `uri` and `data` (base64). */
export type DataContent = {
  /** The content kind. */
  type: 'data';
  /** The IANA media type, e.g. `image/png`. */
  mediaType: string;
  /** Where the data is (`https:` or `data:`). */
  uri?: string;
  /** The data itself, base64. */
  data?: string;
  /** A file name, when there is one. */
  name?: string;
};

/** The model's reasoning. `text` may be a summary; `encrypted` is opaque data some services return to be sent back. */
export type ReasoningContent = {
  /** The content kind. */
  type: 'reasoning';
  /** The reasoning, or a summary of it; may be empty. */
  text: string;
  /** The service's id of the reasoning item, sent back with it. */
  id?: string;
  /** Opaque reasoning the service returns to be sent back as is. */
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
  /** The provider that added the message (`input` for the input, the model's for responses). */
  sourceId: string;
  /** Whether it is input, history, injected context or a response. */
  sourceType: SourceType;
};

/** A chat message. Plain JSON: it survives `JSON.parse(JSON.stringify(m))` unchanged. */
export type Message = {
  /** Stable id, used to de-duplicate on retry. */
  id: string;
  /** Who wrote it. */
  role: Role;
  /** Its pieces, in order. */
  contents: Content[];
  /** A name for the author, e.g. of one of several users. */
  authorName?: string;
  /** ISO 8601. */
  createdAt?: string;
  /** Any JSON; `metadata.ctx` holds the attribution (`MessageSource`). */
  metadata?: JsonObject;
};
