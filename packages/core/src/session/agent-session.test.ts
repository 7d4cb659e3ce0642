import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigurationError, SessionStateError } from '../errors.js';
import { Message } from '../messages/message.js';
import { createAgent } from '../run/create-agent.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { AgentSession, type AgentSessionInit, checkSessionForWrite, parseSessionJson } from './agent-session.js';

const agent = createAgent({ client: new ScriptedChatClient({ replies: [] }) });

/** Metadata with only the required times. */
const TIMES = { createdAt: '2026-01-31T12:00:00.000Z', updatedAt: '2026-02-01T08:30:15.123Z' };

/** Version-2 session JSON with `fields` over a minimal session `a`. */
function v2(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: 'ctx.session', version: 2, sessionId: 'a', metadata: TIMES, state: {}, ...fields };
}

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
  it('serializes to versioned plain JSON and restores identically, metadata included', () => {
    const before = Date.now();
    const session = agent.createSession({
      serviceSessionId: 'resp_1',
      state: { memory: { messages: [Message.user('hi')] }, prefs: { tone: 'terse' } },
      userId: 'user-1',
      title: 'Planning',
      custom: { plan: 'pro', tags: ['a'] },
    });
    const json = agent.serializeSession(session);
    expect(json).toMatchObject({ type: 'ctx.session', version: 2, sessionId: session.sessionId, serviceSessionId: 'resp_1' });
    const { createdAt, updatedAt, ...rest } = json.metadata;
    expect(rest).toEqual({ userId: 'user-1', title: 'Planning', custom: { plan: 'pro', tags: ['a'] } });
    expect(updatedAt).toBe(createdAt);
    expect(Date.parse(createdAt)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(createdAt)).toBeLessThanOrEqual(Date.now());
    session.metadata.forkedFrom = { sessionId: 'parent', messageId: 'm1' };
    const full = structuredClone(agent.serializeSession(session));
    expect(full.metadata.forkedFrom).toEqual({ sessionId: 'parent', messageId: 'm1' });
    expect(JSON.parse(JSON.stringify(session))).toEqual(full);
    const again = agent.restoreSession(JSON.stringify(session));
    expect(again.toJSON()).toEqual(full);
    const restored = agent.restoreSession(full);
    expect(restored.toJSON()).toEqual(full);
    restored.metadata.custom!.plan = 'changed';
    expect(full.metadata.custom?.plan, 'a restored session owns its metadata').toBe('pro');
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
    [v2({ type: 'other' }), '$.type'],
    [v2({ version: 3 }), '$.version'],
    [v2({ version: '2' }), '$.version'],
    [v2({ sessionId: '' }), '$.sessionId'],
    [v2({ serviceSessionId: 5 }), '$.serviceSessionId'],
    [v2({ state: [] }), '$.state'],
    [v2({ state: { rag: 'x' } }), '$.state.rag'],
    [v2({ state: { 'my provider': { n: Number.POSITIVE_INFINITY } } }), '$.state["my provider"].n'],
    [v2({ state: { memory: { messages: {} } } }), '$.state.memory.messages'],
    [
      v2({ state: { memory: { messages: [Message.user('ok'), { id: 'b', role: 'robot', contents: [] }] } } }),
      '$.state.memory.messages[1].role',
    ],
    // A version-1 session is checked the same way before it migrates.
    [{ type: 'ctx.session', version: 1, sessionId: 'a', state: { rag: 'x' } }, '$.state.rag'],
  ])('rejects %j with a SessionStateError at %s', (input, path) => expectStateError(input, path));

  it('names the unsupported version in its message', () => {
    expect(() => agent.restoreSession(v2({ version: 7 }))).toThrow(
      /unsupported session version 7; this version of @ctx\/core reads versions 1 and 2/,
    );
  });

  it('takes a session without state as one no provider has written to yet; a state that is not an object is still refused', () => {
    const { state: _, ...json } = v2({});
    const restored = agent.restoreSession(json);
    expect(restored.state).toEqual({});
    expect(restored.toJSON().state).toEqual({});
    expectStateError(v2({ state: null }), '$.state');
  });

  it('keeps state of providers the agent does not know', () => {
    const restored = agent.restoreSession(v2({ state: { elsewhere: { x: [1] } } }));
    expect(restored.state.elsewhere).toEqual({ x: [1] });
  });

  it('property: any session with JSON state survives serialize + parse + restore', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }),
        fc.option(fc.string(), { nil: undefined }),
        fc.dictionary(fc.string(), fc.dictionary(fc.string(), fc.jsonValue())),
        fc.record(
          {
            userId: fc.string({ minLength: 1, maxLength: 512 }).filter((id) => id.trim() !== ''),
            title: fc.string({ maxLength: 200 }),
            custom: fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }),
          },
          { requiredKeys: [] },
        ),
        (sessionId, serviceSessionId, state, metadata) => {
          delete state.memory; // the default history validates its own slot
          const session = new AgentSession({
            sessionId,
            ...(serviceSessionId !== undefined ? { serviceSessionId } : {}),
            state: state as never,
            ...(metadata as Pick<AgentSessionInit, 'userId' | 'title' | 'custom'>),
          });
          const restored = agent.restoreSession(JSON.stringify(session));
          expect(restored.toJSON()).toEqual(JSON.parse(JSON.stringify(session.toJSON())));
        },
      ),
    );
  });

  it('property: any malformed input gives SessionStateError, never another error', () => {
    const valid = v2({ state: { memory: { messages: [] } } });
    const mutated = fc.oneof(
      fc.jsonValue(),
      fc.record({
        type: fc.constantFrom('ctx.session', 'x'),
        version: fc.oneof(fc.constantFrom(1, 2), fc.jsonValue()),
        sessionId: fc.jsonValue(),
        metadata: fc.oneof(fc.constant(TIMES), fc.jsonValue()),
        state: fc.jsonValue(),
      }),
      fc.record({
        ...Object.fromEntries(Object.entries(valid).map(([k, v]) => [k, fc.constant(v)])),
        metadata: fc.record({
          createdAt: fc.oneof(fc.constant(TIMES.createdAt), fc.string(), fc.jsonValue()),
          updatedAt: fc.oneof(
            fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
            fc.jsonValue(),
          ),
          title: fc.jsonValue(),
          userId: fc.jsonValue(),
          custom: fc.jsonValue(),
          forkedFrom: fc.jsonValue(),
        }),
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
    const text = `{"type":"ctx.session","version":2,"sessionId":"a","metadata":${JSON.stringify(TIMES)},"state":{"__proto__":{"polluted":true},"constructor":{"x":1}}}`;
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
  return v2({ sessionId: 'deep', state: { app: value } });
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
    const json = `{"type":"ctx.session","version":2,"sessionId":"deep","metadata":${JSON.stringify(TIMES)},"state":{"app":${'{"d":'.repeat(levels)}"leaf"${'}'.repeat(levels)}}}`;
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
  const base = v2();
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
      expect(ConfigurationError.isInstance(thrown(() => checkSessionForWrite(v2({ sessionId }))))).toBe(true);
    const error = thrown(() => checkSessionForWrite(v2({ state: { app: { n: Number.NaN } } })));
    expect((error as SessionStateError).path).toBe('$.state.app.n');
    expect((thrown(() => checkSessionForWrite(v2({ metadata: { ...TIMES, title: 7 } }))) as SessionStateError).path).toBe(
      '$.metadata.title',
    );
    expect(SessionStateError.isInstance(thrown(() => checkSessionForWrite('{"type":"ctx.session"}')))).toBe(true);
    expect(checkSessionForWrite(v2({ sessionId: ' a ' })).sessionId).toBe(' a ');
  });
});

describe('parseSessionJson names the session', () => {
  it('names the session the caller read the data under, else the one the JSON holds, and keeps path, problem and cause', () => {
    const stored = v2({ sessionId: 'chat-42', state: { app: { n: Number.NaN } } });
    const own = thrown(() => parseSessionJson(stored)) as SessionStateError;
    expect(own.sessionId).toBe('chat-42');
    expect(own.message).toBe(`Invalid session data of session "chat-42" at $.state.app.n: ${own.problem}`);
    const read = thrown(() => parseSessionJson(stored, { sessionId: 'key-7' })) as SessionStateError;
    expect(read.sessionId).toBe('key-7');
    expect(read.path).toBe('$.state.app.n');
    expect(read.message).toContain('of session "key-7" at $.state.app.n');
    const text = thrown(() => parseSessionJson('{not json', { sessionId: 'key-8' })) as SessionStateError;
    expect(text.message).toMatch(/^Invalid session data of session "key-8" at \$: is not valid JSON/);
    expect(text.cause).toBeInstanceOf(SyntaxError);
    // Nothing to name: the message stays as it was.
    const anonymous = thrown(() => parseSessionJson(42)) as SessionStateError;
    expect(anonymous.sessionId).toBeUndefined();
    expect(anonymous.message).toMatch(/^Invalid session data at \$: /);
  });

  it('shortens a long session id in the message and keeps it whole in the field', () => {
    const id = 'k'.repeat(500);
    const error = thrown(() => parseSessionJson(v2({ sessionId: id, state: { app: { n: Number.NaN } } }))) as SessionStateError;
    expect(error.sessionId).toBe(id);
    expect(error.message).toContain(`of session "${'k'.repeat(80)}…(500 chars)"`);
  });
});

describe('AgentSession pending approvals', () => {
  const pending = {
    approvals: [{ callId: 'c1', toolName: 'transfer', arguments: '{"amount":300}' }],
    messages: [Message.tool({ type: 'function-result', callId: 'c2', name: 'balance', result: 500 })],
  };
  const base = v2({ sessionId: 's1' });

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

describe('AgentSession version 1', () => {
  it('migrates on restore: version 2, both times the time of the migration, no other metadata', () => {
    const v1 = { type: 'ctx.session', version: 1, sessionId: 'old', serviceSessionId: 'resp_1', state: { app: { n: 1 } } };
    for (const input of [v1, JSON.stringify(v1)]) {
      const before = new Date().toISOString();
      const session = agent.restoreSession(input);
      const after = new Date().toISOString();
      const json = session.toJSON();
      expect(json).toEqual({ ...v1, version: 2, metadata: { createdAt: json.metadata.createdAt, updatedAt: json.metadata.createdAt } });
      expect(
        json.metadata.createdAt >= before && json.metadata.createdAt <= after,
        `${json.metadata.createdAt} in [${before}, ${after}]`,
      ).toBe(true);
      expect(parseSessionJson(input).version).toBe(2);
    }
  });

  it('ignores metadata in a version-1 session (version 1 had none) and checks everything else', () => {
    const session = agent.restoreSession({ type: 'ctx.session', version: 1, sessionId: 'a', metadata: { title: 5 }, state: {} });
    expect(session.metadata.title).toBeUndefined();
    expectStateError({ type: 'ctx.session', version: 1, sessionId: 'a', state: [] }, '$.state');
  });

  it('a store write of a version-1 session stores version 2', () => {
    const checked = checkSessionForWrite({ type: 'ctx.session', version: 1, sessionId: 'a', state: {} });
    expect(checked.version).toBe(2);
    expect(Object.keys(checked.metadata).sort()).toEqual(['createdAt', 'updatedAt']);
  });
});

describe('AgentSession metadata checks', () => {
  const long = (n: number) => 'x'.repeat(n);
  it.each([
    ['missing metadata', { metadata: undefined }, '$.metadata'],
    ['metadata an array', { metadata: [] }, '$.metadata'],
    ['a missing createdAt', { metadata: { updatedAt: TIMES.updatedAt } }, '$.metadata.createdAt'],
    ['a date without time', { metadata: { ...TIMES, createdAt: '2026-01-31' } }, '$.metadata.createdAt'],
    ['a time without milliseconds', { metadata: { ...TIMES, updatedAt: '2026-01-31T12:00:00Z' } }, '$.metadata.updatedAt'],
    ['a time with an offset', { metadata: { ...TIMES, updatedAt: '2026-01-31T12:00:00.000+01:00' } }, '$.metadata.updatedAt'],
    ['February 30', { metadata: { ...TIMES, updatedAt: '2026-02-30T00:00:00.000Z' } }, '$.metadata.updatedAt'],
    ['24:00', { metadata: { ...TIMES, updatedAt: '2026-01-01T24:00:00.000Z' } }, '$.metadata.updatedAt'],
    ['a number as time', { metadata: { ...TIMES, updatedAt: 1767225600000 } }, '$.metadata.updatedAt'],
    ['a title of 201 characters', { metadata: { ...TIMES, title: long(201) } }, '$.metadata.title'],
    ['a title that is a number', { metadata: { ...TIMES, title: 5 } }, '$.metadata.title'],
    ['an empty userId', { metadata: { ...TIMES, userId: '' } }, '$.metadata.userId'],
    ['a blank userId', { metadata: { ...TIMES, userId: ' \n' } }, '$.metadata.userId'],
    ['a userId of 513 characters', { metadata: { ...TIMES, userId: long(513) } }, '$.metadata.userId'],
    ['custom an array', { metadata: { ...TIMES, custom: [1] } }, '$.metadata.custom'],
    ['custom over 8 KiB', { metadata: { ...TIMES, custom: { s: long(8200) } } }, '$.metadata.custom'],
    ['custom over 8 KiB in UTF-8 only', { metadata: { ...TIMES, custom: { s: '🦜'.repeat(2100) } } }, '$.metadata.custom'],
    ['custom holding NaN', { metadata: { ...TIMES, custom: { a: { n: Number.NaN } } } }, '$.metadata.custom.a.n'],
    ['custom holding a Date', { metadata: { ...TIMES, custom: { at: new Date(0) } } }, '$.metadata.custom.at'],
    ['forkedFrom a string', { metadata: { ...TIMES, forkedFrom: 'parent' } }, '$.metadata.forkedFrom'],
    ['forkedFrom without sessionId', { metadata: { ...TIMES, forkedFrom: { messageId: 'm' } } }, '$.metadata.forkedFrom'],
    ['forkedFrom with an empty sessionId', { metadata: { ...TIMES, forkedFrom: { sessionId: '' } } }, '$.metadata.forkedFrom'],
    [
      'forkedFrom with a numeric messageId',
      { metadata: { ...TIMES, forkedFrom: { sessionId: 'p', messageId: 1 } } },
      '$.metadata.forkedFrom',
    ],
  ] as [string, Record<string, unknown>, string][])('%s is a SessionStateError at %s', (_, fields, path) => {
    expectStateError(v2(fields), path);
    // NaN and a Date do not survive JSON text: only the object form holds them.
    if (!path.startsWith('$.metadata.custom.')) expectStateError(JSON.stringify(v2(fields)), path);
  });

  it('accepts the limits exactly, keeps null optional fields out, and drops unknown fields', () => {
    const metadata = {
      createdAt: '0000-01-01T00:00:00.000Z',
      updatedAt: '9999-12-31T23:59:59.999Z',
      title: long(200),
      userId: long(512),
      custom: { s: long(8184) }, // {"s":"…"} is 8192 bytes
      forkedFrom: { sessionId: 'p', extra: true },
      unknown: 'dropped',
    };
    expect(JSON.stringify(metadata.custom)).toHaveLength(8192);
    const restored = agent.restoreSession(v2({ metadata })).metadata;
    expect(restored).toEqual({ ...metadata, forkedFrom: { sessionId: 'p' }, unknown: undefined });
    expect(Object.keys(restored)).not.toContain('unknown');
    const nulls = agent.restoreSession(v2({ metadata: { ...TIMES, title: null, userId: null, custom: null, forkedFrom: null } }));
    expect(nulls.metadata).toEqual(TIMES);
    expect(Object.keys(nulls.metadata).sort()).toEqual(['createdAt', 'updatedAt']);
  });

  it('createSession with a bad userId, title or custom is a ConfigurationError naming the field', () => {
    const bad: [Record<string, unknown>, string][] = [
      [{ userId: '' }, 'userId must be a non-blank string'],
      [{ userId: '  ' }, 'userId must be a non-blank string'],
      [{ userId: long(513) }, 'userId must be a non-blank string of at most 512 characters'],
      [{ userId: 42 }, 'userId must be a non-blank string'],
      [{ title: long(201) }, 'title must be a string of at most 200 characters'],
      [{ title: ['t'] }, 'title must be a string'],
      [{ custom: [1, 2] }, 'custom must be a JSON object'],
      [{ custom: { n: Number.POSITIVE_INFINITY } }, 'custom.n '],
      [{ custom: { m: new Map() } }, 'custom.m '],
      [{ custom: { s: long(9000) } }, 'custom must be at most 8192 bytes'],
    ];
    for (const [init, message] of bad) {
      const error = thrown(() => agent.createSession(init as never));
      expect(ConfigurationError.isInstance(error), `createSession(${JSON.stringify(init)?.slice(0, 60)}) threw ${String(error)}`).toBe(
        true,
      );
      expect((error as Error).message).toContain(message);
      expect((error as Error).message).toContain('createSession');
      expect((error as Error).message).not.toContain('$.');
    }
  });

  it('new AgentSession({ metadata }) checks and copies the metadata it is given', () => {
    const metadata = { ...TIMES, title: 'fork', custom: { n: 1 }, forkedFrom: { sessionId: 'p' } };
    const session = new AgentSession({ metadata });
    metadata.custom.n = 2;
    expect(session.metadata).toEqual({ ...TIMES, title: 'fork', custom: { n: 1 }, forkedFrom: { sessionId: 'p' } });
    const error = thrown(() => new AgentSession({ metadata: { ...TIMES, title: long(201) } }));
    expect(ConfigurationError.isInstance(error), String(error)).toBe(true);
    expect((error as Error).message).toContain('title must be a string of at most 200 characters');
    expect(ConfigurationError.isInstance(thrown(() => new AgentSession({ metadata: { ...TIMES, updatedAt: 'now' } })))).toBe(true);
  });

  it('createSession keeps its own copy of custom', () => {
    const custom = { plan: 'pro' };
    const session = agent.createSession({ custom });
    custom.plan = 'free';
    expect(session.metadata.custom).toEqual({ plan: 'pro' });
  });
});

describe('AgentSession metadata through a run', () => {
  it('the agent sets metadata.updatedAt when a run succeeds; a failed run changes nothing', async () => {
    const client = new ScriptedChatClient({ replies: ['ok', { error: new Error('model down') }] });
    const runner = createAgent({ client });
    const session = runner.createSession({ userId: 'u1', title: 'T', custom: { k: 1 } });
    const { createdAt } = session.metadata;
    await new Promise((resolve) => setTimeout(resolve, 3));
    const start = new Date().toISOString();
    await runner.run('hello', { session });
    const end = new Date().toISOString();
    const first = session.metadata.updatedAt;
    expect(first >= start && first <= end, `${first} in [${start}, ${end}]`).toBe(true);
    expect(session.metadata).toEqual({ createdAt, updatedAt: first, userId: 'u1', title: 'T', custom: { k: 1 } });

    await new Promise((resolve) => setTimeout(resolve, 3));
    await expect(runner.run('again', { session })).rejects.toThrow('model down');
    expect(session.metadata.updatedAt).toBe(first);
    expect(session.metadata.createdAt).toBe(createdAt);
    expect(runner.restoreSession(JSON.stringify(session)).metadata).toEqual(session.metadata);
  });
});
