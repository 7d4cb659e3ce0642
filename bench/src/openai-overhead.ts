/**
 * The overhead of @ctx/openai's clients over calling the `openai` SDK directly, on the same local
 * OpenAI-protocol server, plain and streamed, with a reply of about 1,000 tokens.
 * Prints tables; never asserts timings.
 */
import OpenAI from 'openai';
import { Message, type ChatClient } from '@ctx/core';
import { OpenAIChatClient, OpenAIResponsesClient } from '@ctx/openai';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { fmtMs, fmtOps, fmtRatio, measure, printTable, settle, type Measurement } from './timing.js';

const QUESTION = 'Explain context engineering.';

export async function openaiOverhead(): Promise<void> {
  // The server runs in its own process (a reply of about 1,000 tokens: 1,000 short words), as a
  // real service would, so only client-side work is compared.
  const server = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('./openai-server-process.ts', import.meta.url)), 'bench-key', '1000'],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const url = await new Promise<string>((resolve, reject) => {
    server.stdout!.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
    server.once('exit', (code) => reject(new Error(`the test server exited with ${code}`)));
  });
  const sdk = new OpenAI({ baseURL: url, apiKey: 'bench-key', maxRetries: 0 });
  const chat = new OpenAIChatClient({ client: sdk, model: 'gpt-4o-mini' });
  const responses = new OpenAIResponsesClient({ client: sdk, model: 'gpt-4.1' });
  const messages = [Message.user(QUESTION)];

  type Case = { name: string; sdk: () => Promise<unknown>; ours: () => Promise<unknown> };
  const drain = async (client: ChatClient) => {
    let n = 0;
    for await (const u of client.getStreamingResponse(messages, { instructions: 'Be thorough.' })) n += u.contents.length;
    return n;
  };
  const cases: Case[] = [
    {
      name: 'Chat Completions, plain',
      sdk: () =>
        sdk.chat.completions.create({
          model: 'gpt-4o-mini',
          messages: [
            { role: 'system', content: 'Be thorough.' },
            { role: 'user', content: QUESTION },
          ],
        }),
      ours: () => chat.getResponse(messages, { instructions: 'Be thorough.' }),
    },
    {
      name: 'Chat Completions, streamed',
      sdk: async () => {
        let n = 0;
        const stream = await sdk.chat.completions.create({
          model: 'gpt-4o-mini',
          stream: true,
          stream_options: { include_usage: true },
          messages: [
            { role: 'system', content: 'Be thorough.' },
            { role: 'user', content: QUESTION },
          ],
        });
        for await (const chunk of stream) n += chunk.choices.length;
        return n;
      },
      ours: () => drain(chat),
    },
    {
      name: 'Responses, plain',
      sdk: () =>
        sdk.responses.create({
          model: 'gpt-4.1',
          instructions: 'Be thorough.',
          input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: QUESTION }] }],
        }),
      ours: () => responses.getResponse(messages, { instructions: 'Be thorough.' }),
    },
    {
      name: 'Responses, streamed',
      sdk: async () => {
        let n = 0;
        const stream = await sdk.responses.create({
          model: 'gpt-4.1',
          stream: true,
          instructions: 'Be thorough.',
          input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: QUESTION }] }],
        });
        for await (const event of stream) n += event.sequence_number >= 0 ? 1 : 0;
        return n;
      },
      ours: () => drain(responses),
    },
  ];

  console.log('\n## @ctx/openai client overhead over the openai SDK (local server in another process, ~1,000-token reply)\n');
  const rows: string[][] = [];
  for (const c of cases) {
    // Interleave three rounds and keep each side's best mean, so drift hits both alike.
    const best: { sdk?: Measurement; ours?: Measurement } = {};
    for (let round = 0; round < 3; round++) {
      settle();
      const a = await measure(`${c.name} sdk`, () => undefined, c.sdk, { budgetMs: 800, maxIterations: 200 });
      settle();
      const b = await measure(`${c.name} ours`, () => undefined, c.ours, { budgetMs: 800, maxIterations: 200 });
      if (!best.sdk || a.meanMs < best.sdk.meanMs) best.sdk = a;
      if (!best.ours || b.meanMs < best.ours.meanMs) best.ours = b;
    }
    const { sdk: s, ours: o } = best as Required<typeof best>;
    rows.push([c.name, fmtMs(s.meanMs), fmtMs(o.meanMs), fmtOps(o.opsPerSec), fmtMs(o.meanMs - s.meanMs), fmtRatio(o.meanMs / s.meanMs)]);
  }
  printTable(['call', 'openai SDK ms', '@ctx/openai ms', 'ops/s', 'added ms', 'ratio (target <= 1.05)'], rows);
  server.kill('SIGTERM');
}

if (import.meta.url === `file://${process.argv[1]}`) await openaiOverhead();
