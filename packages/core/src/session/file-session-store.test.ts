import { createHash } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, readFile, rename, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BackendUnavailableError, ConcurrencyError, ConfigurationError, SessionStateError } from '../errors.js';
import { Message } from '../messages/message.js';
import { createAgent } from '../run/create-agent.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import type { SessionJson, SessionMetadata } from '../contracts/session.js';
import { FileSessionStore, type FileSessionStoreEvent, sessionFileName } from './file-session-store.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ctx-store-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('FileSessionStore', () => {
  it('continues a conversation across agents through the store', async () => {
    const client = new ScriptedChatClient({ replies: ['one', 'two'] });
    const first = createAgent({ client, sessionStore: new FileSessionStore({ directory: dir }) });
    expect(await first.getSession('user:7')).toBeUndefined();
    const session = first.createSession({ sessionId: 'user:7' });
    await first.run('hello', { session });
    await first.saveSession(session);
    const store = new FileSessionStore({ directory: dir });
    const second = createAgent({ client, sessionStore: store });
    const again = (await second.getSession('user:7'))!;
    await second.run('and again', { session: again });
    expect(client.calls[1]!.messages.map((m) => Message.text(m))).toEqual(['hello', 'one', 'and again']);
    await second.saveSession(again);
    // The first agent's copy is stale now: saving it merges, and it takes the second agent's turn.
    await first.saveSession(session);
    const stored = await store.get('user:7');
    expect(session.etag).toBe(stored?.etag);
    expect((session.state.memory!.messages as Message[]).map((m) => Message.text(m))).toEqual(['hello', 'one', 'and again', 'two']);
    expect(stored?.session.state).toEqual(JSON.parse(JSON.stringify(session.state)));
  });

  it('writes atomically: no temporary or lock files are left behind, files are named by the encoded id', async () => {
    const store = new FileSessionStore({ directory: dir });
    const agent = createAgent({ client: new ScriptedChatClient({ replies: [] }), sessionStore: store });
    await agent.saveSession(agent.createSession({ sessionId: '../../etc/passwd' }));
    const files = await readdir(dir);
    expect(files).toHaveLength(1);
    expect(files[0]).toBe('session-%2E%2E%2F%2E%2E%2Fetc%2Fpasswd.json');
  });

  it('serializes concurrent writers: exactly one of many conditional writes wins', async () => {
    const stores = Array.from({ length: 8 }, () => new FileSessionStore({ directory: dir }));
    const json = sessionOf('s');
    const etag = await stores[0]!.set(json);
    const results = await Promise.allSettled(stores.map((s, i) => s.set({ ...json, state: { w: { i } } }, { ifMatch: etag })));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(results.filter((r) => r.status === 'rejected' && ConcurrencyError.isInstance(r.reason))).toHaveLength(7);
    const winner = results.findIndex((r) => r.status === 'fulfilled');
    expect((await stores[0]!.get('s'))!.session.state).toEqual({ w: { i: winner } });
  });

  it('reports a corrupt file as a SessionStateError naming the file', async () => {
    const store = new FileSessionStore({ directory: dir });
    await store.set(sessionOf('x'));
    const [file] = await readdir(dir);
    await writeFile(join(dir, file!), '{"etag":"1","session":{"type":"ctx.session","version":1,"sessionId":"x","state":{"a":3}}}');
    const error = await store.get('x').catch((e: unknown) => e);
    expect(SessionStateError.isInstance(error)).toBe(true);
    expect((error as SessionStateError).path).toBe('$.state.a');
    expect((error as Error).message).toContain(file);
    await writeFile(join(dir, file!), '{trunc');
    await expect(store.get('x')).rejects.toThrow(/not valid JSON/);
    expect(await readFile(join(dir, file!), 'utf8')).toBe('{trunc');
  });

  it('times out on a held lock with a typed error and breaks stale locks', async () => {
    const store = new FileSessionStore({ directory: dir, lockTimeoutMs: 50 });
    const json = sessionOf('locked');
    await store.set(json);
    const [file] = await readdir(dir);
    await writeFile(join(dir, `${file}.lock`), '');
    await expect(store.set(json)).rejects.toSatisfy((e) => BackendUnavailableError.isInstance(e));
    const old = new Date(Date.now() - 60_000);
    await utimes(join(dir, `${file}.lock`), old, old);
    await expect(store.set(json)).resolves.toBeTypeOf('string');
  });
});

