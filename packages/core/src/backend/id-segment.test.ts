import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../errors.js';
import { encodeIdSegment } from './id-segment.js';

describe('encodeIdSegment', () => {
  it('keeps safe characters and escapes everything else per UTF-8 byte', () => {
    expect(encodeIdSegment('user-42_a.b')).toBe('user-42_a.b');
    expect(encodeIdSegment('a:b{c}*')).toBe('a%3Ab%7Bc%7D%2A');
    expect(encodeIdSegment('é')).toBe('%C3%A9');
    expect(encodeIdSegment('\uD800x')).toBe('%uD800x');
    expect(encodeIdSegment('a_b', { escape: '_', keep: /[A-Za-z0-9.-]/ })).toBe('a_5Fb');
    expect(() => encodeIdSegment('x', { escape: '-' })).toThrow(ConfigurationError);
  });

  it('is injective and its output holds only kept characters and escapes', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), (a, b) => {
        const ea = encodeIdSegment(a);
        expect(ea).toMatch(/^[A-Za-z0-9._%-]*$/);
        if (a !== b) expect(ea).not.toBe(encodeIdSegment(b));
      }),
    );
  });
});
