import { SessionStateError } from './errors.js';
import { generateId } from './id.js';
import { findNonJson, isPlainObject, pathJoin, type JsonObject, type JsonValue } from './json.js';

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

/** Optional fields for the `Message` helpers. */
export type MessageInit = Partial<Omit<Message, 'role' | 'contents'>>;

function create(role: Role, contents: string | Content | Content[], init: MessageInit = {}): Message {
  const list = typeof contents === 'string' ? [{ type: 'text', text: contents } as const] : Array.isArray(contents) ? contents : [contents];
  return { id: init.id ?? generateId(), role, contents: [...list], createdAt: init.createdAt ?? new Date().toISOString(), ...rest(init) };
}

function rest(init: MessageInit): Partial<Message> {
  const out: Partial<Message> = {};
  if (init.authorName !== undefined) out.authorName = init.authorName;
  if (init.metadata !== undefined) out.metadata = init.metadata;
  return out;
}

const ROLES: ReadonlySet<string> = new Set(['system', 'user', 'assistant', 'tool']);
const SOURCE_TYPES: ReadonlySet<string> = new Set(['input', 'history', 'context', 'response']);

/** Helpers to build and read messages. */
export const Message = {
  /** A user message. */
  user: (contents: string | Content | Content[], init?: MessageInit): Message => create('user', contents, init),
  /** An assistant message. */
  assistant: (contents: string | Content | Content[], init?: MessageInit): Message => create('assistant', contents, init),
  /** A system message. */
  system: (contents: string | Content | Content[], init?: MessageInit): Message => create('system', contents, init),
  /** A tool message holding function results. */
  tool: (results: FunctionResultContent | FunctionResultContent[], init?: MessageInit): Message => create('tool', results, init),
  /** The concatenated text contents of a message (reasoning excluded). */
  text(message: Message): string {
    let out = '';
    for (const c of message.contents) if (c.type === 'text') out += c.text;
    return out;
  },
  /** The function calls in a message. */
  functionCalls: (message: Message): FunctionCallContent[] =>
    message.contents.filter((c): c is FunctionCallContent => c.type === 'function-call'),
  /** The attribution of a message, if it has one. */
  source(message: Message): MessageSource | undefined {
    const ctx = message.metadata?.ctx;
    if (!isPlainObject(ctx) || typeof ctx.sourceId !== 'string' || typeof ctx.sourceType !== 'string') return undefined;
    return SOURCE_TYPES.has(ctx.sourceType) ? { sourceId: ctx.sourceId, sourceType: ctx.sourceType as SourceType } : undefined;
  },
  /** A shallow copy of `message` attributed to `sourceId`. */
  withSource(message: Message, sourceId: string, sourceType: SourceType): Message {
    return { ...message, metadata: { ...message.metadata, ctx: { sourceId, sourceType } } };
  },
  /** Whether `value` is a well-formed message. */
  isMessage(value: unknown): value is Message {
    return messageProblem(value, '$') === undefined;
  },
  /**
   * Checks that `value` is a well-formed message and returns it typed.
   * @throws SessionStateError naming the offending path (under `path`, default `$`).
   */
  parse(value: unknown, path = '$'): Message {
    const problem = messageProblem(value, path);
    if (problem) throw new SessionStateError(problem[0], problem[1]);
    return value as Message;
  },
};

type Problem = [path: string, problem: string];

function expectString(obj: Record<string, unknown>, key: string, path: string, optional = false): Problem | undefined {
  const v = obj[key];
  if (v === undefined && optional) return undefined;
  return typeof v === 'string' ? undefined : [pathJoin(path, key), v === undefined ? 'is missing' : `must be a string, got ${typeName(v)}`];
}

function typeName(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

function contentProblem(value: unknown, path: string): Problem | undefined {
  if (!isPlainObject(value)) return [path, `must be an object, got ${typeName(value)}`];
  switch (value.type) {
    case 'text':
      return expectString(value, 'text', path);
    case 'function-call':
      return expectString(value, 'callId', path) ?? expectString(value, 'name', path) ?? expectString(value, 'arguments', path);
    case 'function-result': {
      const p = expectString(value, 'callId', path) ?? expectString(value, 'name', path, true);
      if (p) return p;
      if (!('result' in value)) return [pathJoin(path, 'result'), 'is missing'];
      const bad = findNonJson(value.result, pathJoin(path, 'result'));
      if (bad) return [bad, 'is not JSON'];
      if (value.isError !== undefined && typeof value.isError !== 'boolean') return [pathJoin(path, 'isError'), 'must be a boolean'];
      return undefined;
    }
    case 'data': {
      const p = expectString(value, 'mediaType', path) ?? expectString(value, 'uri', path, true) ?? expectString(value, 'data', path, true) ?? expectString(value, 'name', path, true);
      if (p) return p;
      return (value.uri === undefined) === (value.data === undefined) ? [path, 'data content needs exactly one of "uri" and "data"'] : undefined;
    }
    case 'reasoning':
      return expectString(value, 'text', path) ?? expectString(value, 'id', path, true) ?? expectString(value, 'encrypted', path, true);
    default:
      return [pathJoin(path, 'type'), `unknown content type ${JSON.stringify(value.type) ?? 'undefined'}`];
  }
}

function messageProblem(value: unknown, path: string): Problem | undefined {
  if (!isPlainObject(value)) return [path, `must be a message object, got ${typeName(value)}`];
  const p = expectString(value, 'id', path) ?? expectString(value, 'authorName', path, true) ?? expectString(value, 'createdAt', path, true);
  if (p) return p;
  if (typeof value.role !== 'string' || !ROLES.has(value.role)) return [pathJoin(path, 'role'), `must be one of system, user, assistant, tool; got ${JSON.stringify(value.role) ?? 'undefined'}`];
  if (!Array.isArray(value.contents)) return [pathJoin(path, 'contents'), `must be an array, got ${typeName(value.contents)}`];
  for (let i = 0; i < value.contents.length; i++) {
    const c = contentProblem(value.contents[i], pathJoin(pathJoin(path, 'contents'), i));
    if (c) return c;
  }
  if (value.metadata !== undefined) {
    if (!isPlainObject(value.metadata)) return [pathJoin(path, 'metadata'), `must be an object, got ${typeName(value.metadata)}`];
    const bad = findNonJson(value.metadata, pathJoin(path, 'metadata'));
    if (bad) return [bad, 'is not JSON'];
  }
  return undefined;
}
