import { Message, SessionStateError, type Content, type JsonObject, type JsonValue, type Role } from '@ctx/core';
import type { AgentInputItem } from '@openai/agents-core';

/**
 * The key in `message.metadata` under which a message written from an Agents item keeps what of
 * the item its contents do not carry: `{ kind, rest }`, where `kind` says how the contents map back
 * and `rest` is the item minus the fields the contents hold (ids, status, providerData, images ...).
 */
export const AGENTS_ITEM_KEY = 'agentsItem';

/** How an item's fields are split between the message's contents and `rest`. */
type ItemKind = 'message' | 'function_call' | 'function_call_result' | 'reasoning' | 'item';

/** Options of `itemToMessage`. */
export interface ItemToMessageOptions {
  /** The message id. Default: a new random id (Agents item ids are not unique enough to de-duplicate by). */
  id?: string;
  /** ISO 8601. Default: now. */
  createdAt?: string;
}

const TEXT_PARTS: ReadonlySet<unknown> = new Set(['input_text', 'output_text']);
const MESSAGE_ROLES: ReadonlySet<unknown> = new Set(['user', 'assistant', 'system']);

/**
 * An Agents SDK input item as a ctx message, without loss: text, function calls and their results
 * and reasoning become the matching ctx contents (so ctx agents, compaction and redaction see them),
 * and everything else of the item rides in `metadata.agentsItem`. Items ctx has no content for
 * (hosted tool calls, computer and shell calls, compaction markers ...) are kept whole there, in
 * an assistant message without contents. `Uint8Array` values are stored as base64.
 * `messageToItems` turns the message back into exactly this item.
 */
export function itemToMessage(item: AgentInputItem, options: ItemToMessageOptions = {}): Message {
  const { kind, role, contents, rest } = split(item as unknown as Record<string, unknown>);
  return {
    id: options.id ?? crypto.randomUUID(),
    role,
    contents,
    createdAt: options.createdAt ?? new Date().toISOString(),
    metadata: {
      ctx: role === 'user' ? { sourceId: 'input', sourceType: 'input' } : { sourceId: 'response', sourceType: 'response' },
      [AGENTS_ITEM_KEY]: { kind, rest: encode(rest) as JsonObject },
    },
  };
}

/**
 * A ctx message as Agents SDK input items. A message written by `itemToMessage` gives back exactly
 * its item. Any other message (stored by a ctx agent on the same history) is mapped from its
 * contents: texts to a message item, images and files to input parts, reasoning to a reasoning
 * item, each function call to a `function_call` item and each result to a `function_call_result`
 * item; contents without an Agents counterpart are left out.
 * @throws SessionStateError when `metadata.agentsItem` does not match the message's contents.
 */
export function messageToItems(message: Message): AgentInputItem[] {
  const item = storedItem(message);
  return item === undefined ? fromContents(message) : [item];
}

/** `messages.flatMap(messageToItems)`, without an array per message. */
export function messagesToItems(messages: readonly Message[]): AgentInputItem[] {
  const items: AgentInputItem[] = [];
  for (const message of messages) {
    const item = storedItem(message);
    if (item !== undefined) items.push(item);
    else for (const other of fromContents(message)) items.push(other);
  }
  return items;
}

/** The item `itemToMessage` kept in `message`, or undefined when the message holds none. */
function storedItem(message: Message): AgentInputItem | undefined {
  const stored = message.metadata?.[AGENTS_ITEM_KEY];
  if (!isPlainObject(stored) || typeof stored.kind !== 'string' || !isPlainObject(stored.rest)) return undefined;
  return join(stored.kind as ItemKind, decode(stored.rest), message) as unknown as AgentInputItem;
}

