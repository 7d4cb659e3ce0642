import { createHashEmbedding, Message, summaryInfo } from '@ctx/core';
import type { ScriptedChatClient } from '@ctx/core/testing';
import { describe, expect, it } from 'vitest';
import { chooseModels, offlineModel, offlineSummarizer, runDemo } from './demo.js';

describe('memory example', () => {
  it('recalls a fact of an earlier session in a new one, and a detail compaction summarized away', async () => {
    const client = offlineModel() as ScriptedChatClient;
    const lines: string[] = [];
    const replies = await runDemo({
      client,
      summarizer: offlineSummarizer(),
      embeddings: createHashEmbedding(),
      userId: 'ada',
      print: (line) => lines.push(line),
    });
    expect(replies[0]).toEqual(['Noted.', 'Noted.']);
    expect(replies[1]!.at(-1)).toBe('You told me: The plumber comes on Thursday at 9 to fix the boiler.');
    expect(replies[2]).toEqual(['You told me: My gym locker code is 4471.']);

    // The plumber question's prompt: the history holds a summary instead of the detail, which only recall brings back.
    const plumber = client.calls.find((c) => Message.text(c.messages.at(-1)!) === 'When does the plumber come?')!.messages;
    const summary = plumber.find((m) => summaryInfo(m) !== undefined)!;
    expect(summaryInfo(summary)?.archived).toBe(true);
    const history = plumber.filter((m) => (m.metadata?.ctx as { sourceId?: string } | undefined)?.sourceId !== 'recall');
    expect(history.some((m) => Message.text(m).includes('Thursday at 9'))).toBe(false);
    expect(lines).toContain('--- session 3 ---');
  });

  it('uses the offline stand-ins without OPENAI_API_KEY', async () => {
    expect((await chooseModels({})).label).toMatch(/^offline/);
  });
});
