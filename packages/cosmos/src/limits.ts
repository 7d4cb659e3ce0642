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