function split(item: Record<string, unknown>): { kind: ItemKind; role: Role; contents: Content[]; rest: Record<string, unknown> } {
  const { type } = item;
  if (MESSAGE_ROLES.has(item.role) && (type === undefined || type === 'message')) {
    const { role, content, ...rest } = item;
    if (typeof content === 'string') return { kind: 'message', role: role as Role, contents: [{ type: 'text', text: content }], rest };
    if (Array.isArray(content) && content.every(isSplittablePart)) {
      const contents: Content[] = [];
      const parts = content.map((part: Record<string, unknown>) => {
        if (!TEXT_PARTS.has(part.type)) return part;
        const { text, ...other } = part;
        contents.push({ type: 'text', text: text as string });
        return other;
      });
      return { kind: 'message', role: role as Role, contents, rest: { ...rest, content: parts } };
    }
  }
  if (type === 'function_call' && typeof item.callId === 'string' && typeof item.name === 'string' && typeof item.arguments === 'string') {
    const { callId, name, arguments: args, ...rest } = item;
    return { kind: 'function_call', role: 'assistant', contents: [{ type: 'function-call', callId, name, arguments: args }], rest };
  }
  if (type === 'function_call_result' && typeof item.callId === 'string' && typeof item.name === 'string' && 'output' in item) {
    const { callId, name, output, ...rest } = item;
    return {
      kind: 'function_call_result',
      role: 'tool',
      contents: [{ type: 'function-result', callId, name, result: encode(output) }],
      rest,
    };
  }
  if (type === 'reasoning' && Array.isArray(item.content) && item.content.every(isReasoningPart)) {
    const contents: Content[] = [];
    const parts = item.content.map(({ text, ...other }: Record<string, unknown>) => {
      contents.push({ type: 'reasoning', text: text as string });
      return other;
    });
    return { kind: 'reasoning', role: 'assistant', contents, rest: { ...item, content: parts } };
  }
  const role = MESSAGE_ROLES.has(item.role) ? (item.role as Role) : 'assistant';
  return { kind: 'item', role, contents: [], rest: item };
}

/** A content part whose text can move to a ctx text content: a text part with string text, or any part that is not a text part. */
function isSplittablePart(part: unknown): part is Record<string, unknown> {
  return isPlainObject(part) && (!TEXT_PARTS.has(part.type) || typeof part.text === 'string');
}

function isReasoningPart(part: unknown): part is Record<string, unknown> {
  return isPlainObject(part) && part.type === 'input_text' && typeof part.text === 'string';
}

/**
 * The item: `decoded` (what `decode` made of the stored rest: a new object no one else holds) with
 * the fields the message's contents carry written into it, in the order `{ ...rest, fields }` gives.
 */
function join(kind: ItemKind, decoded: unknown, message: Message): Record<string, unknown> {
  if (kind !== 'message' && kind !== 'function_call' && kind !== 'function_call_result' && kind !== 'reasoning')
    return decoded as Record<string, unknown>;
  const item: Record<string, unknown> = isPlainObject(decoded) ? decoded : { ...(decoded as object) };
  switch (kind) {
    case 'message': {
      const content = 'content' in item ? refill(message, item.content, 'text') : only(message, 'text').text;
      item.role = message.role;
      item.content = content;
      return item;
    }
    case 'function_call': {
      const { callId, name, arguments: args } = only(message, 'function-call');
      item.callId = callId;
      item.name = name;
      item.arguments = args;
      return item;
    }
    case 'function_call_result': {
      const { callId, name, result } = only(message, 'function-result');
      item.callId = callId;
      item.name = name;
      item.output = decode(result);
      return item;
    }
    case 'reasoning':
      item.content = refill(message, item.content, 'reasoning');
      return item;
  }
}

function mismatch(message: Message, what: string): SessionStateError {
  return new SessionStateError(
    `$.metadata.${AGENTS_ITEM_KEY}`,
    `of message ${message.id} does not match its contents (${what}); the message was changed after it was stored`,
  );
}

/** The message's one content, of type `type`. */
function only<T extends Content['type']>(message: Message, type: T): Extract<Content, { type: T }> {
  const [content, ...more] = message.contents;
  if (content?.type !== type || more.length > 0) throw mismatch(message, `expected one ${type} content`);
  return content as Extract<Content, { type: T }>;
}

/**
 * Puts the contents' texts back into the parts that lost them, in order: text parts for `text`,
 * every part for `reasoning`. `parts` is decoded, so its plain objects are new and written in place.
 */
function refill(message: Message, parts: unknown, type: 'text' | 'reasoning'): unknown[] {
  if (!Array.isArray(parts)) throw mismatch(message, 'content is not an array');
  const { contents } = message;
  for (const c of contents) if (c.type !== type) throw mismatch(message, `a content that is not ${type}`);
  let next = 0;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] as Record<string, unknown>;
    if (type !== 'reasoning' && !TEXT_PARTS.has(part.type)) continue;
    const text = (contents[next++] as { text?: string } | undefined)?.text;
    if (isPlainObject(part)) part.text = text;
    else parts[i] = { ...(part as object), text };
  }
  if (next !== contents.length) throw mismatch(message, `${contents.length} ${type} contents for ${next} parts`);
  return parts;
}

