import { afterEach, describe, expect, it } from 'vitest';
import { sendJson, sendJsonError } from './json-reply.js';
import { startLocalHttpServer, type LocalHttpServer } from './local-http-server.js';

let server: LocalHttpServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});
const errorFormat = (status: number, message: string) => ({ error: { code: String(status), message } });

describe('sendJson', () => {
  it('sends the body with application/json and the byte length of multi-byte text', async () => {
    server = await startLocalHttpServer((_req, res) => void sendJson(res, 201, { word: 'blåbær' }), {
      name: 'kit test server',
      errorFormat,
    });
    const reply = await fetch(server.origin);
    expect(reply.status).toBe(201);
    expect(reply.headers.get('content-type')).toBe('application/json');
    expect(reply.headers.get('content-length')).toBe(String(Buffer.byteLength('{"word":"blåbær"}')));
    expect(await reply.json()).toEqual({ word: 'blåbær' });
  });

  it('adds the given headers and lets them name another content type', async () => {
    server = await startLocalHttpServer(
      (_req, res) => void sendJson(res, 200, [1], { 'x-request-id': 'req_1', 'content-type': 'application/json; odata.metadata=none' }),
      { name: 'kit test server', errorFormat },
    );
    const reply = await fetch(server.origin);
    expect(reply.headers.get('x-request-id')).toBe('req_1');
    expect(reply.headers.get('content-type')).toBe('application/json; odata.metadata=none');
    expect(await reply.json()).toEqual([1]);
  });

  it('sends nothing and returns false once the reply is finished', async () => {
    const results: boolean[] = [];
    server = await startLocalHttpServer(
      (_req, res) => {
        results.push(sendJson(res, 200, { first: true }));
        results.push(sendJson(res, 500, { second: true }));
      },
      { name: 'kit test server', errorFormat },
    );
    const reply = await fetch(server.origin);
    expect(await reply.json()).toEqual({ first: true });
    expect(results).toEqual([true, false]);
  });

  it('throws a TypeError for a body with no JSON form', async () => {
    server = await startLocalHttpServer((_req, res) => void sendJson(res, 200, undefined), { name: 'kit test server', errorFormat });
    const reply = await fetch(server.origin);
    expect(reply.status).toBe(500);
    const body = (await reply.json()) as { error: { message: string } };
    expect(body.error.message).toContain('TypeError: sendJson: the 200 reply body has no JSON form (undefined).');
  });
});

describe('sendJsonError', () => {
  it('sends the error in the given format with the given status and headers', async () => {
    server = await startLocalHttpServer((_req, res) => void sendJsonError(res, 429, 'Slow down.', errorFormat, { 'retry-after': '2' }), {
      name: 'kit test server',
      errorFormat,
    });
    const reply = await fetch(server.origin);
    expect(reply.status).toBe(429);
    expect(reply.headers.get('retry-after')).toBe('2');
    expect(await reply.json()).toEqual({ error: { code: '429', message: 'Slow down.' } });
  });
});
