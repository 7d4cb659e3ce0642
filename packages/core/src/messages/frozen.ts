import type { Message, SourceType } from '../contracts/message.js';

/** Whether `value` and everything below it is frozen (a primitive is). */
export function isDeepFrozen(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return true;
  if (!Object.isFrozen(value)) return false;
  for (const key in value) if (!isDeepFrozen((value as Record<string, unknown>)[key])) return false;
  return true;
}

/**
 * A deep-frozen copy of a plain JSON value that shares what cannot change: strings, and every
 * subtree that is already deep-frozen, are reused rather than copied. Nothing a caller later does
 * to `value` reaches the copy.
 */
export function frozenCopy<T>(value: T): T {
  if (typeof value !== 'object' || value === null || isDeepFrozen(value)) return value;
  return copy(value) as T;
}

function copy(value: object): object {
  if (Array.isArray(value)) {
    const out = value.slice();
    for (let i = 0; i < out.length; i++) out[i] = frozenCopy(out[i]);
    return Object.freeze(out);
  }
  const source = value as Record<string, unknown>;
  // The common text content as a literal of its two fields: the smallest object that holds it.
  if (isTextContent(source)) return Object.freeze({ type: 'text', text: source.text });
  // Built key by key (in order), not by spreading: V8 turns a frozen spread copy into a dictionary
  // several times its size.
  const out: Record<string, unknown> = {};
  for (const key in source) set(out, key, frozenCopy(source[key]));
  return Object.freeze(out);
}

/** Whether `value` is exactly `{ type: 'text', text }`, in that order. */
function isTextContent(value: Record<string, unknown>): boolean {
  if (value.type !== 'text' || typeof value.text !== 'string') return false;
  let i = 0;
  for (const key in value) if (key !== (i++ === 0 ? 'type' : 'text') || i > 2) return false;
  return i === 2;
}

function set(target: Record<string, unknown>, key: string, value: unknown): void {
  // Assigning `__proto__` would set the prototype: define it as the own data key it is in JSON.
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/** Metadata objects holding nothing but an attribution, by source type then source id, shared by every message with that attribution. */
const attributions = new Map<string, Map<string, Readonly<Record<string, unknown>>>>();
/** Bounds the table of shared attributions: source ids are few, but nothing stops a caller minting many. */
const MAX_SHARED_ATTRIBUTIONS = 1024;
let sharedAttributions = 0;

/** The shared frozen `{ ctx: { sourceId, sourceType } }` metadata, or a fresh one past the bound. */
export function attributionMetadata(sourceId: string, sourceType: string): Readonly<Record<string, unknown>> {
  let byId = attributions.get(sourceType);
  let metadata = byId?.get(sourceId);
  if (!metadata) {
    metadata = Object.freeze({ ctx: Object.freeze({ sourceId, sourceType }) });
    if (sharedAttributions < MAX_SHARED_ATTRIBUTIONS) {
      if (!byId) attributions.set(sourceType, (byId = new Map()));
      byId.set(sourceId, metadata);
      sharedAttributions++;
    }
  }
  return metadata;
}

/** The attribution `metadata` holds when it holds nothing else, as `[sourceId, sourceType]`. */
function onlyAttribution(metadata: unknown): [string, string] | undefined {
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) return undefined;
  let ctx: unknown;
  for (const key in metadata) {
    if (key !== 'ctx') return undefined;
    ctx = (metadata as Record<string, unknown>).ctx;
  }
  if (typeof ctx !== 'object' || ctx === null || Array.isArray(ctx)) return undefined;
  let keys = 0;
  for (const key in ctx) {
    if (key !== 'sourceId' && key !== 'sourceType') return undefined;
    keys++;
  }
  const { sourceId, sourceType } = ctx as Record<string, unknown>;
  return keys === 2 && typeof sourceId === 'string' && typeof sourceType === 'string' ? [sourceId, sourceType] : undefined;
}

/**
 * A deep-frozen copy of a well-formed message for storage: strings and frozen parts are shared
 * (see `frozenCopy`), and metadata that holds only an attribution is the shared object for it.
 */
export function frozenMessage(message: Message): Message {
  if (isDeepFrozen(message)) return message;
  const copyField = (key: string, child: unknown): unknown => {
    if (typeof child !== 'object' || child === null) return child;
    const attribution = key === 'metadata' ? onlyAttribution(child) : undefined;
    return attribution ? attributionMetadata(attribution[0], attribution[1]) : frozenCopy(child);
  };
  const source = message as unknown as Record<string, unknown>;
  // The shape runs store, as a literal of exactly its fields (see `copy`).
  if (hasKeys(source, STORED_SHAPE)) {
    return Object.freeze({
      id: message.id,
      role: message.role,
      contents: copyField('contents', message.contents),
      createdAt: message.createdAt,
      metadata: copyField('metadata', message.metadata),
    }) as Message;
  }
  const out: Record<string, unknown> = {};
  for (const key in source) set(out, key, copyField(key, source[key]));
  return Object.freeze(out) as unknown as Message;
}

