import { describe, expect, it } from 'vitest';
import { ConfigurationError, SessionStateError } from '../errors.js';
import type { Message } from '../messages/message.js';
import type { ProviderDiagnostic } from '../contracts/run-view.js';
import { checkHistoryBatch } from './history-batch.js';

const user = (id: string, text: string): Message => ({ id, role: 'user', contents: [{ type: 'text', text }] });

describe('checkHistoryBatch', () => {
  it('returns the batch in order with a repeated identical message kept once, and where each came from', () => {
    const a = user('a', 'one');
    const b = user('b', 'two');
    const checked = checkHistoryBatch('s1', [a, b, { ...a, createdAt: '2025-01-01T00:00:00.000Z' }], { sourceId: 'h' });
    expect(checked.messages).toEqual([a, b]);
    expect(checked.indexes).toEqual([0, 1]);
  });

  it('refuses a blank session id with ConfigurationError', () => {
    for (const id of ['', ' ', '\u00a0'])
      expect(() => checkHistoryBatch(id, [user('a', 'x')], { sourceId: 'h' })).toThrow(ConfigurationError);
  });

  it('refuses a malformed message, naming its path and the session', () => {
    const bad = { ...user('m1', 'x'), metadata: { when: new Date(0) } } as unknown as Message;
    let error: unknown;
    try {
      checkHistoryBatch('session-7', [user('ok', 'fine'), bad], { sourceId: 'h' });
    } catch (e) {
      error = e;
    }
    expect(SessionStateError.isInstance(error)).toBe(true);
    expect((error as SessionStateError).path).toBe('$.messages[1].metadata.when');
    expect((error as SessionStateError).sessionId).toBe('session-7');
    expect((error as Error).message).toContain('of session "session-7" at $.messages[1].metadata.when');
  });

  it('refuses an empty message id and a batch that is not an array', () => {
    expect(() => checkHistoryBatch('s', [user('', 'x')], { sourceId: 'h' })).toThrow(/\$\.messages\[0\]\.id: must not be empty/);
    expect(() => checkHistoryBatch('s', 'nope' as unknown as Message[], { sourceId: 'h' })).toThrow(/\$\.messages: must be an array/);
  });

  it('refuses an id repeated with other content as a message-id conflict, reported without text', () => {
    const diagnostics: ProviderDiagnostic[] = [];
    expect(() =>
      checkHistoryBatch('s', [user('a', 'secret one'), user('a', 'secret two')], { sourceId: 'h', report: (d) => diagnostics.push(d) }),
    ).toThrow(/message id "a" is already stored in session "s" of history provider "h"/);
    expect(diagnostics.map((d) => d.code)).toEqual(['message-id-conflict']);
    expect(JSON.stringify(diagnostics)).not.toContain('secret');
  });

  it('refuses a message over maxMessageBytes, naming it, the limit and the backend', () => {
    const big = user('big', 'x'.repeat(2000));
    expect(() =>
      checkHistoryBatch('s', [user('a', 'small'), big], { sourceId: 'h', maxMessageBytes: 1024, backend: 'PostgreSQL' }),
    ).toThrow(
      /\$\.messages\[1\]: message "big" takes more than 1024 bytes of JSON \(1 KiB\), the most PostgreSQL stores per message; nothing of the batch was stored/,
    );
    expect(checkHistoryBatch('s', [big], { sourceId: 'h', maxMessageBytes: JSON.stringify(big).length }).messages).toEqual([big]);
    expect(() => checkHistoryBatch('s', [big], { sourceId: 'h', maxMessageBytes: 0 })).toThrow(ConfigurationError);
  });
});
