import { ConfigurationError } from '@ctx/core';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { encodeKeyPart, MAX_ENCODED_ID_LENGTH } from './keys.js';
import { RedisHistoryProvider } from './redis-history-provider.js';
import { RedisSessionStore } from './redis-session-store.js';
import { HOSTILE_SESSION_IDS } from '@ctx/provider-tests';

const lazy = () => new Redis({ lazyConnect: true });

describe('options', () => {
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
    ['maxStored 0', { client: lazy(), maxStored: 0 }],
    ['ttlSeconds 1.5', { client: lazy(), ttlSeconds: 1.5 }],
    ['timeoutMs 0', { client: lazy(), timeoutMs: 0 }],
  ])('rejects %s with ConfigurationError', (_, options) => {
    expect(() => new RedisHistoryProvider(options)).toThrow(ConfigurationError);
  });

  it('the session store checks its options the same way', () => {
    expect(() => new RedisSessionStore({})).toThrow(ConfigurationError);
    expect(() => new RedisSessionStore({ client: lazy(), ttlSeconds: -1 })).toThrow(ConfigurationError);
    expect(() => new RedisSessionStore({ client: lazy(), prefix: 'a}' })).toThrow(ConfigurationError);
  });

  it('passes the history options of @ctx/core on, with sourceId "redis" by default', () => {
    const provider = new RedisHistoryProvider({ client: lazy(), maxMessages: 7, storeInputs: false, loadMessages: false });
    expect([provider.sourceId, provider.maxMessages, provider.storeInputs, provider.loadMessages, provider.maxStored, provider.ttlSeconds]).toEqual(['redis', 7, false, false, undefined, undefined]);
  });
});

describe('encodeKeyPart', () => {
  const ids = [...HOSTILE_SESSION_IDS, '}{', '{', '}', '%', '%25', '~', '\uD800', '\uDC00', '\uFFFD', '\uD83E\uDD9C', 'a\u0000b', '', 'x'.repeat(MAX_ENCODED_ID_LENGTH), 'x'.repeat(MAX_ENCODED_ID_LENGTH + 1)];

  it('maps distinct ids to distinct parts made only of [A-Za-z0-9._%~-]', () => {
    const encoded = ids.map(encodeKeyPart);
    expect(new Set(encoded).size).toBe(new Set(ids).size);
    for (const part of encoded) expect(part).toMatch(/^[A-Za-z0-9._%~-]*$/);
  });

  it('keeps short ids readable and hashes long ones to a fixed size', () => {
    expect(encodeKeyPart('user-42.chat_1')).toBe('user-42.chat_1');
    expect(encodeKeyPart('a:b{c}*')).toBe('a%3Ab%7Bc%7D%2A');
    expect(encodeKeyPart('é')).toBe('%C3%A9');
    expect(encodeKeyPart('\uD800x')).toBe('%uD800x');
    expect(encodeKeyPart('x'.repeat(MAX_ENCODED_ID_LENGTH))).toHaveLength(MAX_ENCODED_ID_LENGTH);
    for (const long of ['x'.repeat(4096), 'x'.repeat(4095), '🦜'.repeat(60)]) expect(encodeKeyPart(long)).toMatch(/^~[A-Za-z0-9_-]{43}$/);
  });
});
