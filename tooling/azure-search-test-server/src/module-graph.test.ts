import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const SRC = new URL('./', import.meta.url);

/** The relative imports of each source file of the server (tests left out), type imports included. */
function importGraph(): Map<string, string[]> {
  const files = readdirSync(SRC).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
  return new Map(
    files.map((file) => {
      const text = readFileSync(new URL(file, SRC), 'utf8');
      return [file, [...text.matchAll(/from '\.\/([^']+)\.js'/g)].map((m) => `${m[1]}.ts`)];
    }),
  );
}

/** Every import cycle, as `a.ts -> b.ts -> a.ts`. */
function cycles(graph: Map<string, string[]>): string[] {
  const found: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string): void => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next].join(' -> '));
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return found;
}

describe('module graph', () => {
  it('has no import cycle, type imports included (shared types live in the leaf types.ts)', () => {
    const graph = importGraph();
    expect(graph.size).toBeGreaterThan(8);
    expect(cycles(graph)).toEqual([]);
    expect(graph.get('types.ts')!.filter((f) => f !== 'json.ts')).toEqual([]);
  });
});