describe('FileSessionStore recovery', () => {
  it('deletes a session whose file is corrupt', async () => {
    const store = new FileSessionStore({ directory: dir });
    await store.set(sessionOf('bad'));
    const [file] = await readdir(dir);
    await writeFile(join(dir, file!), 'garbage');
    await expect(store.get('bad')).rejects.toThrow(SessionStateError);
    expect(await store.delete('bad')).toBe(true);
    expect(await store.get('bad')).toBeUndefined();
    expect(await store.delete('bad')).toBe(false);
  });

  it('breaks at once a lock left by a process that no longer runs', async () => {
    const { spawnSync } = await import('node:child_process');
    const { hostname } = await import('node:os');
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString();
    const store = new FileSessionStore({ directory: dir, lockTimeoutMs: 100 });
    const json = sessionOf('crashed');
    await store.set(json);
    const [file] = await readdir(dir);
    await writeFile(join(dir, `${file}.lock`), `${hostname()} ${dead}`);
    await expect(store.set(json)).resolves.toBeTypeOf('string');
    await writeFile(join(dir, `${file}.lock`), `${hostname()} ${process.ppid}`); // alive: must wait
    await expect(store.set(json)).rejects.toSatisfy((e) => BackendUnavailableError.isInstance(e));
  });
});

const sha256Hex = (text: string, encoding: 'utf8' | 'latin1' = 'latin1') => createHash('sha256').update(text, encoding).digest('hex');
const fileOf = (sessionId: string) => join(dir, sessionFileName(sessionId, sha256Hex));
const legacyFileOf = (sessionId: string) => join(dir, `${sha256Hex(sessionId, 'utf8')}.json`);
const TIMES = { createdAt: '2026-01-31T12:00:00.000Z', updatedAt: '2026-02-01T08:30:15.123Z' };
const sessionOf = (sessionId: string, marker = 'v1', metadata: SessionMetadata = TIMES): SessionJson => ({
  type: 'ctx.session',
  version: 2,
  sessionId,
  metadata,
  state: { app: { marker } },
});
/** A session as versions before format 2 wrote it: no metadata. */
const version1Of = (sessionId: string, marker = 'v1') => ({ type: 'ctx.session', version: 1, sessionId, state: { app: { marker } } });
/** When the files of earlier versions were last written (set with utimes), and the metadata they read with. */
const WRITTEN = new Date('2025-05-05T10:00:00.000Z');
const WRITTEN_TIMES = { createdAt: WRITTEN.toISOString(), updatedAt: WRITTEN.toISOString() };

/** Rejects unless `promise` fails with an error `is` accepts whose message contains every one of `parts`. */
async function expectFailure(promise: Promise<unknown>, is: (e: unknown) => boolean, ...parts: string[]): Promise<Error> {
  const error = await promise.then(
    (value) => new Error(`resolved to ${JSON.stringify(value)}`),
    (e: unknown) => e as Error,
  );
  expect(is(error), String(error)).toBe(true);
  for (const part of parts) expect(error.message).toContain(part);
  return error;
}

