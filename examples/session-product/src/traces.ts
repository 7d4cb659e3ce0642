import type { Redis } from 'ioredis';

/** A key that mentions one of the strings looked for, in its name or its value. */
export interface Trace {
  key: string;
  /** The strings found in it. */
  found: string[];
}

/**
 * Every key matching `pattern` (walked with `SCAN`) whose name or value contains one of `needles`:
 * strings, hashes, lists, sets and sorted sets are read whole. Resolves to the traces and how many
 * keys were looked at.
 */
export async function findTraces(redis: Redis, pattern: string, needles: readonly string[]): Promise<{ traces: Trace[]; scanned: number }> {
  const traces: Trace[] = [];
  let scanned = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
    cursor = next;
    for (const key of keys) {
      scanned++;
      const text = `${key}\n${await readKey(redis, key)}`;
      const found = needles.filter((needle) => text.includes(needle));
      if (found.length > 0) traces.push({ key, found });
    }
  } while (cursor !== '0');
  return { traces, scanned };
}

/** The whole value of a key as text (empty when it expired meanwhile). */
async function readKey(redis: Redis, key: string): Promise<string> {
  switch (await redis.type(key)) {
    case 'string':
      return (await redis.get(key)) ?? '';
    case 'hash':
      return JSON.stringify(await redis.hgetall(key));
    case 'list':
      return JSON.stringify(await redis.lrange(key, 0, -1));
    case 'set':
      return JSON.stringify(await redis.smembers(key));
    case 'zset':
      return JSON.stringify(await redis.zrange(key, 0, -1, 'WITHSCORES'));
    case 'none':
      return '';
    default:
      throw new Error(`Key ${key} holds a ${await redis.type(key)}, which this check does not read.`);
  }
}