/**
 * Deep-freezes a well-formed message the caller owns alone (one just parsed from JSON), in place,
 * without copying it: metadata that holds only an attribution becomes the shared object for it
 * (see `frozenMessage`), every other object below the message is frozen as it is. V8 keeps a
 * frozen object's fast properties, so the message costs what its parsed form did. Returns `message`
 * (a frozen copy instead when `message` itself is already frozen).
 */
export function freezeMessageInPlace(message: Message): Message {
  // A frozen message (not one just parsed) cannot take the shared metadata: copied instead.
  if (Object.isFrozen(message)) return frozenMessage(message);
  const attribution = onlyAttribution(message.metadata);
  if (attribution) (message as { metadata?: unknown }).metadata = attributionMetadata(attribution[0], attribution[1]);
  return deepFreeze(message);
}

/** Freezes `value` and every object below it, in place (a frozen object's children too). */
function deepFreeze<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) for (let i = 0; i < value.length; i++) deepFreeze(value[i]);
  else for (const key in value) deepFreeze((value as Record<string, unknown>)[key]);
  return Object.isFrozen(value) ? value : Object.freeze(value);
}

const STORED_SHAPE = ['id', 'role', 'contents', 'createdAt', 'metadata'];

/** Whether `value`'s own keys are exactly `keys`, in that order. */
function hasKeys(value: Record<string, unknown>, keys: readonly string[]): boolean {
  let i = 0;
  for (const key in value) if (key !== keys[i++]) return false;
  return i === keys.length;
}

/**
 * `message` attributed to `sourceId`, deep-frozen: `message` itself when it already is both, else
 * a frozen copy (the parts of a deep-frozen message are shared). Other `metadata.ctx` fields are kept.
 */
export function frozenWithSource(message: Message, sourceId: string, sourceType: SourceType): Message {
  if (hasFrozenSource(message, sourceId, sourceType)) return message;
  const metadata = message.metadata;
  const ctx = metadata?.ctx;
  const onlyCtx = metadata === undefined || onlyAttribution(metadata) !== undefined;
  return frozenMessage({
    ...message,
    metadata: onlyCtx
      ? (attributionMetadata(sourceId, sourceType) as Message['metadata'])
      : {
          ...metadata,
          ctx: typeof ctx === 'object' && ctx !== null && !Array.isArray(ctx) ? { ...ctx, sourceId, sourceType } : { sourceId, sourceType },
        },
  });
}

/**
 * `frozenWithSource` of a message the caller knows to be deep-frozen (a stored one): its parts are
 * shared without being walked again, so the copy costs its top-level fields only.
 */
export function storedWithSource(message: Message, sourceId: string, sourceType: SourceType): Message {
  if (hasFrozenSource(message, sourceId, sourceType)) return message;
  if (message.metadata !== undefined && onlyAttribution(message.metadata) === undefined)
    return frozenWithSource(message, sourceId, sourceType);
  const metadata = attributionMetadata(sourceId, sourceType);
  const source = message as unknown as Record<string, unknown>;
  if (hasKeys(source, STORED_SHAPE)) {
    return Object.freeze({
      id: message.id,
      role: message.role,
      contents: message.contents,
      createdAt: message.createdAt,
      metadata,
    }) as Message;
  }
  const out: Record<string, unknown> = {};
  for (const key in source) set(out, key, key === 'metadata' ? metadata : source[key]);
  if (!('metadata' in out)) out.metadata = metadata;
  return Object.freeze(out) as unknown as Message;
}

/** Whether `message` is frozen down to its attribution and attributed to `sourceId` as `sourceType`. */
export function hasFrozenSource(message: Message, sourceId: string, sourceType: SourceType): boolean {
  const metadata = message.metadata;
  const ctx = metadata?.ctx as Record<string, unknown> | undefined;
  // The attribution first: it rules out most messages with two property reads.
  if (typeof ctx !== 'object' || ctx === null || ctx.sourceId !== sourceId || ctx.sourceType !== sourceType) return false;
  return Object.isFrozen(message) && Object.isFrozen(metadata) && Object.isFrozen(ctx);
}

/** Lists whose every message `hasFrozenSource` for the attribution they are marked with. */
const attributedLists = new WeakMap<readonly Message[], string>();

/** Marks a list the caller made, and will not change, as holding only messages frozen with this attribution. */
export function markAttributed<T extends readonly Message[]>(list: T, sourceId: string, sourceType: SourceType): T {
  attributedLists.set(list, `${sourceType}\u0000${sourceId}`);
  return list;
}

/** Whether `list` was marked with this attribution (`markAttributed`), so its messages need no check. */
export function isAttributed(list: readonly Message[], sourceId: string, sourceType: SourceType): boolean {
  return attributedLists.get(list) === `${sourceType}\u0000${sourceId}`;
}