describe('FileSessionStore ids', () => {
  it('refuses empty and whitespace-only session ids with a ConfigurationError before touching the disk', async () => {
    const directory = join(dir, 'not-created');
    const store = new FileSessionStore({ directory });
    for (const id of ['', ' ', '\t\n']) {
      await expectFailure(store.get(id), ConfigurationError.isInstance, 'session id');
      await expectFailure(store.delete(id), ConfigurationError.isInstance, 'session id');
      await expectFailure(store.set(sessionOf(id)), ConfigurationError.isInstance, 'session id');
    }
    expect(await readdir(dir)).toEqual([]);
  });

  it('gives ids that differ only in a lone surrogate (or U+FFFD) files of their own: deleting one leaves the others', async () => {
    const store = new FileSessionStore({ directory: dir });
    const ids = ['chat\uD800', 'chat\uD801', 'chat\uFFFD', 'chat\uDC00x', 'Chat\uD800'];
    for (const id of ids) await store.set(sessionOf(id, `for ${id}`));
    expect(await readdir(dir)).toHaveLength(ids.length);
    expect(await store.delete('chat\uD800')).toBe(true);
    expect(await store.get('chat\uD800')).toBeUndefined();
    for (const id of ids.slice(1)) expect((await store.get(id))?.session).toEqual(sessionOf(id, `for ${id}`));
  });

  it('names files with lower-case letters, digits, _, -, % escapes and hex only, and hashes long ids', async () => {
    const store = new FileSessionStore({ directory: dir });
    const long = 'Ü'.repeat(300);
    for (const id of ['CON', 'con', 'a.b', '.hidden', 'trailing. ', 'x'.repeat(150), 'x'.repeat(151), long]) await store.set(sessionOf(id));
    const names = (await readdir(dir)).sort();
    expect(names).toHaveLength(8);
    for (const name of names) {
      expect(name).toMatch(/^session-(~[0-9a-f]{64}|([a-z0-9_-]|%[0-9A-F]{2}|%u[0-9A-F]{4})+)\.json$/);
      expect(Buffer.byteLength(name)).toBeLessThan(200);
    }
    expect(names).toContain('session-%43%4F%4E.json');
    expect(names).toContain('session-con.json');
    expect(names).toContain(`session-${'x'.repeat(150)}.json`);
    expect((await store.get(long))?.session.sessionId).toBe(long);
  });
});

describe('FileSessionStore files of earlier versions (named by the SHA-256 of the id)', () => {
  /** Writes a file as an earlier version did, last written at `WRITTEN`. */
  const writeLegacy = async (file: string, session: unknown, etag = 'legacy-etag') => {
    await writeFile(file, JSON.stringify({ etag, session }));
    await utimes(file, WRITTEN, WRITTEN);
  };

  it('reads a legacy file of a version-1 session as version 2, its times the time the file was written, and moves it to its new name', async () => {
    await writeLegacy(legacyFileOf('user:7'), version1Of('user:7', 'old'));
    const store = new FileSessionStore({ directory: dir });
    const migrated = sessionOf('user:7', 'old', WRITTEN_TIMES);
    expect(await store.get('user:7')).toEqual({ session: migrated, etag: 'legacy-etag' });
    expect(await store.get('user:7'), 'the times stay put on later reads').toEqual({ session: migrated, etag: 'legacy-etag' });
    expect(await store.list()).toEqual({ sessions: [{ sessionId: 'user:7', metadata: WRITTEN_TIMES }], total: 1 });
    expect(await readdir(dir)).toEqual(['session-user%3A7.json']);
    const etag = await store.set(sessionOf('user:7', 'new'), { ifMatch: 'legacy-etag' });
    expect(await store.get('user:7')).toEqual({ session: sessionOf('user:7', 'new'), etag });
  });

  it('set with ifMatch checks against a legacy file and replaces it; delete removes one', async () => {
    await writeLegacy(legacyFileOf('a'), version1Of('a', 'old'));
    await writeLegacy(legacyFileOf('b'), version1Of('b', 'old'));
    const store = new FileSessionStore({ directory: dir });
    await expectFailure(store.set(sessionOf('a', 'new'), { ifMatch: null }), ConcurrencyError.isInstance);
    await store.set(sessionOf('a', 'new'), { ifMatch: 'legacy-etag' });
    expect((await readdir(dir)).sort()).toEqual([`${sha256Hex('b', 'utf8')}.json`, 'session-a.json']);
    expect(await store.delete('b')).toBe(true);
    expect(await store.get('b')).toBeUndefined();
    expect(await readdir(dir)).toEqual(['session-a.json']);
  });

  it("leaves alone a legacy file that holds another id (ids that shared a file before), and never deletes another user's session", async () => {
    // "x\uD800" and "x\uFFFD" have the same UTF-8 bytes, so the old naming gave them one file.
    expect(legacyFileOf('x\uD800')).toBe(legacyFileOf('x\uFFFD'));
    await writeLegacy(legacyFileOf('x\uFFFD'), version1Of('x\uFFFD', 'owner'));
    const store = new FileSessionStore({ directory: dir });
    expect(await store.get('x\uD800')).toBeUndefined();
    expect(await store.delete('x\uD800')).toBe(false);
    await store.set(sessionOf('x\uD800', 'other'), { ifMatch: null });
    expect((await store.get('x\uFFFD'))?.session).toEqual(sessionOf('x\uFFFD', 'owner', WRITTEN_TIMES));
    expect((await store.get('x\uD800'))?.session).toEqual(sessionOf('x\uD800', 'other'));
  });
});

