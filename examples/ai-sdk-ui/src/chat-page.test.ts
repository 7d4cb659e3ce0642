import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RedisServer, startRedisServer } from '@ctx/redis-test-server';
import type { ChatClient, ChatOptions } from '@ctx/core';
import { RedisStreamStore } from '@ctx/redis';
import { Redis } from 'ioredis';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatTools, createChatAgent } from './chat-agent.js';
import { createChatServer } from './chat-server.js';
import { offlineModel } from './offline-model.js';
import { buildPageScript } from './page-bundle.js';

/** Debian's chromium (`apt-get install chromium`; `tooling/ensure-backends.mjs` installs it in CI). Never a downloaded browser. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Every wait of the page is bounded by this. */
const WAIT_MS = 15_000;

/**
 * A model that says `words` one by one, each once the test lets it (`release`), so a test knows how
 * much of the reply was said when it reloads or stops; an aborted call fails with the abort reason.
 */
function gatedModel(words: string[]) {
  let released = 0;
  let wake: (() => void) | undefined;
  const stats = { calls: 0 };
  const client: ChatClient = {
    specificationVersion: 'v1',
    provider: 'test',
    modelId: 'gated',
    getResponse: () => Promise.reject(new Error('only streams')),
    async *getStreamingResponse(_messages, options: ChatOptions) {
      stats.calls++;
      const messageId = crypto.randomUUID();
      for (let i = 0; i < words.length; i++) {
        while (released <= i) {
          options.signal?.throwIfAborted();
          await new Promise<void>((resolve) => {
            wake = resolve;
            options.signal?.addEventListener('abort', () => resolve(), { once: true });
          });
        }
        yield { messageId, role: 'assistant', contents: [{ type: 'text', text: words[i]! }] };
      }
      yield { contents: [], finishReason: 'stop' };
    },
  };
  return {
    client,
    stats,
    /** Lets the model say its first `count` words (all by default); `reset` starts the next call from none. */
    release: (count = words.length) => {
      released = count;
      wake?.();
    },
    reset: () => {
      released = 0;
    },
  };
}

/** What the page holds: `useChat`'s messages, as JSON. */
type PageMessage = { id: string; role: string; parts: Array<{ type: string; text?: string; state?: string; approval?: unknown }> };