function fromContents(message: Message): AgentInputItem[] {
  const items: AgentInputItem[] = [];
  if (message.role === 'system') {
    const text = Message.text(message);
    return text ? [{ role: 'system', content: text }] : [];
  }
  if (message.role === 'user') {
    const parts: Extract<AgentInputItem, { role: 'user' }>['content'] = [];
    for (const c of message.contents) {
      if (c.type === 'text') parts.push({ type: 'input_text', text: c.text });
      else if (c.type === 'data') {
        const url = c.uri ?? `data:${c.mediaType};base64,${c.data}`;
        parts.push(
          c.mediaType.startsWith('image/')
            ? { type: 'input_image', image: url }
            : { type: 'input_file', file: url, ...(c.name ? { filename: c.name } : {}) },
        );
      }
    }
    if (parts.length === 0) return [];
    const [first] = parts;
    return [{ role: 'user', content: parts.length === 1 && first?.type === 'input_text' ? first.text : parts }];
  }
  let texts: { type: 'output_text'; text: string }[] = [];
  const flush = () => {
    if (texts.length) items.push({ type: 'message', role: 'assistant', status: 'completed', content: texts });
    texts = [];
  };
  for (const c of message.contents) {
    if (c.type === 'text') {
      texts.push({ type: 'output_text', text: c.text });
      continue;
    }
    flush();
    if (c.type === 'reasoning') items.push({ type: 'reasoning', content: [{ type: 'input_text', text: c.text }] });
    else if (c.type === 'function-call')
      items.push({ type: 'function_call', callId: c.callId, name: c.name, arguments: c.arguments, status: 'completed' });
    else if (c.type === 'function-result')
      items.push({
        type: 'function_call_result',
        callId: c.callId,
        name: c.name ?? '',
        status: 'completed',
        output: typeof c.result === 'string' ? c.result : JSON.stringify(c.result),
      });
  }
  flush();
  return items;
}

/** Tags of `encode`: an object with exactly one of these keys is a tagged value. */
const BYTES = '$bytes';
const ESCAPED = '$object';

/**
 * `value` as plain JSON: `Uint8Array`s become `{ $bytes: base64 }`, an object that would read as a
 * tag (its only key `$bytes` or `$object`) is wrapped as `{ $object: ... }`, and properties whose
 * value is `undefined` are left out (as JSON does). Anything else that is not JSON is kept as it is,
 * for the history provider's check to refuse with the path.
 */
export function encode(value: unknown): JsonValue {
  if (value instanceof Uint8Array) return { [BYTES]: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64') };
  if (Array.isArray(value)) return value.map(encode);
  if (!isPlainObject(value)) return value as JsonValue;
  const out: JsonObject = {};
  let count = 0;
  let only: string | undefined;
  for (const key in value) {
    if (!Object.hasOwn(value, key) || value[key] === undefined) continue;
    setOwn(out, key, encode(value[key]));
    count++;
    only = key;
  }
  return count === 1 && (only === BYTES || only === ESCAPED) ? { [ESCAPED]: out } : out;
}

/** The inverse of `encode`: always a new array or plain object where `value` is one. */
function decode(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) out[i] = decode(value[i]);
    return out;
  }
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  let count = 0;
  let only = '';
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    setOwn(out, key, decode(value[key]));
    count++;
    only = key;
  }
  if (count !== 1) return out;
  // A tagged value: bytes, or an escaped object whose own keys are decoded (the object itself is not a tag).
  if (only === BYTES && typeof value[BYTES] === 'string') return new Uint8Array(Buffer.from(value[BYTES], 'base64'));
  const escaped = value[ESCAPED];
  if (only !== ESCAPED || !isPlainObject(escaped)) return out;
  const unwrapped: Record<string, unknown> = {};
  for (const key of Object.keys(escaped)) setOwn(unwrapped, key, decode(escaped[key]));
  return unwrapped;
}

/** `target[key] = value` as an own property, also for the key `__proto__` (the only key a plain assignment would not own). */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
