import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigurationError, SessionStateError } from '../errors.js';
import { Message } from '../messages/message.js';
import { createAgent } from '../run/create-agent.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { AgentSession, checkSessionForWrite, parseSessionJson } from './agent-session.js';

const agent = createAgent({ client: new ScriptedChatClient({ replies: [] }) });

function expectStateError(input: unknown, path: string): void {
  try {
    agent.restoreSession(input);
    expect.unreachable('restoreSession accepted malformed input');
  } catch (error) {
    expect(SessionStateError.isInstance(error)).toBe(true);
    expect((error as SessionStateError).path).toBe(path);
    expect((error as Error).message).toContain(path);
  }
}

describe('AgentSession', () => {
  it('serializes to versioned plain JSON and restores identically', () => {
    const session = agent.createSession({
      serviceSessionId: 'resp_1',
      state: { memory: { messages: [Message.user('hi')] }, prefs: { tone: 'terse' } },
    });
    const json = agent.serializeSession(session);
    expect(json).toMatchObject({ type: 'ctx.session', version: 1, sessionId: session.sessionId, serviceSessionId: 'resp_1' });
    expect(JSON.parse(JSON.stringify(session))).toEqual(json);
    const again = agent.restoreSession(JSON.stringify(session));
    expect(again.toJSON()).toEqual(json);
    expect(agent.restoreSession(json).toJSON()).toEqual(json);
  });

  it('copies initial state so later changes to the input do not leak in', () => {
    const state = { prefs: { tone: 'terse' } };
    const session = agent.createSession({ state });
    state.prefs.tone = 'chatty';
    expect(session.state.prefs).toEqual({ tone: 'terse' });
    const json = session.toJSON();
    const restored = agent.restoreSession(json);
    (json.state.prefs as { tone: string }).tone = 'loud';
    expect(restored.state.prefs).toEqual({ tone: 'terse' });
  });

  it('getSessionById gives a fresh session with that id', () => {
    const s = agent.getSessionById('user-42');
    expect(s.sessionId).toBe('user-42');
    expect(s.state).toEqual({});
    expect(s.serviceSessionId).toBeUndefined();
  });

  it.each([
    ['{not json', '$'],
    [[], '$'],
    [{ type: 'other', version: 1, sessionId: 'a', state: {} }, '$.type'],
    [{ type: 'ctx.session', version: 2, sessionId: 'a', state: {} }, '$.version'],
    [{ type: 'ctx.session', version: 1, sessionId: '', state: {} }, '$.sessionId'],
    [{ type: 'ctx.session', version: 1, sessionId: 'a', serviceSessionId: 5, state: {} }, '$.serviceSessionId'],
    [{ type: 'ctx.session', version: 1, sessionId: 'a', state: [] }, '$.state'],
    [{ type: 'ctx.session', version: 1, sessionId: 'a', state: { rag: 'x' } }, '$.state.rag'],
    [
      { type: 'ctx.session', version: 1, sessionId: 'a', state: { 'my provider': { n: Number.POSITIVE_INFINITY } } },
      '$.state["my provider"].n',
    ],
    [{ type: 'ctx.session', version: 1, sessionId: 'a', state: { memory: { messages: {} } } }, '$.state.memory.messages'],
    [
      {
        type: 'ctx.session',
        version: 1,
        sessionId: 'a',
        state: { memory: { messages: [Message.user('ok'), { id: 'b', role: 'robot', contents: [] }] } },
      },
      '$.state.memory.messages[1].role',
    ],
  ])('rejects %j with a SessionStateError at %s', (input, path) => expectStateError(input, path));

  it('names the unsupported version in its message', () => {
    expect(() => agent.restoreSession({ type: 'ctx.session', version: 7, sessionId: 'a', state: {} })).toThrow(
      /unsupported session version 7/,
    );
  });

  it('keeps state of providers the agent does not know', () => {
    const restored = agent.restoreSession({ type: 'ctx.session', version: 1, sessionId: 'a', state: { elsewhere: { x: [1] } } });
    expect(restored.state.elsewhere).toEqual({ x: [1] });
  });

  it('property: any session with JSON state survives serialize + parse + restore', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }),
        fc.option(fc.string(), { nil: undefined }),
        fc.dictionary(fc.string(), fc.dictionary(fc.string(), fc.jsonValue())),
        (sessionId, serviceSessionId, state) => {
          delete state.memory; // the default history validates its own slot
          const session = new AgentSession({
            sessionId,
            ...(serviceSessionId !== undefined ? { serviceSessionId } : {}),
            state: state as never,
          });
          const restored = agent.restoreSession(JSON.stringify(session));
          expect(restored.toJSON()).toEqual(JSON.parse(JSON.stringify(session.toJSON())));
        },
      ),
    );
  });

  it('property: any malformed input gives SessionStateError, never another error', () => {
    const valid = { type: 'ctx.session', version: 1, sessionId: 'a', state: { memory: { messages: [] } } };
    const mutated = fc.oneof(
      fc.jsonValue(),
      fc.record({
        type: fc.constantFrom('ctx.session', 'x'),
        version: fc.oneof(fc.constant(1), fc.jsonValue()),
        sessionId: fc.jsonValue(),
        state: fc.jsonValue(),
      }),
      fc.record({
        ...Object.fromEntries(Object.entries(valid).map(([k, v]) => [k, fc.constant(v)])),
        state: fc.dictionary(fc.string(), fc.jsonValue()),
      }),
      fc.string(),
    );
    fc.assert(
      fc.property(mutated, (input) => {
        try {
          agent.restoreSession(input);
        } catch (error) {
          expect(SessionStateError.isInstance(error)).toBe(true);
        }
      }),
    );
  });
});

