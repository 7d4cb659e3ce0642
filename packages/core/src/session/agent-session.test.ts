import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SessionStateError } from '../errors.js';
import { Message } from '../messages/message.js';
import { createAgent } from '../run/create-agent.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { AgentSession } from './agent-session.js';

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
