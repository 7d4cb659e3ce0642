import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SessionStateError } from '../errors.js';
import type { Content } from '../contracts/message.js';
import { Message } from './message.js';

const everyKind: Content[] = [
  { type: 'text', text: 'hello' },
  { type: 'function-call', callId: 'c1', name: 'get_weather', arguments: '{"city":"Oslo"}' },
  { type: 'function-result', callId: 'c1', name: 'get_weather', result: { temp: -3, tags: ['cold', null] } },
  { type: 'function-result', callId: 'c2', result: { error: 'boom' }, isError: true },
  { type: 'data', mediaType: 'image/png', data: 'iVBORw0KGgo=' },
  { type: 'data', mediaType: 'application/pdf', uri: 'https://example.com/a.pdf', name: 'a.pdf' },
  { type: 'reasoning', text: 'thinking', id: 'rs_1', encrypted: 'opaque' },
  { type: 'text', text: 'Checking.', phase: 'commentary' },
  {
    type: 'text',
    text: 'See Oslo.',
    phase: 'final-answer',
    annotations: [
      { type: 'url-citation', url: 'https://example.com/oslo', title: 'Oslo', startIndex: 4, endIndex: 8 },
      { type: 'file-citation', fileId: 'file-1', filename: 'a.pdf', index: 9 },
      { type: 'file-citation', fileId: 'cfile-1', containerId: 'cntr-1', startIndex: 0, endIndex: 3 },
    ],
  },
  { type: 'refusal', refusal: 'I cannot help with that.' },
  { type: 'hosted-tool', item: { id: 'ws_1', type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'oslo' } } },
];

