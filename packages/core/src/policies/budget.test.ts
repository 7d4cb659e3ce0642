import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createCharacterTokenizer } from '../tokens/character-tokenizer.js';
import { defineTool } from '../tools/define-tool.js';
import { countToolTokens, fitPrefix, fitToBudget, priorityOf } from './budget.js';

describe('fitToBudget', () => {
  it('keeps the most valuable items that fit and drops the rest, lowest value first', () => {
    const items = [
      { id: 'a', tokens: 5, value: 1 },
      { id: 'b', tokens: 5, value: 9 },
      { id: 'c', tokens: 5, value: 5 },
      { id: 'd', tokens: 5, value: 0 },
    ];
    const fit = fitToBudget(items, { maxTokens: 12, tokensOf: (i) => i.tokens, priority: (i) => i.value });
    expect(fit.kept.map((i) => i.id)).toEqual(['b', 'c']); // original order
    expect(fit.dropped.map((i) => i.id)).toEqual(['a', 'd']);
    expect(fit.tokens).toBe(10);
  });

  it('ranks by position when no value is given: the earliest items are kept', () => {
    const fit = fitToBudget([3, 3, 3, 3], { maxTokens: 7, tokensOf: (t) => t });
    expect(fit.kept).toHaveLength(2);
    expect(fit.dropped).toHaveLength(2);
    expect(fitToBudget(['x', 'yy', 'z'], { maxTokens: 2, tokensOf: (s) => s.length }).kept).toEqual(['x']); // 'yy' stops 'z'
  });

  it('property: the kept items fit, are exactly the top of the ranking, and the next one would not fit', () => {
    const item = fc.record({ tokens: fc.nat(50), value: fc.integer({ min: -5, max: 5 }) });
    fc.assert(
      fc.property(fc.array(item, { maxLength: 30 }), fc.nat(300), (items, maxTokens) => {
        const fit = fitToBudget(items, { maxTokens, tokensOf: (i) => i.tokens, priority: (i) => i.value });
        expect(fit.tokens).toBeLessThanOrEqual(maxTokens);
        expect(fit.tokens).toBe(fit.kept.reduce((s, i) => s + i.tokens, 0));
        expect(fit.kept.length + fit.dropped.length).toBe(items.length);
        const ranked = items.map((it, index) => ({ it, index })).sort((a, b) => b.it.value - a.it.value || a.index - b.index);
        const keptSet = new Set(fit.kept);
        const k = fit.kept.length;
        expect(ranked.slice(0, k).every((r) => keptSet.has(r.it))).toBe(true);
        if (k < items.length) expect(fit.tokens + ranked[k]!.it.tokens).toBeGreaterThan(maxTokens);
        // no dropped item is worth more than a kept one
        const minKept = Math.min(...fit.kept.map((i) => i.value));
        for (const d of fit.dropped) expect(d.value).toBeLessThanOrEqual(minKept);
      }),
    );
  });
});

describe('fitPrefix', () => {
  it('finds the longest prefix whose whole rendering fits', () => {
    const render = (p: readonly string[]) => `header\n${p.join('\n')}`.length;
    expect(fitPrefix(['aaaa', 'bbbb', 'cccc'], 16, render)).toBe(2); // "header\naaaa\nbbbb" = 16
    expect(fitPrefix(['aaaa'], 5, render)).toBe(0);
  });
});

describe('countToolTokens and priorityOf', () => {
  it('counts a tool by the JSON of its name, description and parameters', () => {
    const tool = defineTool({ name: 'get_weather', description: 'Weather for a city.', parameters: { type: 'object' }, execute: () => 1 });
    const json = JSON.stringify({ name: 'get_weather', description: 'Weather for a city.', parameters: { type: 'object' } });
    expect(countToolTokens(tool, createCharacterTokenizer({ charsPerToken: 1 }))).toBe(json.length);
  });

  it('reads a finite numeric metadata.priority only', () => {
    expect(priorityOf({ metadata: { priority: 0.5 } })).toBe(0.5);
    expect(priorityOf({ metadata: { priority: 'high' } })).toBeUndefined();
    expect(priorityOf({})).toBeUndefined();
  });
});
