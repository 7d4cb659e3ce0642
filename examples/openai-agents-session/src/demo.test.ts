import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { InMemoryHistoryProvider } from '@ctx/core';
import { describe, expect, it } from 'vitest';
import { runDemo } from './demo.js';

describe('openai-agents-session example', () => {
  it('two runs share the session, the tool result reaches the model, and popItem undoes the last reply', async () => {
    const result = await runDemo(new InMemoryHistoryProvider(), 'chat-1');
    expect(result.replies).toEqual(['It is sunny in Paris.', 'I was sent 5 items of this conversation.']);
    expect(result.itemsAfterTwoRuns).toBe(6);
    expect(result.undone).toBe('I was sent 5 items of this conversation.');
    expect(result.itemsAfterUndo).toBe(5);
  });

  it('npm start runs it end to end (on a redis-server when one is installed)', async () => {
    const { stdout } = await promisify(execFile)('npx', ['tsx', 'src/main.ts'], { cwd: new URL('..', import.meta.url), timeout: 60_000 });
    expect(stdout).toMatch(/history in (redis-server on port \d+|memory)/);
    expect(stdout).toContain("undone: 'I was sent 5 items of this conversation.'");
  });
});
