import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { Message } from '../messages/message.js';
import { FileSessionStore } from '../session/file-session-store.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { createAgent } from './create-agent.js';
import { INTERRUPTED_RESULT } from './interrupted-calls.js';

const packageRoot = fileURLToPath(new URL('../..', import.meta.url));
const child = join(packageRoot, 'test', 'killed-run-child.mjs');

/** Starts the child run, waits until its blocking tool has started, then kills it by pid (SIGKILL). */
async function killMidTool(args: string[]): Promise<void> {
  if (!existsSync(join(packageRoot, 'dist', 'index.js'))) throw new Error('Build @ctx/core first: the child process runs dist/.');
  const proc = spawn(process.execPath, [child, ...args], { cwd: packageRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => proc.once('exit', (_code, signal) => resolve(signal)));
  let out = '';
  let err = '';
  proc.stderr.on('data', (d: Buffer) => (err += d));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the child never reached its tool: ${err || out}`)), 30_000);
    proc.stdout.on('data', (d: Buffer) => {
      out += d;
      if (!out.includes('tool-started\n')) return;
      clearTimeout(timer);
      resolve();
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`the child exited early: ${err || out}`));
    });
  });
  process.kill(proc.pid!, 'SIGKILL');
  expect(await exited).toBe('SIGKILL');
}

describe("a process killed in the middle of a run (persistence: 'model-call')", () => {
  const dirs: string[] = [];
  afterAll(async () => {
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it('leaves the exact prefix in the FileSessionStore, and the next run answers the open call as interrupted', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ctx-killed-'));
    dirs.push(dir);
    await killMidTool([dir, 'bill-1']);

    const store = new FileSessionStore({ directory: dir });
    const stored = ((await store.get('bill-1'))!.session.state.memory!.messages as Message[]).map((m) => ({
      id: m.id === 'turn-1' ? m.id : m.role,
      contents: m.contents.map((c) =>
        c.type === 'function-call' ? `call ${c.callId}` : c.type === 'function-result' ? `result ${c.callId}` : c.type,
      ),
    }));
    // Everything up to the call that was running, each message once; nothing after it.
    expect(stored).toEqual([
      { id: 'turn-1', contents: ['text'] },
      { id: 'assistant', contents: ['call c1'] },
      { id: 'tool', contents: ['result c1'] },
      { id: 'assistant', contents: ['call c2'] },
    ]);

    const client = new ScriptedChatClient({ replies: ['The payment was interrupted; shall I check and try again?'] });
    const agent = createAgent({ client, sessionStore: store, persistence: 'model-call' });
    const session = (await agent.getSession('bill-1'))!;
    await agent.run('Did it go through?', { session });
    const sent = client.calls[0]!.messages;
    expect(sent.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool', 'user']);
    expect(sent[4]!.contents).toEqual([
      { type: 'function-result', callId: 'c2', name: 'pay', result: { error: INTERRUPTED_RESULT }, isError: true },
    ]);
    // The resumed turn was saved to the store by the run itself.
    const after = (await store.get('bill-1'))!.session.state.memory!.messages as Message[];
    expect(after.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'user', 'assistant']);
  });
});
