import { networkInterfaces } from 'node:os';
import { describe, expect, it } from 'vitest';
import { createHostCheck } from './host-check.js';

/** Whether a request with these headers is answered by an inspector listening on `host`, port 4777. */
function answers(host: string, headers: { host?: string; origin?: string }, allowedHosts: string[] = []) {
  return createHostCheck({ host, port: 4777, allowedHosts, url: 'http://listening/' }).refusal(headers) === undefined;
}

describe('createHostCheck', () => {
  it('answers a host the user named to listen on (allowRemote) under that name and port only', () => {
    expect(answers('192.168.1.10', { host: '192.168.1.10:4777' })).toBe(true);
    expect(answers('192.168.1.10', { host: '192.168.1.10:4777', origin: 'http://192.168.1.10:4777' })).toBe(true);
    expect(answers('192.168.1.10', { host: '192.168.1.10:4778' })).toBe(false);
    expect(answers('192.168.1.10', { host: 'evil.test:4777' })).toBe(false);
    // Not listening on loopback: a loopback name is not its address.
    expect(answers('192.168.1.10', { host: 'localhost:4777' })).toBe(false);
    expect(answers('box.lan', { host: 'BOX.lan.:4777' })).toBe(true);
    expect(answers('box.lan', { host: 'box.lan.evil.test:4777' })).toBe(false);
  });

  it("answers a wildcard address under loopback names and the machine's own addresses", () => {
    const own = Object.values(networkInterfaces())
      .flatMap((list) => list ?? [])
      .map((a) => (a.family === 'IPv6' ? `[${a.address.replace(/%.*$/, '')}]` : a.address));
    expect(own.length).toBeGreaterThan(0);
    for (const wildcard of ['0.0.0.0', '::']) {
      for (const name of ['localhost', '127.0.0.1', '[::1]', ...own]) expect(answers(wildcard, { host: `${name}:4777` }), name).toBe(true);
      expect(answers(wildcard, { host: 'evil.test:4777' })).toBe(false);
      expect(answers(wildcard, { host: '127.0.0.1:4777', origin: 'http://evil.test:4777' })).toBe(false);
    }
  });

  it('refuses a request without a Host header, and reads an IPv6 host and a default port', () => {
    const check = createHostCheck({ host: '::1', port: 80, allowedHosts: [], url: 'http://[::1]:80/' });
    expect(check.refusal({})).toBe('no Host header; open http://[::1]:80/, or add the name to allowedHosts (behind a proxy)');
    expect(check.refusal({ host: '[::1]' })).toBeUndefined();
    expect(check.refusal({ host: 'localhost', origin: 'http://localhost' })).toBeUndefined();
    expect(check.refusal({ host: '::1:80' })).toMatch(/^Host "::1:80" is not a host name; open/);
  });
});
