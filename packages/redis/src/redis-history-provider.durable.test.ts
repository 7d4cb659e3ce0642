import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  BackendUnavailableError,
  createAgent,
  defineTool,
  Message,
  ProviderError,
  SessionStateError,
  type SaveHistoryArgs,
  type SourceType,
} from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { startRedisServer, type RedisServer } from '@ctx/redis-test-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterClient, countCommands, env, singleClient, uniquePrefix } from '../test/helpers.js';
import { RedisHistoryProvider } from './redis-history-provider.js';

const packageRoot = fileURLToPath(new URL('..', import.meta.url));
const state = {};
const lookup = defineTool({
  name: 'lookup',
  description: 'Looks something up.',
  parameters: { type: 'object', properties: {} },
  execute: () => 'found',
});
const shape = (messages: Message[]) =>
  messages.map((m) => {
    const call = m.contents.find((c) => c.type === 'function-call' || c.type === 'function-result');
    return call ? `${m.role} ${call.callId}` : `${m.role} ${Message.text(m)}`;
  });

describe('the save script: the opening batch of a turn replaces a stored earlier attempt of it', () => {
  const history = new RedisHistoryProvider({ client: singleClient(), prefix: uniquePrefix('retry') });
  const m = (id: string, type: SourceType) => Message.withSource(Message.user(id, { id }), type, type);
  const opens = (...inputIds: string[]): SaveHistoryArgs => ({ state, turn: { inputIds, opens: true } });

  it('removes the attempt (with the context stored before it) and stores the retry once; sequence numbers stay consistent', async () => {
    await history.saveMessages('s1', [m('u0', 'input'), m('r0', 'response')], opens('u0'));
    await history.saveMessages('s1', [m('doc', 'context'), m('u1', 'input'), m('r1', 'response')], opens('u1'));
    await history.saveMessages('s1', [m('r1b', 'response')], { state, turn: { inputIds: ['u1'], opens: false } });
    await history.saveMessages('s1', [m('doc2', 'context'), m('u1', 'input'), m('r2', 'response')], opens('u1'));
    const ids = (await history.getMessages('s1', { state })).map((x) => x.id);
    expect(ids).toEqual(['u0', 'r0', 'doc2', 'u1', 'r2']);
    const exported: string[] = [];
    for await (const x of history.exportMessages('s1', { pageSize: 2 })) exported.push(x.id);
    expect(exported).toEqual(ids);
    // The whole list can be the attempt.
    await history.saveMessages('s2', [m('u1', 'input'), m('r1', 'response')], opens('u1'));
    await history.saveMessages('s2', [m('u1', 'input'), m('r2', 'response')], opens('u1'));
    expect((await history.getMessages('s2', { state })).map((x) => x.id)).toEqual(['u1', 'r2']);
    expect(await history.append('s2', [m('r2', 'response')])).toBe(0); // the id set followed the list
  });

  it('replaces an attempt that is not the newest in place, puts a later batch of a turn right after it, and renumbers what follows', async () => {
    await history.saveMessages('s3', [m('u0', 'input'), m('r0', 'response')], opens('u0'));
    await history.saveMessages('s3', [m('u1', 'input'), m('r1', 'response')], opens('u1'));
    await history.saveMessages('s3', [m('u2', 'input'), m('r2', 'response')], opens('u2'));
    await history.saveMessages('s3', [m('u0', 'input'), m('r0b', 'response')], opens('u0'));
    await history.saveMessages('s3', [m('r0c', 'response'), m('r0d', 'response')], { state, turn: { inputIds: ['u0'], opens: false } });
    await history.saveMessages('s3', [m('doc', 'context'), m('u1', 'input')], opens('u1')); // a shorter attempt
    const ids = (await history.getMessages('s3', { state })).map((x) => x.id);
    expect(ids).toEqual(['u0', 'r0b', 'r0c', 'r0d', 'doc', 'u1', 'u2', 'r2']);
    const exported: string[] = [];
    for await (const x of history.exportMessages('s3', { pageSize: 3 })) exported.push(x.id);
    expect(exported).toEqual(ids);
    // The id set follows the list: every stored id is known, the replaced ones are not.
    expect(await history.append('s3', [m('r0', 'response'), m('r1', 'response')])).toBe(2);
    expect(await history.countMessages('s3')).toBe(10);
    const [score] = await history.client.zmscore(history.keys('s3').ids, 'r2');
    expect(Number(score)).toBe(8);
  });

  it('a message id stored with other content refuses the batch in the script, naming it; nothing is written', async () => {
    await history.saveMessages('s4', [m('u0', 'input'), m('r0', 'response')], opens('u0'));
    const other = Message.assistant('other', { id: 'r0' });
    const error = await history.saveMessages('s4', [m('u1', 'input'), other], opens('u1')).catch((e: unknown) => e);
    expect(SessionStateError.isInstance(error), String(error)).toBe(true);
    expect((error as SessionStateError).path).toBe('$.messages[1].id');
    expect((await history.getMessages('s4', { state })).map((x) => x.id)).toEqual(['u0', 'r0']);
  });
});

