import { request } from 'node:http';
import { createServer } from 'node:net';
import { ConfigurationError, createAgent, InMemorySessionStore, type Message } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createInspector, type Inspector, isLoopback } from './inspector.js';
import type { InspectorSnapshot, RunView } from './model.js';
import { createScenarioAgent, SCENARIO_TURNS } from './scripted-scenario.js';

const open: Inspector[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((i) => i.close()));
});
async function start(options: Parameters<typeof createInspector>[0] = {}) {
  const inspector = await createInspector({ port: 0, log: false, ...options });
  open.push(inspector);
  return inspector;
}
const state = async (inspector: Inspector) =>
  (await (await fetch(`${inspector.url}api/state`)).json()) as InspectorSnapshot & { storeError?: string };

/** A GET (or another method) with the headers given as they are, `Host` included: what `fetch` does not let a test forge. */
function raw(url: string, path: string, headers: { host: string; origin?: string }, method = 'GET') {
  const { hostname, port } = new URL(url);
  return new Promise<{ status: number; type: string | undefined; body: string }>((resolve, reject) => {
    const req = request({ hostname: hostname.replace(/^\[|\]$/g, ''), port, path, method, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
        // The event stream never ends by itself: its first line is enough.
        if (res.headers['content-type'] === 'text/event-stream') res.destroy();
      });
      res.on('close', () => resolve({ status: res.statusCode!, type: res.headers['content-type'], body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Opens the page's event stream; once the headers are in, the server sends it every change. */
async function openEvents(url: string): Promise<Response> {
  return fetch(`${url}api/events`);
}

/** Reads `run` events from an open event stream until `done` says stop (bounded by `max` events). */
async function readRunEvents(res: Response, done: (runs: RunView[]) => boolean, max = 500): Promise<RunView[]> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const runs: RunView[] = [];
  let buffer = '';
  try {
    while (runs.length < max && !done(runs)) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      buffer += value;
      let end = buffer.indexOf('\n\n');
      while (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = /^event: run\ndata: (.*)$/s.exec(block);
        if (data) runs.push(JSON.parse(data[1]!) as RunView);
        end = buffer.indexOf('\n\n');
      }
    }
  } finally {
    await reader.cancel();
  }
  return runs;
}

describe('createInspector', () => {
  it('refuses a host that is not loopback unless allowed, before listening', async () => {
    for (const host of ['0.0.0.0', '192.168.1.10', '::', 'example.com']) {
      const error = await createInspector({ host, port: 0, log: false }).catch((e: unknown) => e);
      expect(ConfigurationError.isInstance(error), host).toBe(true);
      expect((error as Error).message).toContain(`host "${host}" is not a loopback address`);
      expect((error as Error).message).toContain('allowRemote: true');
    }
    expect(['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]'].every(isLoopback)).toBe(true);
    expect(['0.0.0.0', '10.0.0.1', '::', '128.0.0.1', 'localhost.evil.test'].some(isLoopback)).toBe(false);
  });

  it('rejects a bad port or maxRuns, and a port in use, with the value in the message', async () => {
    await expect(createInspector({ port: -1, log: false })).rejects.toThrow(/port must be an integer from 0 to 65535, got -1/);
    await expect(createInspector({ port: 0, maxRuns: 1.5, log: false })).rejects.toThrow(/maxRuns must be a positive integer, got 1.5/);
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as { port: number }).port;
    try {
      const error = await createInspector({ port, log: false }).catch((e: unknown) => e);
      expect(ConfigurationError.isInstance(error)).toBe(true);
      expect((error as Error).message).toBe(
        `createInspector: port ${port} on 127.0.0.1 is in use; pass another port, or port: 0 for a free one.`,
      );
    } finally {
      await new Promise((r) => taken.close(r));
    }
  });

  it('serves the page on loopback and prints its address once', async () => {
    const lines: string[] = [];
    const inspector = await start({ log: (l) => lines.push(l) });
    expect(inspector.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect(lines).toEqual([`ctx inspector: ${inspector.url}`]);
    const page = await fetch(inspector.url);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await page.text()).toContain('<script src="app.js"></script>');
    expect(await (await fetch(`${inspector.url}app.js`)).text()).toContain("new EventSource('api/events')");
    expect((await fetch(`${inspector.url}nope`)).status).toBe(404);
    expect((await fetch(`${inspector.url}api/state`, { method: 'POST' })).status).toBe(405);
    expect(inspector.onEvent.includeContent).toBe(true);
  });

  it('refuses every request whose Host or Origin is not the address it listens on (DNS rebinding), before reading anything', async () => {
    let listed = 0;
    const sessionStore = new InMemorySessionStore();
    const list = sessionStore.list.bind(sessionStore);
    sessionStore.list = (options) => {
      listed++;
      return list(options);
    };
    const inspector = await start({ sessionStore });
    const { agent } = createScenarioAgent({ onEvent: inspector.onEvent });
    await agent.run(SCENARIO_TURNS[0], { session: agent.createSession({ sessionId: 'secret-session' }) });
    const port = new URL(inspector.url).port;
    const paths = ['/', '/index.html', '/app.js', '/style.css', '/api/state', '/api/events', '/api/state?x=1', '/nope'];
    const forged: Array<{ host: string; origin?: string }> = [
      { host: `evil.test:${port}` }, // a name that resolves to 127.0.0.1: a rebinding page's own name
      { host: 'evil.test' },
      { host: `127.0.0.1:${Number(port) + 1}` }, // another port: not the inspector's address
      { host: `evil.test@127.0.0.1:${port}` },
      { host: `localhost.evil.test:${port}` },
      { host: `127.0.0.1:${port}`, origin: `http://evil.test:${port}` },
      { host: `127.0.0.1:${port}`, origin: `https://127.0.0.1:${port}` },
      { host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${Number(port) + 1}` },
      { host: `127.0.0.1:${port}`, origin: 'null' },
    ];
    for (const headers of forged) {
      for (const path of paths) {
        const res = await raw(inspector.url, path, headers);
        const what = `${path} ${JSON.stringify(headers)}`;
        expect(res.status, what).toBe(403);
        expect(res.type, what).toBe('application/json; charset=utf-8');
        expect(JSON.parse(res.body), what).toEqual({ error: 'forbidden', message: expect.stringContaining(`open ${inspector.url}`) });
        expect(res.body, what).not.toMatch(/secret-session|Lisbon|<html|EventSource/);
      }
      expect((await raw(inspector.url, '/api/state', headers, 'POST')).status).toBe(403);
    }
    expect(JSON.parse((await raw(inspector.url, '/api/state', forged[0]!)).body).message).toBe(
      `Host "evil.test:${port}" is not the address the inspector listens on; open ${inspector.url}, or add the name to allowedHosts (behind a proxy)`,
    );
    expect(listed).toBe(0);
    // The loopback names with the inspector's port are answered, with or without a same-origin Origin.
    for (const headers of [
      { host: `127.0.0.1:${port}` },
      { host: `localhost:${port}` },
      { host: `LOCALHOST:${port}` },
      { host: `[::1]:${port}` },
      { host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port}` },
      { host: `localhost:${port}`, origin: `http://localhost:${port}` },
    ]) {
      const res = await raw(inspector.url, '/api/state', headers);
      expect(res.status, JSON.stringify(headers)).toBe(200);
      expect(res.body).toContain('secret-session');
      expect((await raw(inspector.url, '/api/events', headers)).body).toBe('retry: 1000\n\n');
    }
    expect(listed).toBe(6);
  });

  it('answers the names in allowedHosts on any port, and refuses an entry that is not a host name', async () => {
    const inspector = await start({ allowedHosts: ['Inspector.Example.test'] });
    const port = new URL(inspector.url).port;
    for (const headers of [
      { host: 'inspector.example.test' },
      { host: 'inspector.example.test:8443', origin: 'https://inspector.example.test:8443' },
      { host: `127.0.0.1:${port}`, origin: 'https://inspector.example.test' },
    ])
      expect((await raw(inspector.url, '/api/state', headers)).status, JSON.stringify(headers)).toBe(200);
    const refused = await raw(inspector.url, '/', { host: 'other.example.test' });
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body).message).toContain('one of allowedHosts (inspector.example.test)');
    expect((await raw(inspector.url, '/', { host: 'inspector.example.test', origin: 'ftp://inspector.example.test' })).status).toBe(403);
    for (const entry of ['https://inspector.example.test', 'inspector.example.test:80', 'a/b', '', 42])
      await expect(createInspector({ port: 0, log: false, allowedHosts: [entry as string] })).rejects.toThrow(
        `allowedHosts must list host names such as "inspector.example.com" (no scheme, port or path), got ${JSON.stringify(entry)}.`,
      );
    await expect(createInspector({ port: 0, log: false, allowedHosts: 'x' as unknown as string[] })).rejects.toThrow(ConfigurationError);
  });

  it('streams each change of a run to the page as it happens', async () => {
    const inspector = await start();
    const { agent } = createScenarioAgent({ onEvent: inspector.onEvent });
    const session = agent.createSession({ sessionId: 'live' });
    const stream = await openEvents(inspector.url);
    await agent.run(SCENARIO_TURNS[0], { session });
    const runs = await readRunEvents(stream, (seen) => seen.some((r) => r.status === 'done'));
    expect(runs[0]).toMatchObject({ sessionId: 'live', status: 'running', calls: [] });
    expect(runs.some((r) => r.status === 'running' && r.calls.length === 1)).toBe(true);
    expect(runs.at(-1)).toMatchObject({ status: 'done', progress: 'done · 2 model calls · 1 tool call' });
    const snap = await state(inspector);
    expect(snap.sessions.map((s) => s.sessionId)).toEqual(['live']);
    expect(snap.runs[runs[0]!.runId]!.calls).toHaveLength(2);
  });

  it("applies the agent's redact to every text it shows, and keeps no text without showText", async () => {
    const redact = (messages: readonly Message[]) =>
      messages.map((m) => ({
        ...m,
        contents: m.contents.map((c) => {
          if (c.type === 'text') return { ...c, text: c.text.replace(/Lisbon|Ada/g, '[redacted]') };
          if (c.type === 'function-call') return { ...c, arguments: c.arguments.replace(/Lisbon/g, '[redacted]') };
          if (c.type === 'function-result') return { ...c, result: JSON.parse(JSON.stringify(c.result).replace(/Lisbon/g, '[redacted]')) };
          return c;
        }),
      }));
    const shown = await start({ showText: true, redact });
    const hidden = await start({ redact: () => Promise.reject(new Error('never called without showText')) });
    for (const inspector of [shown, hidden]) {
      const { agent } = createScenarioAgent({ onEvent: inspector.onEvent });
      await agent.run(SCENARIO_TURNS[0], { session: agent.createSession() });
      await inspector.idle();
    }
    const withText = JSON.stringify(await state(shown));
    expect(withText).not.toMatch(/Lisbon|Ada/);
    expect(withText).toContain('[redacted]');
    expect(withText).toContain('You are a helpful assistant.');
    const [run] = Object.values((await state(shown)).runs);
    expect(run!.tools[0]).toMatchObject({ arguments: '{"city":"[redacted]"}', result: { city: '[redacted]' } });
    const withoutText = JSON.stringify(await state(hidden));
    expect(withoutText).not.toMatch(/Lisbon|Ada|redacted|helpful assistant/);
    expect(Object.values((await state(hidden)).runs)[0]!.calls[0]!.totalTokens).toBeGreaterThan(0);
  });

  it('lists the sessions of a store with their user and title', async () => {
    const sessionStore = new InMemorySessionStore();
    const agent = createAgent({ client: new ScriptedChatClient({ replies: () => 'ok' }), sessionStore });
    await agent.run('hi', { sessionId: 'kept-1', userId: 'ada' });
    const inspector = await start({ sessionStore });
    const snap = await state(inspector);
    expect(snap.sessions).toEqual([{ sessionId: 'kept-1', userId: 'ada', runIds: [], droppedRuns: 0 }]);
  });

  it("says why the store's sessions are missing when listing them fails", async () => {
    const sessionStore = new InMemorySessionStore();
    sessionStore.list = () => Promise.reject(new Error('store offline'));
    const inspector = await start({ sessionStore });
    expect(await state(inspector)).toMatchObject({ sessions: [], storeError: 'store offline' });
  });

  it('keeps at most maxRuns runs', async () => {
    const inspector = await start({ maxRuns: 2 });
    const agent = createAgent({ client: new ScriptedChatClient({ replies: () => 'ok' }), onEvent: inspector.onEvent });
    const session = agent.createSession();
    for (const text of ['a', 'b', 'c', 'd']) await agent.run(text, { session });
    const snap = await state(inspector);
    expect(Object.keys(snap.runs)).toHaveLength(2);
    expect(snap.sessions[0]).toMatchObject({ droppedRuns: 2 });
  });

  it('ends the live connections on close', async () => {
    const inspector = await createInspector({ port: 0, log: false });
    const res = await fetch(`${inspector.url}api/events`);
    const reader = res.body!.getReader();
    await reader.read(); // the retry line
    await inspector.close();
    let ended = false;
    for (let i = 0; i < 10 && !ended; i++) ended = (await reader.read()).done;
    expect(ended).toBe(true);
    await expect(fetch(inspector.url)).rejects.toThrow();
  });
});
