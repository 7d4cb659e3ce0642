import { afterEach, describe, expect, it, vi } from 'vitest';
import { isoNow } from './iso-now.js';

describe('isoNow', () => {
  afterEach(() => vi.restoreAllMocks());

  it('gives what toISOString gives, at every millisecond of a second and across seconds, days and years', () => {
    const times = [0, 5, 45, 999, 1000, 1001, 59_999, 60_000, -1, 1_764_000_000_007, 1_764_000_000_099, 1_764_000_000_100];
    for (let ms = 1_764_000_000_000; ms < 1_764_000_001_000; ms++) times.push(ms);
    times.push(Date.UTC(2026, 11, 31, 23, 59, 59, 999), Date.UTC(2027, 0, 1), 253_402_300_799_999);
    const now = vi.spyOn(Date, 'now');
    for (const ms of times) {
      now.mockReturnValue(ms);
      expect(isoNow()).toBe(new Date(ms).toISOString());
    }
  });

  it('tells the time now, not the time of an earlier call', () => {
    const now = vi.spyOn(Date, 'now').mockReturnValue(1_764_000_000_123);
    expect(isoNow()).toBe('2025-11-24T16:00:00.123Z');
    now.mockReturnValue(1_764_000_000_124);
    expect(isoNow()).toBe('2025-11-24T16:00:00.124Z');
    now.mockReturnValue(1_764_000_001_000);
    expect(isoNow()).toBe('2025-11-24T16:00:01.000Z');
  });
});
