import { describe, expect, it } from 'vitest';
import { runDemo } from './demo.js';

describe('cosmos-hosted-sessions', () => {
  it('continues a conversation in a second process from Cosmos DB (the local stand-in) and prints the audit', async () => {
    const { COSMOS_ENDPOINT: _e, COSMOS_KEY: _k, OPENAI_API_KEY: _o, ...env } = process.env;
    const result = await runDemo(() => {}, env);
    const pids = new Set(result.lines.map((l) => /^\[process (\d+)\]/.exec(l)?.[1]).filter(Boolean));
    expect(pids.size).toBe(2);
    expect(pids.has(String(process.pid))).toBe(true);
    // The second process saw the first process's two turns as history.
    const child = result.lines.filter((l) => !l.startsWith(`[process ${process.pid}]`) && l.startsWith('[process'));
    expect(child).toContain(
      `[process ${[...pids].find((p) => p !== String(process.pid))}]   (4 earlier messages loaded from Cosmos DB) You said: "What did I ask you first?"`,
    );
    // Every run printed its audit; the second process's first run shows the 4 messages from the history provider.
    const audits = result.lines.filter((l) => l.includes('audit:'));
    expect(audits).toHaveLength(4);
    expect(audits[2]).toContain('cosmos: 4 msg');
    expect(result.stored).toEqual([
      'user: Hi! My name is Ada.',
      'assistant: (0 earlier messages loaded from Cosmos DB) You said: "Hi! My name is Ada."',
      'user: Remind me to water the plants.',
      'assistant: (2 earlier messages loaded from Cosmos DB) You said: "Remind me to water the plants."',
      'user: What did I ask you first?',
      'assistant: (4 earlier messages loaded from Cosmos DB) You said: "What did I ask you first?"',
      'user: Thanks, that is all.',
      'assistant: (6 earlier messages loaded from Cosmos DB) You said: "Thanks, that is all."',
    ]);
  });
});