describe('AgentSession with hostile keys', () => {
  it('keeps "__proto__" and "constructor" as ordinary state keys', () => {
    const text = '{"type":"ctx.session","version":1,"sessionId":"a","state":{"__proto__":{"polluted":true},"constructor":{"x":1}}}';
    const session = agent.restoreSession(text);
    expect(Object.keys(session.state)).toEqual(['__proto__', 'constructor']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(JSON.parse(JSON.stringify(session))).toEqual(JSON.parse(text));
    expect(session.stateOf('__proto__')).toEqual({ polluted: true });
    expect(session.stateOf('toString')).toEqual({});
  });
});

/** A session whose state slot `app` holds `{ d: { d: ... } }` nested `levels` objects deep. */
function deepSession(levels: number): Record<string, unknown> {
  let value: unknown = 'leaf';
  for (let i = 0; i < levels; i++) value = { d: value };
  return { type: 'ctx.session', version: 1, sessionId: 'deep', state: { app: value } };
}

/** What `fn` throws. */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('AgentSession depth limit', () => {
  it('restores a session nested thousands of levels deep (30 KB) as a SessionStateError naming the path, not a RangeError', () => {
    const levels = 5_000;
    const json = `{"type":"ctx.session","version":1,"sessionId":"deep","state":{"app":${'{"d":'.repeat(levels)}"leaf"${'}'.repeat(levels)}}}`;
    expect(json.length).toBeGreaterThan(30_000);
    for (const input of [json, JSON.parse(json)]) {
      const error = thrown(() => agent.restoreSession(input));
      expect(SessionStateError.isInstance(error), String(error)).toBe(true);
      // $ (1), state (2), app (3), then 126 more: the 129th level is too deep.
      expect((error as SessionStateError).path).toBe(`$.state.app${'.d'.repeat(126)}`);
      expect((error as Error).message).toContain('nested deeper than 128 levels');
      expect(SessionStateError.isInstance(thrown(() => parseSessionJson(input)))).toBe(true);
      expect(SessionStateError.isInstance(thrown(() => AgentSession.fromJSON(input)))).toBe(true);
    }
  });

  it('accepts a session nested exactly 128 levels deep', () => {
    const restored = agent.restoreSession(deepSession(126));
    expect(JSON.stringify(restored.state.app).split('{').length - 1).toBe(126);
    expect(SessionStateError.isInstance(thrown(() => agent.restoreSession(deepSession(127))))).toBe(true);
  });
});

describe('AgentSession from values that break a naive description', () => {
  const base = { type: 'ctx.session', version: 1, sessionId: 'a', state: {} };
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  const revocable = Proxy.revocable({}, {});
  revocable.revoke();
  const trapAll = () => {
    throw new Error('trap');
  };
  const hostile = new Proxy({}, { get: trapAll, ownKeys: trapAll, getPrototypeOf: trapAll, has: trapAll });
  const readsThenThrows = new Proxy({ ...base }, { get: trapAll });
  const getter = {
    ...base,
    get state(): unknown {
      throw new Error('getter');
    },
  };

  it.each([
    ['a bigint type', '$.type', () => ({ ...base, type: 1n })],
    ['a cyclic type', '$.type', () => ({ ...base, type: cyclic })],
    ['a revoked Proxy', '$', () => revocable.proxy],
    ['a Proxy whose traps throw', '$', () => hostile],
    ['a Proxy whose get throws', '$', () => readsThenThrows],
    ['a getter that throws', '$', () => getter],
    ['a revoked Proxy as a slot', '$.state.app', () => ({ ...base, state: { app: revocable.proxy } })],
  ] as [string, string, () => unknown][])('%s gives a SessionStateError at %s', (_, path, make) => {
    const input = make();
    for (const fn of [() => agent.restoreSession(input), () => parseSessionJson(input), () => AgentSession.fromJSON(input)]) {
      const error = thrown(fn);
      expect(SessionStateError.isInstance(error), String(error)).toBe(true);
      expect((error as SessionStateError).path).toBe(path);
    }
  });

  it('a provider whose validateState throws a hostile Proxy still gives a SessionStateError', () => {
    const picky = createAgent({
      client: new ScriptedChatClient({ replies: [] }),
      contextProviders: [
        {
          sourceId: 'picky',
          validateState: () => {
            throw hostile;
          },
        },
      ],
    });
    const error = thrown(() => picky.restoreSession({ ...base, state: { picky: {} } }));
    expect(SessionStateError.isInstance(error), String(error)).toBe(true);
    expect((error as SessionStateError).path).toBe('$.state.picky');
  });
});

describe('checkSessionForWrite', () => {
  it('refuses an empty or whitespace-only session id with a ConfigurationError, and everything parseSessionJson refuses', () => {
    for (const sessionId of ['', ' ', '\t\n'])
      expect(
        ConfigurationError.isInstance(thrown(() => checkSessionForWrite({ type: 'ctx.session', version: 1, sessionId, state: {} }))),
      ).toBe(true);
    const error = thrown(() =>
      checkSessionForWrite({ type: 'ctx.session', version: 1, sessionId: 'a', state: { app: { n: Number.NaN } } }),
    );
    expect((error as SessionStateError).path).toBe('$.state.app.n');
    expect(SessionStateError.isInstance(thrown(() => checkSessionForWrite('{"type":"ctx.session"}')))).toBe(true);
    expect(checkSessionForWrite({ type: 'ctx.session', version: 1, sessionId: ' a ', state: {} }).sessionId).toBe(' a ');
  });
});

describe('AgentSession pending approvals', () => {
  const pending = {
    approvals: [{ callId: 'c1', toolName: 'transfer', arguments: '{"amount":300}' }],
    messages: [Message.tool({ type: 'function-result', callId: 'c2', name: 'balance', result: 500 })],
  };
  const base = { type: 'ctx.session', version: 1, sessionId: 's1', state: {} };

  it('keeps the calls waiting for approval through JSON, text and a store write check', () => {
    const session = agent.restoreSession({ ...base, pending });
    expect(session.pending).toEqual(pending);
    expect(agent.restoreSession(JSON.stringify(session)).pending).toEqual(pending);
    expect(checkSessionForWrite(session.toJSON()).pending).toEqual(pending);
    expect(agent.restoreSession({ ...base, pending: null }).pending).toBeUndefined();
    // A restored session owns its copy.
    const input = structuredClone({ ...base, pending });
    const restored = agent.restoreSession(input);
    input.pending.approvals[0]!.callId = 'changed';
    expect(restored.pending?.approvals[0]?.callId).toBe('c1');
  });

  it('rejects malformed pending state with a SessionStateError naming the path', () => {
    const call = pending.approvals[0]!;
    expectStateError({ ...base, pending: [] }, '$.pending');
    expectStateError({ ...base, pending: { approvals: [], messages: [] } }, '$.pending.approvals');
    expectStateError({ ...base, pending: { approvals: [{ ...call, callId: '' }], messages: [] } }, '$.pending.approvals[0].callId');
    expectStateError({ ...base, pending: { approvals: [call, call], messages: [] } }, '$.pending.approvals[1].callId');
    expectStateError({ ...base, pending: { approvals: [{ ...call, toolName: 1 }], messages: [] } }, '$.pending.approvals[0].toolName');
    expectStateError({ ...base, pending: { approvals: [{ ...call, arguments: {} }], messages: [] } }, '$.pending.approvals[0].arguments');
    expectStateError({ ...base, pending: { approvals: ['c1'], messages: [] } }, '$.pending.approvals[0]');
    expectStateError({ ...base, pending: { approvals: [call] } }, '$.pending.messages');
    expectStateError(
      { ...base, pending: { approvals: [call], messages: [{ id: 'm', role: 'robot', contents: [] }] } },
      '$.pending.messages[0].role',
    );
  });
});
