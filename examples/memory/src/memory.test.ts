import { createHashEmbedding, Message, summaryInfo, WORKING_MEMORY_TOOL } from '@ctx/core';
import type { ScriptedChatClient } from '@ctx/core/testing';
import { describe, expect, it } from 'vitest';
import { chooseModels, offlineModel, offlineSummarizer, runDemo } from './demo.js';

const sourceOf = (m: Message) => (m.metadata?.ctx as { sourceId?: string } | undefined)?.sourceId;

describe('memory example', () => {
  it('recalls a fact of an earlier session in a new one, a detail compaction summarized away, and the working memory; then exports and deletes the user', async () => {
    const client = offlineModel() as ScriptedChatClient;
    const lines: string[] = [];
    const { replies, exported, afterDelete } = await runDemo({
      client,
      summarizer: offlineSummarizer(),
      embeddings: createHashEmbedding(),
      userId: 'ada',
      print: (line) => lines.push(line),
    });
    expect(replies[0]).toEqual(['Noted.', 'Noted.']);
    expect(replies[1]!.at(-1)).toBe('You told me: The plumber comes on Thursday at 9 to fix the boiler.');
    expect(replies[2]).toEqual(['You told me: My gym locker code is 4471.', 'Your working memory says: a half marathon in April.']);

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

    // Session 3, a new session: the record reached the model as instructions (the offline model answers only from them).
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
  });

  it('uses the offline stand-ins without OPENAI_API_KEY', async () => {
    expect((await chooseModels({})).label).toMatch(/^offline/);
  });
});
