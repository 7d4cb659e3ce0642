import { describe, expect, it } from 'vitest';
import {
  freezeMessageInPlace,
  frozenCopy,
  frozenMessage,
  frozenWithSource,
  hasFrozenSource,
  isDeepFrozen,
  storedWithSource,
} from './frozen.js';
import { Message } from './message.js';

describe('frozenCopy', () => {
  it('copies what is mutable and freezes the copy; the original stays mutable and changing it does not reach the copy', () => {
    const value = { a: [1, { b: 'x' }], c: { d: null } };
    const copy = frozenCopy(value);
    expect(copy).toEqual(value);
    expect(copy).not.toBe(value);
    expect(isDeepFrozen(copy)).toBe(true);
    expect(Object.isFrozen(value)).toBe(false);
    (value.a[1] as { b: string }).b = 'changed';
    value.c.d = 1 as never;
    expect(copy).toEqual({ a: [1, { b: 'x' }], c: { d: null } });
  });

  it('shares deep-frozen parts and copies a frozen object that holds a mutable one', () => {
    const shared = Object.freeze({ deep: Object.freeze(['x']) });
    const shallow = Object.freeze({ inner: { n: 1 } });
    const copy = frozenCopy({ shared, shallow });
    expect(copy.shared).toBe(shared);
    expect(copy.shallow).not.toBe(shallow);
    expect(isDeepFrozen(copy.shallow)).toBe(true);
    expect(frozenCopy(shared)).toBe(shared);
  });

  it('keeps a "__proto__" key an own data key, without touching the prototype', () => {
    const value = JSON.parse('{"__proto__": {"polluted": true}, "k": 1}') as Record<string, unknown>;
    const copy = frozenCopy(value);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(Object.hasOwn(copy, '__proto__')).toBe(true);
    expect(JSON.stringify(copy)).toBe(JSON.stringify(value));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('frozenMessage', () => {
  it('stores an attribution-only metadata as one object shared by every message so attributed', () => {
    const a = frozenMessage(Message.user('a', { metadata: { ctx: { sourceId: 'input', sourceType: 'input' } } }));
    const b = frozenMessage(Message.user('b', { metadata: { ctx: { sourceId: 'input', sourceType: 'input' } } }));
    expect(a.metadata).toBe(b.metadata);
    expect(a.metadata).toEqual({ ctx: { sourceId: 'input', sourceType: 'input' } });
    const other = frozenMessage(Message.user('c', { metadata: { ctx: { sourceId: 'input', sourceType: 'input' }, extra: 1 } }));
    expect(other.metadata).not.toBe(a.metadata);
    expect(other.metadata).toEqual({ ctx: { sourceId: 'input', sourceType: 'input' }, extra: 1 });
    expect(isDeepFrozen(other)).toBe(true);
  });

  it('keeps every field and its order, whatever the shape', () => {
    const shapes = [
      Message.user('hi', { metadata: { ctx: { sourceId: 'input', sourceType: 'input' } } }),
      JSON.parse(
        '{"role":"assistant","id":"a","contents":[{"text":"t","type":"text"},{"type":"text","text":"u","extra":1}],"custom":{"k":[1]}}',
      ),
      Message.tool({ type: 'function-result', callId: 'c', name: 'f', result: { rows: [{ a: 1 }] } }, { authorName: 'bot' }),
    ];
    for (const m of shapes) {
      const copy = frozenMessage(m);
      expect(JSON.stringify(copy)).toBe(JSON.stringify(m));
      expect(isDeepFrozen(copy)).toBe(true);
    }
  });

  it('gives back a deep-frozen message itself', () => {
    const stored = frozenMessage(Message.assistant('hi'));
    expect(frozenMessage(stored)).toBe(stored);
  });
});

describe('freezeMessageInPlace', () => {
  it('deep-freezes a parsed message itself, giving it the shared attribution metadata, and copies one already frozen', () => {
    const text =
      '{"id":"m","role":"tool","contents":[{"type":"function-result","callId":"c","name":"f","result":{"rows":[{"a":1}]}}],"metadata":{"ctx":{"sourceId":"response","sourceType":"response"}}}';
    const parsed = JSON.parse(text) as Message;
    expect(freezeMessageInPlace(parsed)).toBe(parsed);
    expect(isDeepFrozen(parsed)).toBe(true);
    expect(JSON.stringify(parsed)).toBe(text);
    expect(parsed.metadata).toBe(
      frozenMessage(Message.user('x', { metadata: { ctx: { sourceId: 'response', sourceType: 'response' } } })).metadata,
    );
    const custom = JSON.parse('{"id":"n","role":"user","contents":[],"metadata":{"k":{"v":[1]}}}') as Message;
    freezeMessageInPlace(custom);
    expect(isDeepFrozen(custom)).toBe(true);
    const shallow = Object.freeze({ ...Message.user('hi'), metadata: { k: [1] } }) as Message;
    const copy = freezeMessageInPlace(shallow);
    expect(copy).not.toBe(shallow);
    expect(isDeepFrozen(copy)).toBe(true);
    expect(Object.isFrozen(shallow.metadata)).toBe(false);
  });
});

describe('storedWithSource', () => {
  it('attributes a deep-frozen message as frozenWithSource does, sharing its parts', () => {
    const stored = [
      frozenMessage(Message.user('hi', { metadata: { ctx: { sourceId: 'input', sourceType: 'input' } } })),
      frozenMessage(Message.tool({ type: 'function-result', callId: 'c', name: 'f', result: { rows: [1] } }, { authorName: 'bot' })),
      frozenMessage(JSON.parse('{"role":"assistant","id":"a","contents":[{"type":"text","text":"t"}]}')),
      frozenMessage(Message.assistant('x', { metadata: { ctx: { sourceId: 'response', sourceType: 'response', k: 1 }, other: true } })),
    ];
    for (const m of stored) {
      const view = storedWithSource(m, 'memory', 'history');
      expect(JSON.stringify(view)).toBe(JSON.stringify(frozenWithSource(m, 'memory', 'history')));
      expect(view.contents).toBe(m.contents);
      expect(isDeepFrozen(view)).toBe(true);
      expect(storedWithSource(view, 'memory', 'history')).toBe(view);
    }
  });
});

describe('frozenWithSource', () => {
  it('attributes a frozen copy, keeping other ctx fields, and gives back a message that already is', () => {
    const message = Message.assistant('summary', { metadata: { ctx: { sourceId: 'input', sourceType: 'input', summary: true }, k: 'v' } });
    const view = frozenWithSource(message, 'memory', 'history');
    expect(view.metadata).toEqual({ ctx: { sourceId: 'memory', sourceType: 'history', summary: true }, k: 'v' });
    expect(isDeepFrozen(view)).toBe(true);
    expect(message.metadata?.ctx).toEqual({ sourceId: 'input', sourceType: 'input', summary: true });
    expect(hasFrozenSource(view, 'memory', 'history')).toBe(true);
    expect(hasFrozenSource(view, 'memory', 'context')).toBe(false);
    expect(frozenWithSource(view, 'memory', 'history')).toBe(view);
    expect(hasFrozenSource(Message.withSource(message, 'memory', 'history'), 'memory', 'history')).toBe(false);
  });
});
