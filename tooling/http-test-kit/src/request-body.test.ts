import { afterEach, describe, expect, it } from 'vitest';
import { HttpError } from './http-error.js';
import { sendJson } from './json-reply.js';
import { startLocalHttpServer, type LocalHttpServer } from './local-http-server.js';
import { parseJsonBody, readBody, readJsonBody } from './request-body.js';

const errorFormat = (status: number, message: string) => ({ status, message });
let server: LocalHttpServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

describe('parseJsonBody', () => {
  it('gives no value and no error for an empty body', () => {
    expect(parseJsonBody('')).toEqual({ value: undefined });
  });

  it('parses any JSON value', () => {
    expect(parseJsonBody('{"a":[1,"x"]}')).toEqual({ value: { a: [1, 'x'] } });
    expect(parseJsonBody('[1]')).toEqual({ value: [1] });
    expect(parseJsonBody(' 3 ')).toEqual({ value: 3 });
  });

  it('gives a 400 that names the parse error for invalid JSON, whitespace-only bodies included', () => {
    for (const raw of ['{"a":', 'not json', '   ']) {
      const body = parseJsonBody(raw);
      expect(body.value).toBeUndefined();
      expect(body.invalid).toBeInstanceOf(HttpError);
      expect(body.invalid?.status).toBe(400);
      expect(body.invalid?.message).toMatch(/^The request body is not valid JSON: .+/);
    }
  });
});

describe('readBody', () => {
  it('reads a body that arrives in many chunks as UTF-8, multi-byte characters intact', async () => {
    let received: string | undefined;
    server = await startLocalHttpServer(
      async (req, res) => {
        received = await readBody(req);
        sendJson(res, 200, { length: received.length });
      },
      { name: 'kit test server', errorFormat },
    );
    const text = 'æøå-€-'.repeat(50_000);
    const reply = await fetch(server.origin, { method: 'POST', body: text });
    expect(await reply.json()).toEqual({ length: text.length });
    expect(received).toBe(text);
  });

  it('accepts a body of exactly maxBytes and answers a larger one with 413 on a connection that still works', async () => {
    server = await startLocalHttpServer(
      async (req, res) => {
        const text = await readBody(req, { maxBytes: 10 });
        sendJson(res, 200, { text });
      },
      { name: 'kit test server', errorFormat },
    );
    const ok = await fetch(server.origin, { method: 'POST', body: '0123456789' });
    expect(await ok.json()).toEqual({ text: '0123456789' });

    const tooLarge = await fetch(server.origin, { method: 'POST', body: 'x'.repeat(100_000) });
    expect(tooLarge.status).toBe(413);
    expect(await tooLarge.json()).toEqual({
      status: 413,
      message: 'The request body is larger than 10 bytes, the most this test server accepts.',
    });

    const after = await fetch(server.origin, { method: 'POST', body: 'again' });
    expect(await after.json()).toEqual({ text: 'again' });
  });
});

describe('readJsonBody', () => {
  it('reads and parses in one step', async () => {
    const seen: unknown[] = [];
    server = await startLocalHttpServer(
      async (req, res) => {
        const body = await readJsonBody(req);
        seen.push(body.invalid ? body.invalid.status : body.value);
        sendJson(res, 200, {});
      },
      { name: 'kit test server', errorFormat },
    );
    await fetch(server.origin, { method: 'POST', body: '{"q":1}' });
    await fetch(server.origin, { method: 'POST', body: '{' });
    await fetch(server.origin);
    expect(seen).toEqual([{ q: 1 }, 400, undefined]);
  });
});
