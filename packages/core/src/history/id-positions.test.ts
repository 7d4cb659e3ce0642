import { describe, expect, it } from 'vitest';
import { IdPositions } from './id-positions.js';

const entry = (id: string) => ({ id });

/** The position of the first entry with `id`, read the slow way. */
const firstOf = (list: { id: string }[], id: string) => list.findIndex((e) => e.id === id);

describe('IdPositions', () => {
  it('finds the first entry of each id, and nothing for an id not stored', () => {
    const list = ['a', 'b', 'a', 'c'].map(entry);
    const index = new IdPositions();
    index.indexFrom(list, 0);
    expect(['a', 'b', 'c', 'd'].map((id) => index.find(list, id))).toEqual([0, 1, 3, -1]);
  });

  it('needs no update for a list cut short: the ids past its end are not found', () => {
    const list = ['a', 'b', 'c', 'd'].map(entry);
    const index = new IdPositions();
    index.indexFrom(list, 0);
    list.length = 2;
    index.length = 2;
    expect(index.find(list, 'c')).toBe(-1);
    list.push(entry('x'), entry('c'));
    index.indexFrom(list, 2);
    expect(['c', 'x', 'd'].map((id) => index.find(list, id))).toEqual([3, 2, -1]);
  });

  it('indexes again what a splice moved', () => {
    const list = ['a', 'b', 'c', 'd', 'e'].map(entry);
    const index = new IdPositions();
    index.indexFrom(list, 0);
    list.splice(1, 2, entry('n'));
    index.indexFrom(list, 1);
    expect(['a', 'n', 'd', 'e', 'b', 'c'].map((id) => index.find(list, id))).toEqual([0, 1, 2, 3, -1, -1]);
  });

  it('agrees with a scan of the list through appends, cuts, splices and rebuilds (random operations, seeded)', () => {
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const list: { id: string }[] = [];
    const index = new IdPositions();
    for (let step = 0; step < 3000; step++) {
      const op = random(10);
      if (op < 6) {
        // An id from a small pool, so some repeat.
        list.push(entry(`id-${random(400)}`));
        index.indexFrom(list, list.length - 1);
      } else if (op < 8) {
        list.length = Math.max(0, list.length - random(5));
        index.length = Math.min(index.length, list.length);
      } else {
        const at = random(list.length + 1);
        list.splice(at, random(3), ...Array.from({ length: random(3) }, () => entry(`id-${random(400)}`)));
        index.indexFrom(list, at);
      }
      const probe = `id-${random(400)}`;
      expect(index.find(list, probe), `step ${step}`).toBe(firstOf(list, probe));
    }
  });

  it('hashes an id of any length and any code units', () => {
    const ids = ['x'.repeat(4096), '\u{1F600}', '\uD800', '', 'é'];
    const list = ids.map(entry);
    const index = new IdPositions(1);
    index.indexFrom(list, 0);
    expect(ids.map((id) => index.find(list, id))).toEqual([0, 1, 2, 3, 4]);
  });
});
