import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RedisServer, startRedisServer } from '@ctx/redis-test-server';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { offlineModel, offlineTitleModel } from './models.js';
import { runScenario } from './scenario.js';
import { findTraces } from './traces.js';

let server: RedisServer;
let redis: Redis;
const dir = mkdtempSync(join(tmpdir(), 'ctx-session-product-test-'));
beforeAll(async () => {
  server = await startRedisServer({ dir });
  redis = new Redis({ host: server.host, port: server.port });
});
afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('session-product', () => {
  it('titles, lists, forks, regenerates, edits, then deletes a user with nothing of theirs left in Redis', async () => {
    const printed: string[] = [];
    const result = await runScenario({ redis, chat: offlineModel(), titles: offlineTitleModel(), print: (line) => printed.push(line) });

    // Titled by the title model; listed newest first (the conversation continued last on top), two a page.
    const listed = result.pages.flat();
    expect(result.pages.map((page) => page.length)).toEqual([2, 1]);
    expect(listed.map((s) => s.metadata.title)).toEqual(['Three days in Lima', 'Portuguese words', 'Vegetarian lasagna']);
    const times = listed.map((s) => s.metadata.updatedAt);
    expect([...times].sort().reverse()).toEqual(times);

    // The fork holds the history up to the first reply, then its own turn; the original is untouched.
    expect(result.fork.original).toEqual([
      'user: Plan three days in Lima for me.',
      'assistant: Day 1 the historic centre, day 2 Miraflores and Barranco, day 3 Pachacámac.',
      'user: Where should I eat ceviche?',
      'assistant: Have it at lunch, the way Lima does: a cevichería in Miraflores or Barranco.',
    ]);
    expect(result.fork.history).toEqual([
      ...result.fork.original.slice(0, 2),
      'user: Make it five days and add Cusco.',
      'assistant: Five days: two in Lima, then fly to Cusco for three, one of them in the Sacred Valley.',
    ]);
    expect(result.fork.forkedFrom?.messageId).toBeDefined();

    // Regenerated: the new reply replaced the old one, the question is kept once.
    expect(result.regenerated.before).not.toBe(result.regenerated.after);
    expect(result.regenerated.history).toEqual(['user: How do I make a vegetarian lasagna?', `assistant: ${result.regenerated.after}`]);

    // Edited: rewound to the question, the new one ran, and the conversation got a new title.
    expect(result.edited.removed).toEqual(['user: Teach me five words of Portuguese.', 'assistant: olá, obrigado, por favor, sim, não.']);
    expect(result.edited.history).toEqual(['user: Teach me five words of Italian.', 'assistant: ciao, grazie, per favore, sì, no.']);
    expect(result.edited.title).toBe('Italian words');

    // Deleted: four conversations (the fork too), each of which had left keys, and none left after.
    expect(result.exported).toEqual({ sessions: 4, messages: 12 });
    expect(result.deleted).toBe(4);
    expect(result.traces.before.length).toBeGreaterThanOrEqual(8); // a session and a history per conversation
    expect(result.traces.after).toEqual([]);
    expect((await findTraces(redis, '*', [result.users.ada])).traces).toEqual([]);
    expect(result.bob).toEqual({
      sessions: 1,
      history: ['user: What is a good first houseplant?', 'assistant: A pothos: it forgives missed waterings and low light.'],
    });
    expect(printed).toContain(`after: 0 keys of ${result.traces.scanned} mention ${result.users.ada}`);
  });
});
