/**
 * The largest item Cosmos DB stores: 2 MB (2,097,152 bytes) of UTF-8 JSON, system properties
 * (`_rid`, `_etag`, `_ts`, ...) included. A write of a larger item fails with 413.
 */
export const MAX_ITEM_BYTES = 2 * 1024 * 1024;

/**
 * Room kept below `MAX_ITEM_BYTES` for what surrounds the value measured: the system properties
 * Cosmos DB adds to every item, and the item's own fields around a stored message (ids, keys, sequence).
 */
const RESERVED_BYTES = 2048;

/** The most a value this package writes as (or into) one item may weigh: `MAX_ITEM_BYTES` less `RESERVED_BYTES`. */
export const MAX_WRITTEN_ITEM_BYTES = MAX_ITEM_BYTES - RESERVED_BYTES;

/**
 * What is wrong with a value of `bytes` bytes of JSON (`what` names it) that goes into one item,
 * or undefined when it fits in a Cosmos DB item.
 */
export function itemTooLarge(what: string, bytes: number): string | undefined {
  if (bytes <= MAX_WRITTEN_ITEM_BYTES) return undefined;
  return `${what} is ${bytes} bytes of JSON, over Cosmos DB's item size limit (2 MB: ${MAX_ITEM_BYTES} bytes, of which ${RESERVED_BYTES} are kept for the item's own and system properties); nothing was written. Store large data by uri instead`;
}

/**
 * The deepest nesting Cosmos DB takes in an item (objects and arrays; the item itself is level
 * 1). A message is stored one level down, in the item's `message` field.
 */
export const MAX_ITEM_DEPTH = 128;

/**
 * How deep objects and arrays nest in `value` (a scalar is 0, `{}` is 1, `{ a: [] }` is 2),
 * counted without recursion and without looking further than `limit + 1` levels.
 */
export function nestingDepth(value: unknown, limit = MAX_ITEM_DEPTH): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    deepest = Math.max(deepest, depth);
    if (depth > limit) return deepest;
    for (const child of Array.isArray(node) ? node : Object.values(node)) stack.push([child, depth + 1]);
  }
  return deepest;
}
