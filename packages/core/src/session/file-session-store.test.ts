import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BackendUnavailableError, ConcurrencyError, SessionStateError } from '../errors.js';
import { Message } from '../messages/message.js';
import { createAgent } from '../run/create-agent.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { FileSessionStore } from './file-session-store.js';

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
    const session = await first.getSession('user:7');
    expect(session.etag).toBeUndefined();
    await first.run('hello', { session });
    await first.saveSession(session);
    const second = createAgent({ client, sessionStore: new FileSessionStore({ directory: dir }) });
    const again = await second.getSession('user:7');
    await second.run('and again', { session: again });
    expect(client.calls[1]!.messages.map((m) => Message.text(m))).toEqual(['hello', 'one', 'and again']);
    await second.saveSession(again);
    // the first agent's copy is stale now
    await expect(first.saveSession(session)).rejects.toSatisfy((e) => ConcurrencyError.isInstance(e));
  });

  it('writes atomically: no temporary or lock files are left behind, files are named by hash', async () => {
    const store = new FileSessionStore({ directory: dir });
    const agent = createAgent({ client: new ScriptedChatClient({ replies: [] }), sessionStore: store });
    await agent.saveSession(agent.createSession({ sessionId: '../../etc/passwd' }));
    const files = await readdir(dir);
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^[0-9a-f]{64}\.json$/);
  });

  it('serializes concurrent writers: exactly one of many conditional writes wins', async () => {
    const stores = Array.from({ length: 8 }, () => new FileSessionStore({ directory: dir }));
    const json = { type: 'ctx.session' as const, version: 1 as const, sessionId: 's', state: {} };
    const etag = await stores[0]!.set(json);
    const results = await Promise.allSettled(stores.map((s, i) => s.set({ ...json, state: { w: { i } } }, { ifMatch: etag })));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(results.filter((r) => r.status === 'rejected' && ConcurrencyError.isInstance(r.reason))).toHaveLength(7);
    const winner = results.findIndex((r) => r.status === 'fulfilled');
    expect((await stores[0]!.get('s'))!.session.state).toEqual({ w: { i: winner } });
  });

  it('reports a corrupt file as a SessionStateError naming the file', async () => {
    const store = new FileSessionStore({ directory: dir });
    await store.set({ type: 'ctx.session', version: 1, sessionId: 'x', state: {} });
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
    const json = { type: 'ctx.session' as const, version: 1 as const, sessionId: 'locked', state: {} };
    await store.set(json);
    const [file] = await readdir(dir);
    await writeFile(join(dir, `${file}.lock`), '');
    await expect(store.set(json)).rejects.toSatisfy((e) => BackendUnavailableError.isInstance(e));
    const { utimes } = await import('node:fs/promises');
    const old = new Date(Date.now() - 60_000);
    await utimes(join(dir, `${file}.lock`), old, old);
    await expect(store.set(json)).resolves.toBeTypeOf('string');
  });
});

describe('FileSessionStore recovery', () => {
  it('deletes a session whose file is corrupt', async () => {
    const store = new FileSessionStore({ directory: dir });
    await store.set({ type: 'ctx.session', version: 1, sessionId: 'bad', state: {} });
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
    const json = { type: 'ctx.session' as const, version: 1 as const, sessionId: 'crashed', state: {} };
    await store.set(json);
    const [file] = await readdir(dir);
    await writeFile(join(dir, `${file}.lock`), `${hostname()} ${dead}`);
    await expect(store.set(json)).resolves.toBeTypeOf('string');
    await writeFile(join(dir, `${file}.lock`), `${hostname()} ${process.ppid}`); // alive: must wait
    await expect(store.set(json)).rejects.toSatisfy((e) => BackendUnavailableError.isInstance(e));
  });
});