// Outside CI a machine without chromium skips the browser test; CI always has it and always runs it.
describe.skipIf(!existsSync(CHROMIUM) && !process.env.CI)('the chat page in a real browser (chromium)', () => {
  let redisServer: RedisServer;
  let redis: Redis;
  let server: Server;
  let browser: Browser;
  let base: string;
  const dir = mkdtempSync(join(tmpdir(), 'ctx-ai-sdk-ui-test-'));
  const agentOf = () => createChatAgent({ redis, client: offlineModel(), prefix: 'ai-sdk-ui-test' });
  const gated = gatedModel(['One ', 'two ', 'three ', 'four.']);
  const gatedAgentOf = () => createChatAgent({ redis, client: gated.client, prefix: 'ai-sdk-ui-test' });
  let gatedServer: Server;
  let gatedBase: string;
  const streamStores: RedisStreamStore[] = [];
  /** A stream store on the test's Redis, closed at the end (its writers' lease renewals stop). */
  const streamStore = () => {
    const store = new RedisStreamStore({ client: redis, prefix: 'ai-sdk-ui-test' });
    streamStores.push(store);
    return store;
  };

  beforeAll(async () => {
    redisServer = await startRedisServer({ dir });
    redis = new Redis({ host: redisServer.host, port: redisServer.port });
    const pageScript = await buildPageScript();
    server = createChatServer({ agent: agentOf(), tools: chatTools, pageScript, streams: streamStore() });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // The same page on an agent whose replies the tests pace word by word.
    gatedServer = createChatServer({ agent: gatedAgentOf(), tools: chatTools, pageScript, streams: streamStore() });
    await new Promise<void>((resolve) => gatedServer.listen(0, '127.0.0.1', resolve));
    gatedBase = `http://127.0.0.1:${(gatedServer.address() as AddressInfo).port}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'], timeout: WAIT_MS });
  });
  afterAll(async () => {
    gated.release();
    await browser?.close();
    await Promise.all(streamStores.map((store) => store.close()));
    gatedServer?.closeAllConnections();
    await new Promise((resolve) => gatedServer?.close(resolve));
    await new Promise((resolve) => server?.close(resolve));
    redis?.disconnect();
    await redisServer?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const messagesOf = (page: Page) => page.evaluate(() => (window as unknown as { chatMessages: PageMessage[] }).chatMessages);
  const ready = (page: Page) =>
    page
      .getByTestId('status')
      .filter({ hasText: /^ready$/ })
      .waitFor({ timeout: WAIT_MS });
  const say = async (page: Page, text: string) => {
    await page.getByLabel('Message').fill(text);
    await page.getByRole('button', { name: 'Send' }).click();
  };

  it('sends two messages, approves a tool, and a reload restores the conversation with the same ids', async () => {
    const page = await browser.newPage();
    page.setDefaultTimeout(WAIT_MS);
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    try {
      await page.goto(`${base}/`);
      expect(page.url()).toMatch(/\/chats\/[0-9a-f-]{36}$/);
      const chatId = page.url().split('/').at(-1)!;
      await ready(page);

      await say(page, 'What is the weather in Lima?');
      await page.getByText('Done: Sunny and 24 °C in Lima.').waitFor();
      await ready(page);

      await say(page, 'Book a table for 4, please.');
      await page.getByRole('button', { name: 'Approve' }).click();
      await page.getByText('Done: a table for 4 at 8 pm.').waitFor();
      await ready(page);
      const before = await messagesOf(page);
      expect(before.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
      const booking = before[3]!.parts.find((p) => p.type === 'tool-book_table')!;
      expect(booking).toMatchObject({ state: 'output-available', approval: { approved: true } });

      // The page's ids are the stored ones: the user messages' as the page made them, each reply's its first assistant message's.
      const stored = await agentOf().getHistory((await agentOf().getSession(chatId, { userId: 'demo' }))!);
      const turnIds = stored.filter((m, i) => m.role === 'user' || stored[i - 1]?.role === 'user').map((m) => m.id);
      expect(before.map((m) => m.id)).toEqual(turnIds);

      await page.reload();
      await page.getByText('Done: a table for 4 at 8 pm.').waitFor();
      const after = await messagesOf(page);
      expect(after.map((m) => m.id)).toEqual(before.map((m) => m.id));
      expect(after).toEqual(before);
      await expect(
        page.locator('li[data-message-id]').evaluateAll((items) => items.map((li) => li.getAttribute('data-message-id'))),
      ).resolves.toEqual(turnIds);
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it("a refused message (over the agent's limit) is a 413 the page shows as what to fix; nothing is stored, and the chat goes on", async () => {
    const page = await browser.newPage();
    page.setDefaultTimeout(WAIT_MS);
    const statuses: number[] = [];
    page.on('response', (response) => {
      if (response.request().method() === 'POST') statuses.push(response.status());
    });
    try {
      await page.goto(`${base}/`);
      const chatId = page.url().split('/').at(-1)!;
      await ready(page);
      await say(page, 'x'.repeat(300 * 1024));
      await page
        .getByRole('alert')
        .filter({ hasText: /over limits\.maxMessageBytes/ })
        .waitFor();
      expect(statuses).toEqual([413]);
      expect(await agentOf().getHistory((await agentOf().getSession(chatId, { userId: 'demo' }))!)).toEqual([]);

      await say(page, 'Hello again');
      await page.getByText('You said: Hello again').waitFor();
      expect(statuses).toEqual([413, 200]);
    } finally {
      await page.close();
    }
  });

  /** The messages the page shows, as role and text, and their ids. */
  const shown = (page: Page) =>
    page
      .locator('li[data-message-id]')
      .evaluateAll((items) => items.map((li) => [li.getAttribute('data-message-id'), li.getAttribute('data-role'), li.textContent]));

  it('a reload mid-reply shows the whole reply once with the stored ids; a second tab opened mid-reply follows the same stream', async () => {
    gated.reset();
    const calls = gated.stats.calls;
    const page = await browser.newPage();
    const tab = await browser.newPage();
    page.setDefaultTimeout(WAIT_MS);
    tab.setDefaultTimeout(WAIT_MS);
    const problems: string[] = [];
    for (const p of [page, tab]) p.on('pageerror', (error) => problems.push(error.message));
    try {
      await page.goto(`${gatedBase}/`);
      const chatId = page.url().split('/').at(-1)!;
      await ready(page);
      gated.release(2);
      await say(page, 'Count to four.');
      await page.getByText('One two').waitFor();

      await tab.goto(page.url());
      await tab.getByText('One two').waitFor();
      await page.reload();
      await page.getByText('One two').waitFor();
      gated.release();
      for (const p of [page, tab]) {
        await p.getByText('One two three four.').waitFor();
        await ready(p);
      }

      const stored = await agentOf().getHistory((await agentOf().getSession(chatId, { userId: 'demo' }))!);
      expect(stored.map((m) => [m.role, m.contents])).toEqual([
        ['user', [{ type: 'text', text: 'Count to four.' }]],
        ['assistant', [{ type: 'text', text: 'One two three four.' }]],
      ]);
      const expected = [
        [stored[0]!.id, 'user', 'Count to four.'],
        [stored[1]!.id, 'assistant', 'One two three four.'],
      ];
      expect(await shown(page)).toEqual(expected);
      expect(await shown(tab)).toEqual(expected);
      expect(gated.stats.calls - calls).toBe(1);
      expect(problems).toEqual([]);
    } finally {
      await tab.close();
      await page.close();
    }
  }, 60_000);

  it('Stop mid-reply ends the reply where it was; a reload shows the same text, stored as stopped', async () => {
    gated.reset();
    const page = await browser.newPage();
    page.setDefaultTimeout(WAIT_MS);
    try {
      await page.goto(`${gatedBase}/`);
      const chatId = page.url().split('/').at(-1)!;
      await ready(page);
      gated.release(2);
      await say(page, 'Count to four.');
      await page.getByText('One two').waitFor();
      await page.getByRole('button', { name: 'Stop' }).click();
      await ready(page);
      const before = await shown(page);
      expect(before.map(([, role, text]) => [role, text])).toEqual([
        ['user', 'Count to four.'],
        ['assistant', 'One two '],
      ]);
      const stored = await agentOf().getHistory((await agentOf().getSession(chatId, { userId: 'demo' }))!);
      expect(stored.map((m) => m.id)).toEqual(before.map(([id]) => id));
      expect(stored[1]!.metadata).toMatchObject({ stopped: true });

      await page.reload();
      await page.getByText('One two').waitFor();
      await ready(page);
      expect(await shown(page)).toEqual(before);
    } finally {
      await page.close();
    }
  }, 60_000);
});
