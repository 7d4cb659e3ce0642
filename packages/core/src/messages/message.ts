import { SessionStateError } from '../errors.js';
import type {
  Content,
  FunctionCallContent,
  FunctionResultContent,
  Message as MessageData,
  MessageSource,
  Role,
  SourceType,
} from '../spec/message.js';
import { generateId } from './id.js';
import { formatPath, isPlainObject, nonJsonSegments, type PathSegments } from './json.js';

/** A chat message (see the spec); also the namespace of helpers that build and read messages. */
export type Message = MessageData;

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
  /** A shallow copy of `message` attributed to `sourceId` (other `metadata.ctx` fields, like a summary marker, are kept). */
  withSource(message: Message, sourceId: string, sourceType: SourceType): Message {
    const ctx = message.metadata?.ctx;
    return {
      ...message,
      metadata: { ...message.metadata, ctx: isPlainObject(ctx) ? { ...ctx, sourceId, sourceType } : { sourceId, sourceType } },
    };
  },
  /** Whether `value` is a well-formed message. */
  isMessage(value: unknown): value is Message {
    return messageProblem(value) === undefined;
  },
  /**
   * Checks that `value` is a well-formed message and returns it typed.
   * @throws SessionStateError naming the offending path (under `path`, default `$`).
   */
  parse(value: unknown, path = '$'): Message {
    const problem = messageProblem(value);
    if (problem) throw new SessionStateError(formatPath(path, problem[0]), problem[1]);
    return value as Message;
  },
};

/** What is wrong, and where below the value checked. Segments are built only on failure. */
type Problem = [segments: PathSegments, problem: string];

function at(segment: string | number, problem: Problem | undefined): Problem | undefined {
  problem?.[0].unshift(segment);
  return problem;
}

function expectString(obj: Record<string, unknown>, key: string, optional = false): Problem | undefined {
  const v = obj[key];
  if (typeof v === 'string' || (v === undefined && optional)) return undefined;
  return [[key], v === undefined ? 'is missing' : `must be a string, got ${typeName(v)}`];
}

function typeName(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

function notJson(value: unknown): Problem | undefined {
  const segments = nonJsonSegments(value);
  return segments && [segments, 'is not JSON'];
}

function contentProblem(value: unknown): Problem | undefined {
  if (!isPlainObject(value)) return [[], `must be an object, got ${typeName(value)}`];
  switch (value.type) {
    case 'text':
      return expectString(value, 'text');
    case 'function-call':
      return expectString(value, 'callId') ?? expectString(value, 'name') ?? expectString(value, 'arguments');
    case 'function-result': {
      const p = expectString(value, 'callId') ?? expectString(value, 'name', true);
      if (p) return p;
      if (!('result' in value)) return [['result'], 'is missing'];
      if (value.isError !== undefined && typeof value.isError !== 'boolean') return [['isError'], 'must be a boolean'];
      return at('result', notJson(value.result));
    }
    case 'data': {
      const p =
        expectString(value, 'mediaType') ??
        expectString(value, 'uri', true) ??
        expectString(value, 'data', true) ??
        expectString(value, 'name', true);
      if (p) return p;
      return (value.uri === undefined) === (value.data === undefined)
        ? [[], 'data content needs exactly one of "uri" and "data"']
        : undefined;
    }
    case 'reasoning':
      return expectString(value, 'text') ?? expectString(value, 'id', true) ?? expectString(value, 'encrypted', true);
    default:
      return [['type'], `unknown content type ${JSON.stringify(value.type) ?? 'undefined'}`];
  }
}

function messageProblem(value: unknown): Problem | undefined {
  if (!isPlainObject(value)) return [[], `must be a message object, got ${typeName(value)}`];
  const p = expectString(value, 'id') ?? expectString(value, 'authorName', true) ?? expectString(value, 'createdAt', true);
  if (p) return p;
  if (typeof value.role !== 'string' || !ROLES.has(value.role))
    return [['role'], `must be one of system, user, assistant, tool; got ${JSON.stringify(value.role) ?? 'undefined'}`];
  const contents = value.contents;
  if (!Array.isArray(contents)) return [['contents'], `must be an array, got ${typeName(contents)}`];
  for (let i = 0; i < contents.length; i++) {
    const c = contentProblem(contents[i]);
    if (c) return at('contents', at(i, c));
  }
  if (value.metadata !== undefined) {
    if (!isPlainObject(value.metadata)) return [['metadata'], `must be an object, got ${typeName(value.metadata)}`];
    return at('metadata', notJson(value.metadata));
  }
  return undefined;
}