describe('Message', () => {
  it('builds messages with ids, timestamps and roles', () => {
    const m = Message.user('hi', { authorName: 'ann', metadata: { k: 1 } });
    expect(m.role).toBe('user');
    expect(m.contents).toEqual([{ type: 'text', text: 'hi' }]);
    expect(m.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(Date.parse(m.createdAt!)).not.toBeNaN();
    expect(m.authorName).toBe('ann');
    expect(Message.user('x').id).not.toBe(Message.user('x').id);
    expect(Message.system('s').role).toBe('system');
    expect(Message.assistant('a', { id: 'fixed' }).id).toBe('fixed');
  });

  it('reads text and function calls', () => {
    const m = Message.assistant([
      { type: 'text', text: 'a' },
      { type: 'reasoning', text: 'hidden' },
      everyKind[1]!,
      { type: 'text', text: 'b' },
    ]);
    expect(Message.text(m)).toBe('ab');
    expect(Message.text(Message.assistant([{ type: 'refusal', refusal: 'no' }]))).toBe('');
    expect(Message.functionCalls(m).map((c) => c.name)).toEqual(['get_weather']);
  });

  it('is plain JSON: every content kind survives a JSON round trip unchanged', () => {
    const m = Message.assistant(everyKind, { metadata: { nested: { a: [1, 'two', true, null] } } });
    const again = JSON.parse(JSON.stringify(m));
    expect(again).toEqual(m);
    expect(Message.parse(again)).toBe(again);
  });

  it('attributes messages without touching the original', () => {
    const m = Message.user('hi', { metadata: { keep: 'me' } });
    const stamped = Message.withSource(m, 'rag', 'context');
    expect(Message.source(stamped)).toEqual({ sourceId: 'rag', sourceType: 'context' });
    expect(stamped.metadata?.keep).toBe('me');
    expect(Message.source(m)).toBeUndefined();
    expect(Message.source({ ...m, metadata: { ctx: { sourceId: 'x', sourceType: 'bogus' } } })).toBeUndefined();
  });

  it.each([
    [null, '$'],
    [{ role: 'user', contents: [] }, '$.id'],
    [{ id: 'a', role: 'robot', contents: [] }, '$.role'],
    [{ id: 'a', role: 'user', contents: 'hi' }, '$.contents'],
    [{ id: 'a', role: 'user', contents: [{ type: 'text' }] }, '$.contents[0].text'],
    [{ id: 'a', role: 'user', contents: [{ type: 'video' }] }, '$.contents[0].type'],
    [{ id: 'a', role: 'user', contents: [{ type: 'data', mediaType: 'x' }] }, '$.contents[0]'],
    [{ id: 'a', role: 'user', contents: [{ type: 'data', mediaType: 'x', uri: 'u', data: 'd' }] }, '$.contents[0]'],
    [{ id: 'a', role: 'tool', contents: [{ type: 'function-result', callId: 'c' }] }, '$.contents[0].result'],
    [{ id: 'a', role: 'tool', contents: [{ type: 'function-result', callId: 'c', result: { n: Number.NaN } }] }, '$.contents[0].result.n'],
    [{ id: 'a', role: 'user', contents: [], metadata: { f: () => 1 } }, '$.metadata.f'],
    [{ id: 'a', role: 'user', contents: [], createdAt: 5 }, '$.createdAt'],
    [{ id: 'a', role: 'assistant', contents: [{ type: 'text', text: 't', phase: 'final_answer' }] }, '$.contents[0].phase'],
    [{ id: 'a', role: 'assistant', contents: [{ type: 'text', text: 't', annotations: {} }] }, '$.contents[0].annotations'],
    [
      { id: 'a', role: 'assistant', contents: [{ type: 'text', text: 't', annotations: [{ type: 'url' }] }] },
      '$.contents[0].annotations[0].type',
    ],
    [
      {
        id: 'a',
        role: 'assistant',
        contents: [{ type: 'text', text: 't', annotations: [{ type: 'url-citation', url: 'u', startIndex: 1.5 }] }],
      },
      '$.contents[0].annotations[0].startIndex',
    ],
    [
      { id: 'a', role: 'assistant', contents: [{ type: 'text', text: 't', annotations: [{ type: 'file-citation' }] }] },
      '$.contents[0].annotations[0].fileId',
    ],
    [{ id: 'a', role: 'assistant', contents: [{ type: 'refusal', text: 'no' }] }, '$.contents[0].refusal'],
    [{ id: 'a', role: 'assistant', contents: [{ type: 'hosted-tool', item: 'ws_1' }] }, '$.contents[0].item'],
    [{ id: 'a', role: 'assistant', contents: [{ type: 'hosted-tool', item: { id: 'ws_1' } }] }, '$.contents[0].item.type'],
    [{ id: 'a', role: 'assistant', contents: [{ type: 'hosted-tool', item: { type: 'x', n: Number.NaN } }] }, '$.contents[0].item.n'],
  ])('rejects malformed message %j at %s', (value, path) => {
    expect(Message.isMessage(value)).toBe(false);
    try {
      Message.parse(value, '$');
      expect.unreachable();
    } catch (error) {
      expect(SessionStateError.isInstance(error)).toBe(true);
      expect((error as SessionStateError).path).toBe(path);
    }
  });

  it('any JSON value is either a valid message or a SessionStateError, never another error', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.jsonValue(), fc.record({ id: fc.string(), role: fc.constantFrom('user', 'x'), contents: fc.array(fc.jsonValue()) })),
        (value) => {
          try {
            Message.parse(value);
            return Message.isMessage(value);
          } catch (error) {
            return SessionStateError.isInstance(error) && !Message.isMessage(value);
          }
        },
      ),
    );
  });

  it('refuses metadata and results nested deeper than 128 levels below the message with a SessionStateError, not a RangeError', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 20_000; i++) deep = { d: deep };
    const cases: [unknown, string][] = [
      [{ id: 'a', role: 'user', contents: [], metadata: { deep } }, `$.metadata.deep${'.d'.repeat(126)}`],
      [
        { id: 'a', role: 'tool', contents: [{ type: 'function-result', callId: 'c', result: deep }] },
        `$.contents[0].result${'.d'.repeat(125)}`,
      ],
    ];
    for (const [value, path] of cases) {
      expect(Message.isMessage(value)).toBe(false);
      const error = (() => {
        try {
          Message.parse(value);
        } catch (e) {
          return e;
        }
      })();
      expect(SessionStateError.isInstance(error), String(error)).toBe(true);
      expect((error as SessionStateError).path).toBe(path);
      expect((error as SessionStateError).problem).toContain('nested deeper than 128 levels');
    }
  });

  it('fields ctx does not know must be plain JSON too, so a stored message reads back as it was saved', () => {
    const base = { id: 'a', role: 'user', contents: [{ type: 'text', text: 'hi' }] };
    expect(Message.isMessage({ ...base, extra: { fine: [1, 'x', null] } })).toBe(true);
    const pathOf = (value: unknown) => {
      try {
        Message.parse(value);
      } catch (error) {
        return SessionStateError.isInstance(error) ? error.path : 'other';
      }
      return undefined;
    };
    expect(pathOf({ ...base, extra: Number.NaN })).toBe('$.extra');
    expect(pathOf({ ...base, contents: [{ type: 'text', text: 'hi', style: new Map() }] })).toBe('$.contents[0].style');
    expect(pathOf({ ...base, contents: [{ type: 'function-call', callId: 'c', name: 'f', arguments: '{}', at: new Date(0) }] })).toBe(
      '$.contents[0].at',
    );
  });

  it('accepts metadata nested exactly 128 levels deep, counting the message', () => {
    let value: unknown = 1;
    for (let i = 0; i < 126; i++) value = [value];
    expect(Message.isMessage({ id: 'a', role: 'user', contents: [], metadata: { value } })).toBe(true);
    expect(Message.isMessage({ id: 'a', role: 'user', contents: [], metadata: { value: [value] } })).toBe(false);
  });

  it('gives a SessionStateError, never another error, for values that break a naive description', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const revocable = Proxy.revocable({}, {});
    revocable.revoke();
    const throwing = new Proxy(
      {},
      {
        get() {
          throw new Error('trap');
        },
      },
    );
    const getter = {
      id: 'a',
      contents: [],
      get role(): string {
        throw new Error('getter');
      },
    };
    const cases: [unknown, string][] = [
      [{ id: 'a', role: 1n, contents: [] }, '$.role'],
      [{ id: 'a', role: cyclic, contents: [] }, '$.role'],
      [{ id: 'a', role: 'user', contents: [{ type: 1n }] }, '$.contents[0].type'],
      [{ id: 'a', role: 'user', contents: [{ type: Symbol('t') }] }, '$.contents[0].type'],
      [{ id: 'a', role: 'user', contents: [], metadata: { c: cyclic } }, '$.metadata.c.self'],
      [{ id: 'a', role: 'tool', contents: [{ type: 'function-result', callId: 'c', result: () => 1 }] }, '$.contents[0].result'],
      [{ id: 'a', role: 'user', contents: [], metadata: { m: new Map() } }, '$.metadata.m'],
      [revocable.proxy, '$'],
      [throwing, '$'],
      [getter, '$'],
      [{ id: 'a', role: 'user', contents: [throwing] }, '$.contents[0]'],
      [Object.assign(Object.create(null), { id: 'a', role: 'robot', contents: [] }), '$.role'],
    ];
    for (const [value, path] of cases) {
      let error: unknown;
      try {
        Message.parse(value);
      } catch (e) {
        error = e;
      }
      expect(SessionStateError.isInstance(error), `${path}: ${String(error)}`).toBe(true);
      expect((error as SessionStateError).path).toBe(path);
      expect(Message.isMessage(value)).toBe(false);
    }
  });
});

describe('Message.parse with a session', () => {
  it('names the session given as context in the error, beside the path', () => {
    const bad = { id: 'm1', role: 'user', contents: [{ type: 'text', text: 7 }] };
    expect(() => Message.parse(bad, '$.messages[3]', { sessionId: 'chat-9' })).toThrow(
      /^Invalid session data of session "chat-9" at \$\.messages\[3\]\.contents\[0\]\.text: /,
    );
    let error: unknown;
    try {
      Message.parse(bad, '$.messages[3]', { sessionId: 'chat-9' });
    } catch (e) {
      error = e;
    }
    expect((error as SessionStateError).sessionId).toBe('chat-9');
    expect(() => Message.parse(bad)).toThrow(/^Invalid session data at \$\.contents\[0\]\.text: /);
  });
});