describe('concurrent turns on one conversation, each retried', () => {
  for (const [topology, client] of [
    ['single node', singleClient()],
    ['cluster', clusterClient()],
  ] as const) {
    it(`every retried caller's reply is the one stored for its turn, and no retry is sent its earlier attempt (${topology})`, async () => {
      const history = new RedisHistoryProvider({ client, prefix: uniquePrefix('concurrent-retries') });
      let calls = 0;
      const chat = new ScriptedChatClient({
        replies: (messages) => ({ text: `${Message.text(messages.at(-1)!)}: reply ${++calls}`, delayMs: calls % 3 }),
      });
      const agent = createAgent({ client: chat, contextProviders: [history] });
      const sessionId = `conversation-${Math.random().toString(36).slice(2)}`;
      const inputs = Array.from({ length: 5 }, (_, i) => Message.user(`question ${i}`));
      await Promise.all(inputs.map((input) => agent.run(input, { session: agent.getSessionById(sessionId) })));
      // Every caller lost its reply and retries with the same input message.
      const retried = await Promise.all(inputs.map((input) => agent.run(input, { session: agent.getSessionById(sessionId) })));
      const stored = await history.getMessages(sessionId, { state });
      expect(stored).toHaveLength(10);
      inputs.forEach((input, i) => {
        const at = stored.findIndex((m) => m.id === input.id);
        expect(stored[at + 1]!.id, `the turn of question ${i}`).toBe(retried[i]!.messages[0]!.id);
      });
      for (const call of chat.calls.slice(5)) {
        const question = call.messages.at(-1)!;
        expect(
          call.messages.slice(0, -1).some((m) => Message.text(m).startsWith(`${Message.text(question)}:`) || m.id === question.id),
          `the retry of ${Message.text(question)} was sent its earlier attempt`,
        ).toBe(false);
      }
    });
  }
});

describe("persistence: 'model-call' on Redis", () => {
  it('writes after each model call and each batch of tool results (at most two per step): one script call each, the load and nothing else', async () => {
    const client = singleClient();
    const history = new RedisHistoryProvider({ client, prefix: uniquePrefix('per-call') });
    const chat = new ScriptedChatClient({
      replies: [{ toolCalls: [{ name: 'lookup', callId: 'a' }] }, { toolCalls: [{ name: 'lookup', callId: 'b' }] }, 'Done.'],
    });
    const agent = createAgent({
      client: chat,
      contextProviders: [history],
      tools: [lookup],
      persistence: 'model-call',
    });
    await history.countMessages('warm'); // connect first
    const commands = countCommands(client);
    await agent.run('go', { session: agent.getSessionById('per-call') });
    // 3 model calls, 2 batches of tool results: 5 writes for 3 steps.
    expect(commands.names.filter((n) => n !== 'eval')).toEqual(['lrange', 'evalsha', 'evalsha', 'evalsha', 'evalsha', 'evalsha']);
    expect(shape(await history.getMessages('per-call', { state }))).toEqual([
      'user go',
      'assistant a',
      'tool a',
      'assistant b',
      'tool b',
      'assistant Done.',
    ]);
  });
});

