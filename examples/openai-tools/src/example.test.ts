import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { OpenAIChatClient } from '@ctx/openai';
import { type OpenAITestServer, startOpenAITestServer } from '@ctx/openai-test-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runExample, scriptLocalModel, TURNS } from './example.js';

let server: OpenAITestServer;
beforeAll(async () => {
  server = await startOpenAITestServer();
  scriptLocalModel(server);
});
afterAll(() => server.close());

describe('openai-tools example', () => {
  it('runs a streamed tool loop per turn and audits every model call by source', async () => {
    const client = new OpenAIChatClient({ baseURL: server.url, apiKey: server.apiKey, model: 'gpt-4o-mini', maxRetries: 0 });
    const reports = await runExample(client);
    expect(reports.map((r) => r.text)).toEqual(['It is cloudy in Oslo, 41°F.', 'It is cloudy in Lisbon, 48°F.']);
    expect(reports.map((r) => r.toolCalls.map((c) => c.name))).toEqual([
      ['get_weather', 'convert_temperature'],
      ['get_weather', 'convert_temperature'],
    ]);
    // The audit is of the prompt before the first model call of each turn.
    const [first, second] = reports.map((r) => r.audits[0]!);
    expect(first!.sources.map((s) => [s.sourceId, s.messages, s.instructions, s.tools])).toEqual([
      ['agent', 0, 1, 2],
      ['preferences', 0, 1, 0],
      ['input', 1, 0, 0],
    ]);
    // The second turn carries the first from the session's history: input, two calls with results, the answer.
    expect(second!.sources.find((s) => s.sourceId === 'memory')?.messages).toBe(6);
    const sent = server.requests.filter((r) => r.route === '/chat/completions');
    expect(sent).toHaveLength(6);
    expect(sent.every((r) => r.body?.stream === true)).toBe(true);
    expect(JSON.stringify(sent[3]!.body)).toContain(TURNS[0]);
  });

  it('the start script runs it against its own local server and prints the audit', async () => {
    const env = { ...process.env, OPENAI_API_KEY: '' };
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env, timeout: 60_000 });
    expect(stdout).toContain('Using the local OpenAI-protocol server at http://127.0.0.1:');
    expect(stdout).toContain('It is cloudy in Lisbon, 48°F.');
    expect(stdout).toMatch(/memory\s+6 messages/);
  });
});
