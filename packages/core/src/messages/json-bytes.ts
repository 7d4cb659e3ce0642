/**
 * The UTF-8 byte length of `JSON.stringify(value)`, counted without building the string. Counting
 * stops as soon as the length passes `max`: the result is then a lower bound above `max`, not the
 * exact length, so measuring a 200 MB string against an 8 MB limit reads at most 8 MB of it (and a
 * string longer than the rest of the budget is not read at all). `value` must be plain JSON (as
 * `Message.parse` or `findNonJson` check): `undefined`, functions and symbols count as
 * `JSON.stringify` writes them (left out of objects, `null` in arrays); `toJSON` methods are not called.
 */
export function jsonByteLength(value: unknown, max = Number.POSITIVE_INFINITY): number {
  let total = 0;
  // Returns false once the count has passed `max`.
  const visit = (node: unknown): boolean => {
    switch (typeof node) {
      case 'string':
        total += stringBytes(node, max - total);
        break;
      case 'number':
        total += Number.isFinite(node) ? String(node).length : 4;
        break;
      case 'boolean':
        total += node ? 4 : 5;
        break;
      case 'object': {
        if (node === null) {
          total += 4;
          break;
        }
        total += 2;
        if (Array.isArray(node)) {
          for (let i = 0; i < node.length; i++) {
            if (i > 0) total += 1;
            const item: unknown = node[i];
            if (isSkipped(item)) total += 4;
            else if (!visit(item)) return false;
            if (total > max) return false;
          }
          break;
        }
        let first = true;
        for (const key of Object.keys(node)) {
          const child = (node as Record<string, unknown>)[key];
          if (isSkipped(child)) continue;
          if (!first) total += 1;
          first = false;
          total += stringBytes(key, max - total) + 1;
          if (total > max || !visit(child)) return false;
        }
        break;
      }
      default:
        total += 4; // what JSON.stringify makes of a lone undefined, function or symbol is no JSON at all; count it as null
    }
    return total <= max;
  };
  visit(value);
  return total;
}

function isSkipped(value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol';
}

/**
 * Bytes of a string as JSON (quotes and escapes included), UTF-8 encoded. Stops once the count
 * passes `budget` (each UTF-16 unit is at least one byte, so a string longer than the budget is
 * not read).
 */
function stringBytes(text: string, budget: number): number {
  if (text.length + 2 > budget) return text.length + 2;
  let bytes = 2;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) {
      if (c >= 0x20) bytes += c === 0x22 || c === 0x5c ? 2 : 1;
      else bytes += c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d ? 2 : 6;
    } else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 6; // a lone surrogate is written as \udxxx
    } else if (c >= 0xdc00 && c <= 0xdfff) bytes += 6;
    else bytes += 3;
    if (bytes > budget) return bytes;
  }
  return bytes;
}

/** `bytes` for people: `8 MiB`, `1.5 MiB`, `512 KiB`, `300 bytes`. */
export function formatBytes(bytes: number): string {
  const units: [number, string][] = [
    [1024 ** 3, 'GiB'],
    [1024 ** 2, 'MiB'],
    [1024, 'KiB'],
  ];
  for (const [size, unit] of units) {
    if (bytes >= size) return `${Number((bytes / size).toFixed(1))} ${unit}`;
  }
  return `${bytes} bytes`;
}
