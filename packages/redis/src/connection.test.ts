import { BackendUnavailableError, ConfigurationError, Message } from '@ctx/core';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisHistoryProvider } from './redis-history-provider.js';
import { RedisSessionStore } from './redis-session-store.js';

const lazy = () => new Redis({ lazyConnect: true });
const state = {};

describe('connection options', () => {
  it.each([
    ['no connection at all', {}],
    ['client and url', { client: lazy(), url: 'redis://127.0.0.1:1' }],
    ['url and nodes', { url: 'redis://127.0.0.1:1', nodes: [{ host: '127.0.0.1', port: 1 }] }],
    ['a client that is not ioredis', { client: {} as Redis }],
    ['a url of another scheme', { url: 'http://127.0.0.1:6379' }],
    ['an empty node list', { nodes: [] }],
    ['a prefix with a brace', { client: lazy(), prefix: 'app{1}' }],
    ['a prefix with a glob character', { client: lazy(), prefix: 'app*' }],
    ['a prefix with a space', { client: lazy(), prefix: 'my app' }],
    ['an empty prefix', { client: lazy(), prefix: '' }],
    ['timeoutMs 0', { client: lazy(), timeoutMs: 0 }],
  ])('rejects %s with ConfigurationError', (_, options) => {
    expect(() => new RedisHistoryProvider(options)).toThrow(ConfigurationError);
  });

  it('the session store checks its connection options the same way', () => {
    expect(() => new RedisSessionStore({})).toThrow(ConfigurationError);
    expect(() => new RedisSessionStore({ client: lazy(), prefix: 'a}' })).toThrow(ConfigurationError);
  });

  it('a bad timeoutMs names the owner, the option and the value', () => {
    expect(() => new RedisSessionStore({ client: lazy(), timeoutMs: -5 })).toThrow(
      'RedisSessionStore: timeoutMs must be a positive number, got -5.',
    );
    expect(() => new RedisHistoryProvider({ client: lazy(), timeoutMs: Number.NaN })).toThrow(
      'RedisHistoryProvider: timeoutMs must be a positive number, got NaN.',
    );
  });
});

describe('the deadline and abort of every call', () => {
  // A client that never connects and keeps every command queued: only the package's deadline ends a call.
  const silent = new Redis({ host: '127.0.0.1', port: 1, lazyConnect: true, maxRetriesPerRequest: null, retryStrategy: () => 20 });
  silent.on('error', () => {});
  afterAll(() => silent.disconnect());

  it('a call Redis never answers fails with BackendUnavailableError at timeoutMs, naming the operation, session and key', async () => {
    const provider = new RedisHistoryProvider({ client: silent, timeoutMs: 200 });
    const error = await provider.getMessages('s-1', { state }).catch((e: unknown) => e);
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    expect((error as BackendUnavailableError).backend).toBe('redis');
    expect((error as Error).message).toMatch(
      /^Redis getMessages for session "s-1" \(key "ctx:history:redis:\{s-1\}:messages"\) on 127\.0\.0\.1:1 did not answer within 200 ms\. /,
    );
  });

  it('an abort while a call waits rejects at once with the abort reason', async () => {
    const store = new RedisSessionStore({ client: silent, timeoutMs: 10_000 });
    const controller = new AbortController();
    // The abort comes once the command is queued on the client (which never answers), long before timeoutMs.
    const send = silent.sendCommand;
    silent.sendCommand = function (this: Redis, ...args: Parameters<Redis['sendCommand']>) {
      const queued = send.apply(this, args);
      controller.abort(new Error('user left'));
      return queued;
    };
    try {
      await expect(store.get('s-2', { signal: controller.signal })).rejects.toThrow('user left');
    } finally {
      silent.sendCommand = send;
    }
  });

  it('a call after close() is a BackendUnavailableError that says so', async () => {
    const provider = new RedisHistoryProvider({ client: silent });
    await provider.close();
    const error = await provider.saveMessages('s-3', [Message.user('hi')], { state }).catch((e: unknown) => e);
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain('after close()');
    expect(silent.status).not.toBe('end');
  });
});