const cyclic: Record<string, unknown> = {};
cyclic.self = cyclic;
let deep: unknown = 1;
for (let i = 0; i < 1000; i++) deep = [deep];

/** State that JSON would silently change or that no reader accepts, with the path `set` must name. */
const UNSTORABLE: [string, string, () => Record<string, unknown>][] = [
  ['NaN', '$.state.app.n', () => ({ app: { n: Number.NaN } })],
  ['Infinity', '$.state.app.list[1]', () => ({ app: { list: [1, Number.POSITIVE_INFINITY] } })],
  ['a Map', '$.state.app.m', () => ({ app: { m: new Map([['k', 1]]) } })],
  ['a Date', '$.state.app.at', () => ({ app: { at: new Date(0) } })],
  ['undefined', '$.state.app.u', () => ({ app: { u: undefined } })],
  ['a function', '$.state.app.f', () => ({ app: { f: () => 1 } })],
  ['a class instance', '$.state.app.c', () => ({ app: { c: new (class Point {})() } })],
  ['an array state slot', '$.state.app', () => ({ app: [1, 2] })],
  ['a cycle', '$.state.app.c.self', () => ({ app: { c: cyclic } })],
  ['nesting deeper than 128 levels', `$.state.app.deep${'[0]'.repeat(125)}`, () => ({ app: { deep } })],
];

describe('FileSessionStore refuses what it could not give back', () => {
  it.each(UNSTORABLE)('set of a session holding %s is a SessionStateError at %s, and nothing is written', async (_, path, state) => {
    const store = new FileSessionStore({ directory: dir });
    const etag = await store.set(sessionOf('s'));
    const before = await readdir(dir);
    for (const sessionId of ['s', 'fresh']) {
      const error = await expectFailure(
        store.set({ ...sessionOf(sessionId), state: state() } as SessionJson),
        SessionStateError.isInstance,
      );
      expect((error as SessionStateError).path).toBe(path);
    }
    expect(await readdir(dir)).toEqual(before);
    expect(await store.get('s')).toEqual({ session: sessionOf('s'), etag });
    expect(await store.get('fresh')).toBeUndefined();
  });

  it('reads a file nested thousands of levels deep as a SessionStateError naming the path, not a RangeError', async () => {
    const store = new FileSessionStore({ directory: dir });
    const levels = 5_000;
    const session = `{"type":"ctx.session","version":1,"sessionId":"deep","state":{"app":${'{"d":'.repeat(levels)}1${'}'.repeat(levels)}}}`;
    await writeFile(fileOf('deep'), `{"etag":"e","session":${session}}`);
    const error = await expectFailure(store.get('deep'), SessionStateError.isInstance, 'nested deeper than 128 levels');
    expect((error as SessionStateError).path).toBe(`$.state.app${'.d'.repeat(126)}`);
  });
});

