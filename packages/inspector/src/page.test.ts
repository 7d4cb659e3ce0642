// The page in a real browser: Debian's chromium, driven by playwright-core (never a downloaded
// browser). A scripted agent runs a conversation while the page is open; the test reads the DOM.
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ContextAudit } from '@ctx/core';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInspector, type Inspector } from './inspector.js';
import { createScenarioAgent, RESEARCH_STEPS, SCENARIO_TURNS } from './scripted-scenario.js';

const CHROMIUM = process.env.CTX_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = fileURLToPath(new URL('../test-results/screenshots/', import.meta.url));
// CI installs chromium (tooling/ensure-backends.mjs); elsewhere the test says why it did not run.
const EVIL = 'evil.test';
const haveBrowser = existsSync(CHROMIUM) || process.env.CI === 'true';

describe.runIf(haveBrowser)(`the page in chromium (${CHROMIUM})`, () => {
  let browser: Browser;
  let inspector: Inspector;
  let page: Page;

  beforeAll(async () => {
    // evil.test resolves to this machine, as a name an attacker rebinds to 127.0.0.1 would.
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', `--host-resolver-rules=MAP ${EVIL} 127.0.0.1`] });
    inspector = await createInspector({ port: 0, log: false });
    page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    page.setDefaultTimeout(30_000); // a page that never shows what the test waits for fails here

    mkdirSync(SHOTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await inspector?.close();
  });

  /** The tokens per source the page shows for the selected call. */
  const sourceRows = () =>
    page.$$eval('[data-testid=source-row]', (rows) =>
      rows.map((r) => {
        const num = (f: string) => Number((r.querySelector(`[data-field=${f}]`)?.textContent ?? '').replace(/,/g, ''));
        return {
          sourceId: r.getAttribute('data-source'),
          messageTokens: num('messageTokens'),
          instructionTokens: num('instructionTokens'),
          toolTokens: num('toolTokens'),
          tokens: num('tokens'),
        };
      }),
    );

  it('shows each run live, with the sources and tokens of its audit and why the prompt cache broke', { timeout: 120_000 }, async () => {
    let release: (() => void) | undefined;
    let holding = false;
    const { agent, audits } = createScenarioAgent({
      onEvent: inspector.onEvent,
      // The research turn's first search waits until the page has shown the run in progress.
      toolGate: () => (holding ? new Promise<void>((resolve) => (release = resolve)) : Promise.resolve()),
    });
    await page.goto(inspector.url);
    await page.waitForSelector('#live[data-state=open]');
    const session = agent.createSession({ sessionId: 'ada-1' });

    // Turn 1 arrives while the page is open (live, not from a reload).
    await agent.run(SCENARIO_TURNS[0], { session });
    await page.waitForSelector('[data-testid=run] .status.done');

    // Turn 2: a tool loop held open on its first search; the page shows the run running.
    holding = true;
    const research = agent.run(SCENARIO_TURNS[1], { session });
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=run]').length === 2);
    await page.waitForSelector('[data-testid=tool-call][data-status=running]');
    const progress = await page.locator('[data-testid=run]').nth(1).locator('[data-testid=progress]').textContent();
    expect(progress).toMatch(/^call 1 · 0 tool calls done · 1 running$/);
    expect(await page.locator('[data-testid=run]').nth(1).locator('.status').textContent()).toBe('running');
    await page.screenshot({ path: `${SHOTS}live-tool-loop.png` });
    holding = false;
    release!();
    await research;
    await page.waitForFunction(
      (steps) =>
        document.querySelectorAll('[data-testid=run]')[1]?.querySelector('[data-testid=progress]')?.textContent ===
        `done · ${steps + 1} model calls · ${steps} tool calls`,
      RESEARCH_STEPS,
    );

    await agent.run(SCENARIO_TURNS[2], { session });
    await agent.run(SCENARIO_TURNS[3], { session });
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=run] .status.done').length === 4);
    expect(audits).toHaveLength(4);

    // Every run's first model call: the same sources and tokens as the run's audit.
    for (let i = 0; i < 4; i++) {
      await page.locator('[data-testid=run]').nth(i).click();
      await page.locator('[data-testid=call-tab]').first().click();
      expect(bySource(await sourceRows()), `run ${i + 1}`).toEqual(bySource(auditRows(audits[i]!)));
      expect(await page.locator('[data-testid=total-tokens]').textContent()).toBe(audits[i]!.totalTokens.toLocaleString('en-US'));
      if (i > 0) {
        expect(await page.locator('[data-testid=repeated-tokens]').textContent()).toBe(
          audits[i]!.prefix!.repeatedTokens.toLocaleString('en-US'),
        );
        // The clock's instruction leads the request and changes every run: the page names it.
        const cacheBreak = page.locator('[data-testid=cache-break]');
        expect(await cacheBreak.getAttribute('data-source')).toBe('clock');
        expect(await cacheBreak.textContent()).toMatch(/clock: instruction (changes every run|changed since the previous call)/);
        expect(await cacheBreak.textContent()).toContain("declare it per-run (stability: 'per-run') so it goes after the history");
      }
    }
    // By the fourth run the clock changed in three runs in a row.
    expect(await page.locator('[data-testid=cache-break] .advice').textContent()).toBe(
      "→ clock: declare it per-run (stability: 'per-run') so it goes after the history",
    );
    expect(await page.locator('[data-testid=cache-break]').textContent()).toContain('clock: instruction changes every run');
    // Compaction ran before the fourth run: the history is a summary, and the page says what it replaced.
    expect(await page.locator('[data-testid=item] >> text=summary of').count()).toBe(1);
    // (docs makes its messages anew every run: not a removal.)
    expect(await page.locator('[data-testid=removed] li').allTextContents()).toEqual([
      expect.stringMatching(/^memory \d+ messages, [\d,]+ tokens: compaction: replaced by a summary$/),
    ]);
    // The docs budget dropped something, and says so.
    expect(await page.locator('[data-testid=diagnostics]').textContent()).toMatch(/docs budget: cap 120 tokens: kept \d+, dropped 1 item/);
    // Text stays hidden: the inspector was not asked to show it.
    expect(await page.locator('body').textContent()).not.toContain('Lisbon');
    // Charts: one stacked bar per run, one cached-share bar per run.
    expect(await page.locator('[data-testid=chart-cached] rect').count()).toBe(4);
    expect(await page.locator('[data-testid=chart-tokens] rect[fill]').count()).toBeGreaterThanOrEqual(4 * 4);
    await page.screenshot({ path: `${SHOTS}inspector.png` });

    // The research run's tool loop: four calls, and the last call's diff adds the third result.
    await page.locator('[data-testid=run]').nth(1).click();
    expect(await page.locator('[data-testid=call-tab]').count()).toBe(RESEARCH_STEPS + 1);
    await page.locator('[data-testid=call-tab]').nth(RESEARCH_STEPS).click();
    expect(await page.locator('[data-testid=cache] .ok').textContent()).toBe('Everything the previous call sent is repeated.');
    expect(await page.locator('[data-testid=diff] h3').textContent()).toBe('Difference with the previous call (+2 / −0)');
    await page.screenshot({ path: `${SHOTS}tool-loop.png` });
  });

  it('reads nothing for a page under another name that resolves to this machine (DNS rebinding)', { timeout: 60_000 }, async () => {
    const { agent } = createScenarioAgent({ onEvent: inspector.onEvent });
    await agent.run(SCENARIO_TURNS[0], { session: agent.createSession({ sessionId: 'private-1' }) });
    const port = new URL(inspector.url).port;
    const evil = await browser.newPage();
    try {
      // The page as the rebinding site: same name, same port, now resolving to 127.0.0.1.
      const doc = await evil.goto(`http://${EVIL}:${port}/`);
      expect(doc?.status()).toBe(403);
      expect(await evil.locator('body').textContent()).not.toContain('ctx inspector');
      const read = await evil.evaluate(async () => {
        const out: Array<{ path: string; status: number; body: string }> = [];
        for (const path of ['/api/state', '/app.js', '/', '/api/events']) {
          const res = await fetch(path);
          out.push({ path, status: res.status, body: await res.text() });
        }
        return out;
      });
      for (const r of read) {
        expect(r.status, r.path).toBe(403);
        expect(r.body, r.path).not.toMatch(/private-1|EventSource|<html/);
        expect(JSON.parse(r.body), r.path).toMatchObject({ error: 'forbidden' });
      }
      // The live stream does not open either.
      const stream = await evil.evaluate(
        () =>
          new Promise<string>((resolve) => {
            const events = new EventSource('/api/events');
            events.onopen = () => resolve('open');
            events.onerror = () => {
              events.close();
              resolve('refused');
            };
          }),
      );
      expect(stream).toBe('refused');
    } finally {
      await evil.close();
    }
    // The inspector's own address still works, in the same browser.
    const own = await browser.newPage();
    try {
      expect((await own.goto(inspector.url))?.status()).toBe(200);
      const state = await own.evaluate(async () => {
        const res = await fetch('api/state');
        return { status: res.status, body: await res.text() };
      });
      expect(state.status).toBe(200);
      expect(state.body).toContain('private-1');
      await own.waitForSelector('#live[data-state=open]');
    } finally {
      await own.close();
    }
  });
});

/** What the page should show for a run's first call: the audit's sources that sent anything. */
function auditRows(audit: ContextAudit) {
  return audit.sources
    .filter((s) => s.tokens > 0)
    .map((s) => ({
      sourceId: s.sourceId,
      messageTokens: s.messageTokens,
      instructionTokens: s.instructionTokens,
      toolTokens: s.toolTokens,
      tokens: s.tokens,
    }));
}

function bySource<T extends { sourceId: string | null }>(rows: T[]): T[] {
  return [...rows].sort((a, b) => String(a.sourceId).localeCompare(String(b.sourceId)));
}