// A dedicated server that these tests stop (SIGSTOP) and resume (SIGCONT) by pid.
describe('a retried run after Redis stalled past the timeout and then applied the save', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedisServer({ dir: join(env.tmpDir, `stall-${Math.random().toString(36).slice(2, 8)}`) });
  });
  afterAll(async () => {
    process.kill(server.pid, 'SIGCONT');
    await server.stop();
  });

  for (const persistence of ['run', 'model-call'] as const) {
    it(`stores the turn once, with the retry's reply (${persistence})`, async () => {
      let stall = false;
      class StallingHistory extends RedisHistoryProvider {
        override async saveMessages(sessionId: string, messages: readonly Message[], args: SaveHistoryArgs): Promise<void> {
          if (stall) process.kill(server.pid, 'SIGSTOP'); // the script is sent to a server that does not answer
          stall = false;
          return super.saveMessages(sessionId, messages, args);
        }
      }
      const history = new StallingHistory({ url: `redis://127.0.0.1:${server.port}`, prefix: uniquePrefix(persistence), timeoutMs: 500 });
      const answers = persistence === 'run' ? ['Answer A.', 'Answer B.'] : ['c1', 'c2'];
      const chat = new ScriptedChatClient({
        replies: [
          'Hello.',
          ...(persistence === 'run'
            ? answers
            : [{ toolCalls: [{ name: 'lookup', callId: 'c1' }] }, { toolCalls: [{ name: 'lookup', callId: 'c2' }] }, 'Answer B.']),
        ],
      });
      const agent = createAgent({ client: chat, contextProviders: [history], tools: [lookup], persistence });
      const session = agent.getSessionById('stalled');
      try {
        await agent.run('hi', { session }); // loads the save script on the server
        const question = Message.user('What is it?');
        stall = true;
        const error = await agent.run(question, { session }).catch((e: unknown) => e);
        expect(ProviderError.isInstance(error) && BackendUnavailableError.isInstance(error.cause)).toBe(true);
        process.kill(server.pid, 'SIGCONT'); // the stalled script now runs: the failed run's turn is stored
        const attempt = persistence === 'run' ? ['user What is it?', 'assistant Answer A.'] : ['user What is it?', 'assistant c1'];
        for (let i = 0; i < 200 && (await history.countMessages('stalled')) < 4; i++) await new Promise((r) => setTimeout(r, 25));
        expect(shape(await history.getMessages('stalled', { state }))).toEqual(['user hi', 'assistant Hello.', ...attempt]);

        const again = await agent.run(question, { session }); // the caller retries with the same message
        expect(again.text).toBe('Answer B.');
        expect(shape(chat.calls.at(persistence === 'run' ? -1 : -2)!.messages)).toEqual([
          'user hi',
          'assistant Hello.',
          'user What is it?',
        ]);
        const turn = persistence === 'run' ? ['assistant Answer B.'] : ['assistant c2', 'tool c2', 'assistant Answer B.'];
        expect(shape(await history.getMessages('stalled', { state }))).toEqual([
          'user hi',
          'assistant Hello.',
          'user What is it?',
          ...turn,
        ]);
      } finally {
        process.kill(server.pid, 'SIGCONT');
        await history.close();
      }
    });
  }
});

describe("a process killed in the middle of a run (persistence: 'model-call', Redis history)", () => {
  it('leaves the exact prefix in Redis, and the next run answers the open call as interrupted', async () => {
    if (!existsSync(join(packageRoot, 'dist', 'index.js'))) throw new Error('Build @ctx/redis first: the child process runs dist/.');
    const prefix = uniquePrefix('killed');
    const url = `redis://127.0.0.1:${env.port}`;
    const proc = spawn(process.execPath, [join(packageRoot, 'test', 'killed-run-child.mjs'), url, prefix, 'bill-1'], {
      cwd: packageRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => proc.once('exit', (_code, signal) => resolve(signal)));
    let out = '';
    proc.stderr.on('data', (d: Buffer) => (out += d));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the child never reached its tool: ${out}`)), 30_000);
      proc.stdout.on('data', (d: Buffer) => {
        out += d;
        if (!out.includes('tool-started\n')) return;
        clearTimeout(timer);
        resolve();
      });
      void exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`the child exited early: ${out}`));
      });
    });
    process.kill(proc.pid!, 'SIGKILL');
    expect(await exited).toBe('SIGKILL');

    const history = new RedisHistoryProvider({ client: singleClient(), prefix });
    expect(shape(await history.getMessages('bill-1', { state }))).toEqual(['user Pay my bill.', 'assistant c1', 'tool c1', 'assistant c2']);
    const chat = new ScriptedChatClient({ replies: ['The payment was interrupted.'] });
    const agent = createAgent({ client: chat, contextProviders: [history], persistence: 'model-call' });
    await agent.run('Did it go through?', { session: agent.getSessionById('bill-1') });
    const sent = chat.calls[0]!.messages;
    expect(shape(sent)).toEqual(['user Pay my bill.', 'assistant c1', 'tool c1', 'assistant c2', 'tool c2', 'user Did it go through?']);
    expect(sent[4]!.contents[0]).toMatchObject({ callId: 'c2', isError: true });
    expect(shape(await history.getMessages('bill-1', { state })).slice(4)).toEqual([
      'user Did it go through?',
      'assistant The payment was interrupted.',
    ]);
  });
});
