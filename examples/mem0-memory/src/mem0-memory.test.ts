import { createAgent } from '@ctx/core';
import { Mem0ContextProvider } from '@ctx/mem0';
import { describe, expect, it } from 'vitest';
import { offlineModel, runDemo, TURNS } from './demo.js';
import { startMemoryBackend } from './memory-backend.js';

describe('mem0-memory', () => {
  it('a fact told in one session is recalled by mem0 in a new session of the same user, and the audit shows it', async () => {
    const backend = await startMemoryBackend({});
    try {
      const lines: string[] = [];
      const [first, second] = await runDemo({ backend, client: offlineModel(), userId: 'ada', print: (line) => lines.push(line) });
      expect(first).toBe('Noted.');
      expect(second).toContain('I am allergic to peanuts.');
      const secondSession = lines.slice(lines.findIndex((line) => line.startsWith('--- session 2')));
      expect(secondSession.join('\n')).toMatch(/^\s+mem0\s+1\s+\d+$/m);
      expect(lines.slice(0, lines.indexOf(secondSession[0]!)).join('\n')).not.toMatch(/^\s+mem0\s/m);
    } finally {
      await backend.close();
    }
  });

  it('another user does not get those memories', async () => {
    const backend = await startMemoryBackend({});
    try {
      await runDemo({ backend, client: offlineModel(), userId: 'ada', print: () => {} });
      const agent = createAgent({ client: offlineModel(), contextProviders: [new Mem0ContextProvider({ client: backend.client })] });
      const response = await agent.run(TURNS[1]!, { session: agent.createSession({ state: { mem0: { userId: 'bob' } } }) });
      expect(response.text).toBe('Noted.');
    } finally {
      await backend.close();
    }
  });
});
