import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatBytes, jsonByteLength } from './json-bytes.js';

const exact = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

describe('jsonByteLength', () => {
  it('is the UTF-8 length of JSON.stringify for any JSON value (escapes, astral and lone surrogates)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(jsonByteLength(value)).toBe(exact(value));
      }),
      { numRuns: 500 },
    );
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }), (a, b) => {
        const value = { [a]: [a, b, { b }], n: -1.5e-7, t: true, z: null };
        expect(jsonByteLength(value)).toBe(exact(value));
      }),
    );
    const odd = { s: '"\\\u0000\u001f\b\t\n\f\r\ud83d\ude00\ud800x\udc00é€', a: [undefined, () => 1], skip: undefined, k: 1 };
    expect(jsonByteLength(odd)).toBe(exact(odd));
  });

  it('stops past max with a lower bound above it, without reading the rest', () => {
    const big = 'x'.repeat(50_000_000);
    const value = { contents: [{ type: 'text', text: big }] };
    const measured = jsonByteLength(value, 1000);
    expect(measured).toBeGreaterThan(1000);
    expect(measured).toBeLessThanOrEqual(exact(value));
    expect(jsonByteLength({ a: 'é'.repeat(600) }, 1000)).toBeGreaterThan(1000);
    expect(jsonByteLength({ a: 'é'.repeat(400) }, 1000)).toBe(exact({ a: 'é'.repeat(400) }));
    expect(jsonByteLength(['ab', 'cd'], exact(['ab', 'cd']))).toBe(exact(['ab', 'cd']));
  });

  it('formats sizes for messages', () => {
    expect(formatBytes(8 * 1024 * 1024)).toBe('8 MiB');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(12)).toBe('12 bytes');
  });
});
