import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHashEmbedding, Message, summaryInfo, WORKING_MEMORY_TOOL } from '@ctx/core';
import type { ScriptedChatClient } from '@ctx/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chooseModels, firstProcess, offlineModel, offlineSummarizer, openDatabase, secondProcess } from './demo.js';

const sourceOf = (m: Message) => (m.metadata?.ctx as { sourceId?: string } | undefined)?.sourceId;

// One data directory for the file: the first test creates the database (seconds), the second reopens it.
let dataDir = '';
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'ctx-memory-example-'));
});
afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

describe('memory example', () => {
  it('recalls a fact of an earlier session in a new one, a detail compaction summarized away, and the working memory, with the database closed and reopened in between; then exports and deletes the user', async () => {
    const client = offlineModel() as ScriptedChatClient;
    const lines: string[] = [];
    const options = {
      client,
      summarizer: offlineSummarizer(),
      embeddings: createHashEmbedding(),
      userId: 'ada',
      print: (line: string) => lines.push(line),
    };
    const first = await openDatabase(dataDir);
    const { replies } = await firstProcess({ ...options, db: first }).finally(() => first.close());
    const second = await openDatabase(dataDir);
    const { replies: third, exported, afterDelete } = await secondProcess({ ...options, db: second }).finally(() => second.close());
    expect(replies[0]).toEqual(['Noted.', 'Noted.']);
    expect(replies[1]!.at(-1)).toBe('You told me: The plumber comes on Thursday at 9 to fix the boiler.');
    expect(third).toEqual(['You told me: My gym locker code is 4471.', 'Your working memory says: a half marathon in April.']);

    // The plumber question's prompt: the history holds a summary instead of the detail, which only recall brings back.
    const plumber = client.calls.find((c) => Message.text(c.messages.at(-1)!) === 'When does the plumber come?')!.messages;
    const summary = plumber.find((m) => summaryInfo(m) !== undefined)!;
    expect(summaryInfo(summary)?.archived).toBe(true);
    const history = plumber.filter((m) => sourceOf(m) !== 'recall');
    expect(history.some((m) => Message.text(m).includes('Thursday at 9'))).toBe(false);
    expect(lines).toContain('--- session 3 ---');

    // Session 1: the model was offered the tool and kept the goal with it.
    const training = client.calls.findIndex((c) => Message.text(c.messages.at(-1)!) === 'I am training for a half marathon in April.');
    expect(client.calls[training]!.options.tools?.map((t) => t.name)).toContain(WORKING_MEMORY_TOOL);
    const result = client.calls[training + 1]!.messages.at(-1)!.contents.find((c) => c.type === 'function-result');
    expect(result).toMatchObject({ name: WORKING_MEMORY_TOOL, result: expect.stringContaining('"training": "a half marathon in April"') });

    // Session 3, after the reopen: the locker code came back through recall, the record as instructions.
    const locker = client.calls.find((c) => Message.text(c.messages.at(-1)!) === 'What is my gym locker code?')!.messages;
    expect(
      locker
        .filter((m) => sourceOf(m) === 'recall')
        .map((m) => Message.text(m))
        .join('\n'),
    ).toContain('My gym locker code is 4471.');
    const asked = client.calls.find((c) => Message.text(c.messages.at(-1)!) === 'What am I training for?')!;
    expect(asked.options.instructions).toContain('<working_memory>\n{\n  "training": "a half marathon in April"\n}\n</working_memory>');
    // The first call of session 1 had an empty record.
    expect(client.calls[0]!.options.instructions).toContain('<working_memory>\n{}\n</working_memory>');

    // The export holds the sessions, the indexed messages and the record; the delete leaves nothing.
    expect(exported.sessions).toHaveLength(3);
    expect(exported.providers['working-memory']).toMatchObject({ records: [{ record: { training: 'a half marathon in April' } }] });
    const records = (exported.providers.recall as { records: { text: string; sessionId: string }[] }).records;
    expect(records.map((r) => r.text)).toContain('My gym locker code is 4471.');
    expect(records.map((r) => r.text)).toContain('The plumber comes on Thursday at 9 to fix the boiler.');
    expect(new Set(records.map((r) => r.sessionId))).toEqual(new Set(exported.sessions.map((s) => s.session.sessionId)));
    expect(afterDelete).toEqual({ recall: 0, workingMemory: 0, sessions: 0 });
  }, 120_000);

  it('one command runs two processes: the second, started after the first exited, recalls the fact and reads the working memory the first stored', async () => {
    const main = fileURLToPath(new URL('./main.ts', import.meta.url));
    const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', main], {
        env: { ...process.env, CTX_MEMORY_DIR: dataDir, OPENAI_API_KEY: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk) => (output += chunk));
      child.stderr.on('data', (chunk) => (output += chunk));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, output }));
    });
    expect(code, output).toBe(0);
    const pids = [...output.matchAll(/=== (first|second) process \(pid (\d+)\)/g)].map((m) => [m[1], m[2]]);
    expect(pids.map(([phase]) => phase)).toEqual(['first', 'second']);
    expect(pids[0]![1]).not.toBe(pids[1]![1]);
    const second = output.slice(output.indexOf('=== second process'));
    expect(second).toContain('user: What is my gym locker code?\nassistant: You told me: My gym locker code is 4471.');
    expect(second).toContain('user: What am I training for?\nassistant: Your working memory says: a half marathon in April.');
    expect(second).toContain('left: {"recall":0,"workingMemory":0,"sessions":0}');
  }, 120_000);

  it('uses the offline stand-ins without OPENAI_API_KEY', async () => {
    expect((await chooseModels({})).label).toMatch(/^offline/);
  });
});