describe('FileSessionStore operator problems', () => {
  it('maps a directory where the session file should be to a BackendUnavailableError naming the session and the path', async () => {
    const store = new FileSessionStore({ directory: dir });
    await mkdir(fileOf('blocked'));
    for (const attempt of [() => store.get('blocked'), () => store.set(sessionOf('blocked')), () => store.delete('blocked')]) {
      const error = await expectFailure(attempt(), BackendUnavailableError.isInstance, '"blocked"', fileOf('blocked'));
      expect((error as BackendUnavailableError).backend).toBe('file');
    }
  });

  it.skipIf(process.platform === 'win32')(
    'maps a file it may not read to a BackendUnavailableError that says to check permissions',
    async () => {
      const store = new FileSessionStore({ directory: dir });
      await store.set(sessionOf('locked-out'));
      await chmod(fileOf('locked-out'), 0o000);
      await asUnprivilegedUser(async () => {
        // The file system itself refuses the read: the store gets EACCES, not a stand-in error.
        await expect(readFile(fileOf('locked-out'))).rejects.toMatchObject({ code: 'EACCES' });
        await expectFailure(store.get('locked-out'), BackendUnavailableError.isInstance, '"locked-out"', 'permissions');
      });
    },
  );

  it('maps a store directory it cannot create to a BackendUnavailableError', async () => {
    await writeFile(join(dir, 'a-file'), '');
    const store = new FileSessionStore({ directory: join(dir, 'a-file', 'sessions') });
    await expectFailure(store.get('x'), BackendUnavailableError.isInstance, join(dir, 'a-file', 'sessions'));
  });

  it('refuses to follow a symbolic link at a session path, in get, set and delete, and leaves its target alone', async () => {
    const outside = await mkdtemp(join(tmpdir(), 'ctx-outside-'));
    try {
      const target = join(outside, 'secret.json');
      const content = JSON.stringify({ etag: 'e', session: sessionOf('linked') });
      await writeFile(target, content);
      await symlink(target, fileOf('linked'));
      const store = new FileSessionStore({ directory: dir });
      for (const attempt of [() => store.get('linked'), () => store.set(sessionOf('linked', 'overwrite')), () => store.delete('linked')])
        await expectFailure(attempt(), ConfigurationError.isInstance, 'symbolic link', fileOf('linked'));
      expect(await readFile(target, 'utf8')).toBe(content);
      expect(await readdir(dir)).toEqual([sessionFileName('linked', sha256Hex)]);
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it("onCorrupt 'quarantine' moves a corrupt file aside, reports it without its content, and lets the session start afresh", async () => {
    const events: FileSessionStoreEvent[] = [];
    const store = new FileSessionStore({ directory: dir, onCorrupt: 'quarantine', onEvent: (e) => events.push(e) });
    const agent = createAgent({ client: new ScriptedChatClient({ replies: ['fresh answer'] }), sessionStore: store });
    await store.set(sessionOf('broken'));
    const file = fileOf('broken');
    await writeFile(
      file,
      '{"etag":"1","session":{"type":"ctx.session","version":1,"sessionId":"broken","state":{"memory":"secret text"}}}',
    );
    expect(await agent.getSession('broken')).toBeUndefined();
    const session = agent.createSession({ sessionId: 'broken' });
    expect(events).toHaveLength(1);
    const [event] = events;
    expect(event).toEqual({
      type: 'session-quarantined',
      sessionId: 'broken',
      file,
      quarantinedAs: expect.stringMatching(/\.json\.corrupt-\d{8}T\d{9}Z-[0-9a-f]{8}$/),
      reason: 'invalid-session',
      path: '$.state.memory',
    });
    expect(JSON.stringify(event)).not.toContain('secret text');
    if (event?.type !== 'session-quarantined') throw new Error(`expected a quarantine event, got ${event?.type}`);
    expect(await readFile(event.quarantinedAs, 'utf8')).toContain('secret text');
    await agent.run('hello', { session });
    await agent.saveSession(session);
    expect((await store.get('broken'))?.session.state.memory).toBeDefined();

    await writeFile(file, '{trunc');
    expect(await store.get('broken')).toBeUndefined();
    await writeFile(file, JSON.stringify({ etag: 'e', session: sessionOf('someone else') }));
    expect(await store.get('broken')).toBeUndefined();
    expect(events.map((e) => e.reason)).toEqual(['invalid-session', 'invalid-json', 'wrong-session-id']);
    expect((await readdir(dir)).filter((name) => name.includes('.corrupt-'))).toHaveLength(3);
  });

  it("onCorrupt 'throw' (the default) keeps the file and throws until it is fixed or deleted", async () => {
    const store = new FileSessionStore({ directory: dir });
    await store.set(sessionOf('kept'));
    await writeFile(fileOf('kept'), 'garbage');
    await expectFailure(store.get('kept'), SessionStateError.isInstance, fileOf('kept'), 'onCorrupt');
    await expectFailure(store.set(sessionOf('kept'), { ifMatch: null }), SessionStateError.isInstance);
    expect(await readFile(fileOf('kept'), 'utf8')).toBe('garbage');
  });

  it('refuses bad options with a ConfigurationError', () => {
    for (const options of [{ directory: '' }, { directory: dir, lockTimeoutMs: -1 }, { directory: dir, onCorrupt: 'ignore' }])
      expect(() => new FileSessionStore(options as never)).toThrow(ConfigurationError);
  });
});

describe('FileSessionStore.list', () => {
  const at = (minute: number, userId?: string): SessionMetadata => {
    const time = new Date(Date.UTC(2030, 0, 1, 0, minute)).toISOString();
    return { createdAt: time, updatedAt: time, ...(userId ? { userId } : {}) };
  };
  const listed = async (store: FileSessionStore, userId?: string) =>
    (await store.list({ limit: 100, ...(userId ? { userId } : {}) })).sessions.map((s) => s.sessionId);

  it('lists the directory newest first; legacy files count until the session has a file of its own; other files are ignored', async () => {
    const store = new FileSessionStore({ directory: dir });
    await store.set(sessionOf('a', 'x', at(1, 'u')));
    await store.set(sessionOf('b', 'x', at(3, 'u')));
    await store.set(sessionOf('c', 'x', at(2)));
    await writeFile(legacyFileOf('old'), JSON.stringify({ etag: 'e', session: version1Of('old') }));
    await utimes(legacyFileOf('old'), WRITTEN, WRITTEN);
    // An id with a file of its own and a stale legacy file: the legacy one is not listed.
    await writeFile(legacyFileOf('a'), JSON.stringify({ etag: 'e', session: version1Of('a') }));
    // A legacy file under another id's name (ids that shared a file before) is left alone, as get does.
    await writeFile(join(dir, `${sha256Hex('not the id inside', 'utf8')}.json`), JSON.stringify({ etag: 'e', session: version1Of('z') }));
    for (const name of [
      `${sessionFileName('a', sha256Hex)}.lock`,
      `${sessionFileName('a', sha256Hex)}.1a2b.tmp`,
      'notes.txt',
      'session-q.json.corrupt-1',
    ])
      await writeFile(join(dir, name), 'not a session');
    const events: FileSessionStoreEvent[] = [];
    const watched = new FileSessionStore({ directory: dir, onEvent: (e) => events.push(e) });
    expect(await listed(watched)).toEqual(['b', 'c', 'a', 'old']);
    expect((await watched.list()).total).toBe(4);
    expect(await listed(watched, 'u')).toEqual(['b', 'a']);
    expect((await watched.list({ userId: 'u' })).sessions[0]).toEqual({ sessionId: 'b', metadata: at(3, 'u') });
    expect(events).toEqual([]);
    expect(await listed(store)).toEqual(['b', 'c', 'a', 'old']);
  });

  it('skips and reports files it cannot read as their session, never failing the listing; the files stay', async () => {
    const events: FileSessionStoreEvent[] = [];
    const store = new FileSessionStore({ directory: dir, onEvent: (e) => events.push(e) });
    for (const [id, minute] of [
      ['good', 1],
      ['json', 2],
      ['session', 3],
      ['moved', 4],
      ['dir', 5],
      ['link', 6],
    ] as const)
      await store.set(sessionOf(id, 'x', at(minute)));
    await writeFile(fileOf('json'), '{trunc');
    await writeFile(
      fileOf('session'),
      JSON.stringify({ etag: 'e', session: { ...sessionOf('session'), metadata: { ...TIMES, title: 7 } } }),
    );
    await writeFile(fileOf('moved'), JSON.stringify({ etag: 'e', session: sessionOf('another id') }));
    await rm(fileOf('dir'));
    await mkdir(fileOf('dir'));
    await rm(fileOf('link'));
    await symlink(fileOf('good'), fileOf('link'));
    expect(await listed(store)).toEqual(['good']);
    const byFile = Object.fromEntries(events.map(({ file, ...rest }) => [file, rest]));
    expect(byFile[fileOf('json')]).toEqual({ type: 'session-skipped', reason: 'invalid-json', path: '$' });
    expect(byFile[fileOf('session')]).toEqual({ type: 'session-skipped', reason: 'invalid-session', path: '$.metadata.title' });
    expect(byFile[fileOf('moved')]).toEqual({ type: 'session-skipped', reason: 'wrong-session-id', path: '$.sessionId' });
    expect(byFile[fileOf('dir')]).toMatchObject({ type: 'session-skipped', reason: 'unreadable', path: '$' });
    expect(byFile[fileOf('link')]).toMatchObject({
      type: 'session-skipped',
      reason: 'unreadable',
      cause: expect.stringContaining('symbolic link'),
    });
    expect(events).toHaveLength(5);
    expect(await readFile(fileOf('json'), 'utf8')).toBe('{trunc');
    // Fixed files are listed again.
    await store.delete('json');
    await store.set(sessionOf('json', 'x', at(9)));
    expect(await listed(store)).toEqual(['json', 'good']);
  });

  it('lists an empty page for a directory that does not exist yet, and creates nothing', async () => {
    const directory = join(dir, 'not-yet');
    expect(await new FileSessionStore({ directory }).list()).toEqual({ sessions: [], total: 0 });
    expect(await readdir(dir)).toEqual([]);
  });

  it('rejects with the abort reason when its signal is aborted', async () => {
    const store = new FileSessionStore({ directory: dir });
    await store.set(sessionOf('a'));
    const reason = new Error('stop');
    await expect(store.list({ signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
  });

  it('reads a file again only when it changed: a write through any store is seen, an edit in place that keeps size and time is not', async () => {
    const store = new FileSessionStore({ directory: dir });
    await store.set(sessionOf('a', 'x', { ...at(1), title: 'first' }));
    expect((await store.list()).sessions[0]?.metadata.title).toBe('first');
    await new FileSessionStore({ directory: dir }).set(sessionOf('a', 'x', { ...at(1), title: 'other' }));
    expect((await store.list()).sessions[0]?.metadata.title, 'a write renames a new file into place').toBe('other');
    const file = fileOf('a');
    await utimes(file, WRITTEN, WRITTEN);
    expect((await store.list()).sessions[0]?.metadata.title).toBe('other');
    await writeFile(file, (await readFile(file, 'utf8')).replace('"other"', '"edits"'));
    await utimes(file, WRITTEN, WRITTEN);
    expect((await store.list()).sessions[0]?.metadata.title, 'known by inode, size and time: not read again').toBe('other');
    await rename(file, `${file}.moved`);
    await rename(`${file}.moved`, file);
    await utimes(file, new Date(), new Date());
    expect((await store.list()).sessions[0]?.metadata.title).toBe('edits');
  });

  it('lists every session exactly once while each is saved again and again', async () => {
    const stores = [new FileSessionStore({ directory: dir }), new FileSessionStore({ directory: dir })];
    const ids = Array.from({ length: 30 }, (_, i) => `s${i}`);
    for (const [i, id] of ids.entries()) await stores[0]!.set(sessionOf(id, 'x', at(i, 'u')));
    let writing = true;
    const writer = async (store: FileSessionStore, offset: number) => {
      for (let round = 0; writing && round < 200; round++) {
        const id = ids[(round * 7 + offset) % ids.length]!;
        await store.set(sessionOf(id, `round ${round}`, at(100 + round, 'u')));
      }
    };
    const writers = [writer(stores[0]!, 0), writer(stores[1]!, 3)];
    try {
      for (let i = 0; i < 20; i++) {
        const page = await stores[i % 2]!.list({ userId: 'u', limit: 100 });
        const listedIds = page.sessions.map((s) => s.sessionId);
        expect(listedIds.slice().sort()).toEqual(ids.slice().sort());
        expect(page.total).toBe(ids.length);
      }
    } finally {
      writing = false;
      await Promise.all(writers);
    }
  });
});

/**
 * Runs `body` as a user the file system holds to file permissions. Root reads any file, so a root
 * process (CI runs as root) runs it with the effective user id of `nobody` (65534), and the store
 * directory open to others for the path lookup, then takes root back.
 */
async function asUnprivilegedUser<T>(body: () => Promise<T>): Promise<T> {
  if (process.getuid?.() !== 0) return body();
  if (!process.seteuid) throw new Error('running as root, this test needs process.seteuid (a forked test process, not a worker thread)');
  await chmod(dir, 0o711);
  process.seteuid(65534);
  try {
    return await body();
  } finally {
    process.seteuid(0);
  }
}
