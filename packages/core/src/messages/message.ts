import { SessionStateError } from '../errors.js';
import type {
  Content,
  FunctionCallContent,
  FunctionResultContent,
  Message as MessageData,
  MessageSource,
  Role,
  SourceType,
} from '../contracts/message.js';
import { generateId } from './id.js';
import { at, describeThrown, describeValue, formatPath, isPlainObject, jsonProblem, type Problem } from './json.js';
import { isoNow } from './iso-now.js';

/** A chat message (see the spec); also the namespace of helpers that build and read messages. */
export type Message = MessageData;

/** Optional fields for the `Message` helpers. */
export type MessageInit = Partial<Omit<Message, 'role' | 'contents'>>;

function create(role: Role, contents: string | Content | Content[], init?: MessageInit): Message {
  const list =
    typeof contents === 'string' ? [{ type: 'text', text: contents } as const] : Array.isArray(contents) ? [...contents] : [contents];
  const message: Message = { id: init?.id ?? generateId(), role, contents: list, createdAt: init?.createdAt ?? isoNow() };
  if (init?.authorName !== undefined) message.authorName = init.authorName;
  if (init?.metadata !== undefined) message.metadata = init.metadata;
  return message;
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
  /** Whether `value` is a well-formed message. Never throws. */
  isMessage(value: unknown): value is Message {
    return messageProblem(value) === undefined;
  },
  /**
   * Checks that `value` is a well-formed message and returns it typed. `metadata` and function
   * results must be plain JSON nested at most 128 levels below the message.
   * @throws SessionStateError naming the offending path (under `path`, default `$`), for any input,
   *   and the session when `context.sessionId` gives it (a store or history reading that session).
   */
  parse(value: unknown, path = '$', context?: { sessionId?: string | undefined }): Message {
    const problem = messageProblem(value);
    if (problem) throw new SessionStateError(formatPath(path, problem[0]), problem[1], { sessionId: context?.sessionId });
    return value as Message;
  },
};

function expectString(obj: Record<string, unknown>, key: string, optional = false): Problem | undefined {
  const v = obj[key];
  if (typeof v === 'string' || (v === undefined && optional)) return undefined;
  return [[key], v === undefined ? 'is missing' : `must be a string, got ${describeValue(v)}`];
}

/** Levels above a function result: the message, its contents array, the content. */
export const RESULT_DEPTH = 3;
/** Levels above the metadata object: the message. */
const METADATA_DEPTH = 1;
/** Fields checked on their own, which `fieldsProblem` skips. */
const MESSAGE_CHECKED: ReadonlySet<string> = new Set(['contents', 'metadata']);
const CONTENT_CHECKED: ReadonlySet<string> = new Set(['result']);

/**
 * The first field of `value` other than `checked` that is not plain JSON: fields ctx does not know
 * (a backend's own, a newer version's) must survive storage unchanged too. `depth` is the levels
 * above the fields' values.
 */
function fieldsProblem(value: Record<string, unknown>, checked: ReadonlySet<string>, depth: number): Problem | undefined {
  for (const key in value) {
    if (checked.has(key)) continue;
    const problem = jsonProblem(value[key], depth);
    if (problem) return at(key, problem);
  }
  return undefined;
}

function contentProblem(value: unknown): Problem | undefined {
  if (!isPlainObject(value)) return [[], `must be an object, got ${describeValue(value)}`];
  return knownContentProblem(value) ?? fieldsProblem(value, CONTENT_CHECKED, RESULT_DEPTH);
}

function knownContentProblem(value: Record<string, unknown>): Problem | undefined {
  switch (value.type) {
    case 'text':
      return expectString(value, 'text') ?? phaseProblem(value.phase) ?? at('annotations', annotationsProblem(value.annotations));
    case 'refusal':
      return expectString(value, 'refusal');
    case 'hosted-tool':
      if (!isPlainObject(value.item)) return [['item'], `must be an object, got ${describeValue(value.item)}`];
      return at('item', expectString(value.item, 'type'));
    case 'function-call':
      return expectString(value, 'callId') ?? expectString(value, 'name') ?? expectString(value, 'arguments');
    case 'function-result': {
      const p = expectString(value, 'callId') ?? expectString(value, 'name', true);
      if (p) return p;
      if (!('result' in value)) return [['result'], 'is missing'];
      if (value.isError !== undefined && typeof value.isError !== 'boolean') return [['isError'], 'must be a boolean'];
      return at('result', jsonProblem(value.result, RESULT_DEPTH));
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
      return [['type'], `unknown content type ${describeValue(value.type)}`];
  }
}

function phaseProblem(phase: unknown): Problem | undefined {
  if (phase === undefined || phase === 'commentary' || phase === 'final-answer') return undefined;
  return [['phase'], `must be 'commentary' or 'final-answer', got ${describeValue(phase)}`];
}

function annotationsProblem(value: unknown): Problem | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) return [[], `must be an array, got ${describeValue(value)}`];
  for (let i = 0; i < value.length; i++) {
    const a: unknown = value[i];
    if (!isPlainObject(a)) return [[i], `must be an object, got ${describeValue(a)}`];
    const p: Problem | undefined =
      a.type === 'url-citation'
        ? (expectString(a, 'url') ?? expectString(a, 'title', true))
        : a.type === 'file-citation'
          ? (expectString(a, 'fileId') ?? expectString(a, 'filename', true) ?? expectString(a, 'containerId', true))
          : [['type'], `unknown annotation type ${describeValue(a.type)}`];
    if (p) return at(i, p);
    for (const key of ['startIndex', 'endIndex', 'index']) {
      if (a[key] !== undefined && !Number.isInteger(a[key])) return [[i, key], `must be an integer, got ${describeValue(a[key])}`];
    }
  }
  return undefined;
}

/** What is wrong with `value` as a message, or undefined. Never throws: a read that throws is a problem at its path. */
function messageProblem(value: unknown): Problem | undefined {
  try {
    return checkMessage(value);
  } catch (error) {
    return [[], `could not be read (${describeThrown(error)})`];
  }
}

function checkMessage(value: unknown): Problem | undefined {
  if (!isPlainObject(value)) return [[], `must be a message object, got ${describeValue(value)}`];
  const p = expectString(value, 'id') ?? expectString(value, 'authorName', true) ?? expectString(value, 'createdAt', true);
  if (p) return p;
  if (typeof value.role !== 'string' || !ROLES.has(value.role))
    return [['role'], `must be one of system, user, assistant, tool; got ${describeValue(value.role)}`];
  const contents = value.contents;
  if (!Array.isArray(contents)) return [['contents'], `must be an array, got ${describeValue(contents)}`];
  for (let i = 0; i < contents.length; i++) {
    let c: Problem | undefined;
    try {
      c = contentProblem(contents[i]);
    } catch (error) {
      c = [[], `could not be read (${describeThrown(error)})`];
    }
    if (c) return at('contents', at(i, c));
  }
  if (value.metadata !== undefined) {
    if (!isPlainObject(value.metadata)) return [['metadata'], `must be an object, got ${describeValue(value.metadata)}`];
    const m = at('metadata', jsonProblem(value.metadata, METADATA_DEPTH));
    if (m) return m;
  }
  return fieldsProblem(value, MESSAGE_CHECKED, METADATA_DEPTH);
}
