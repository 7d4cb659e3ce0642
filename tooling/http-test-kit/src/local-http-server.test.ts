import { afterEach, describe, expect, it } from 'vitest';
import { HttpError } from './http-error.js';
import { sendJson } from './json-reply.js';
import { startLocalHttpServer, type LocalHttpServer } from './local-http-server.js';

let server: LocalHttpServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});
const errorFormat = (status: number, message: string) => ({ detail: `${status}: ${message}` });

describe('startLocalHttpServer', () => {
  it('listens on 127.0.0.1 on a port of its own choosing', async () => {
    server = await startLocalHttpServer((_req, res) => void sendJson(res, 200, { ok: true }), { name: 'kit test server', errorFormat });
    expect(server.port).toBeGreaterThan(0);
    expect(server.origin).toBe(`http://127.0.0.1:${server.port}`);
    expect(server.server.address()).toMatchObject({ address: '127.0.0.1', port: server.port });
    expect(await (await fetch(server.origin)).json()).toEqual({ ok: true });
  });

  it('answers a thrown HttpError with its status and message in the server format', async () => {
    server = await startLocalHttpServer(
      async () => {
        throw new HttpError(409, 'Already there.');
      },
      { name: 'kit test server', errorFormat },
    );
    const reply = await fetch(server.origin);
    expect(reply.status).toBe(409);
    expect(await reply.json()).toEqual({ detail: '409: Already there.' });
  });

  it('answers any other error, thrown or rejected, with a 500 naming the server and the cause', async () => {
    server = await startLocalHttpServer(
      (req) => {
        if (req.url === '/sync') throw new Error('sync boom');
        return Promise.reject(new Error('async boom'));
      },
      { name: 'kit test server', errorFormat },
    );
    for (const path of ['/sync', '/async']) {
      const reply = await fetch(`${server.origin}${path}`);
      expect(reply.status).toBe(500);
      const body = (await reply.json()) as { detail: string };
      expect(body.detail).toMatch(new RegExp(`^500: The kit test server failed: Error: ${path.slice(1)} boom`));
    }
  });

  it('drops the connection when the handler fails after the reply began', async () => {
    server = await startLocalHttpServer(
      async (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('part');
        throw new Error('late');
      },
      { name: 'kit test server', errorFormat },
    );
    const reply = await fetch(server.origin);
    await expect(reply.text()).rejects.toThrow();
  });

  it('stop() cuts requests in flight and refuses new ones; restart() serves on the same port again', async () => {
    let started!: () => void;
    const inFlight = new Promise<void>((resolve) => (started = resolve));
    server = await startLocalHttpServer(
      async (req, res) => {
        if (req.url === '/hang') {
          started();
          return;
        }
        sendJson(res, 200, { ok: true });
      },
      { name: 'kit test server', errorFormat },
    );
    const hanging = fetch(`${server.origin}/hang`);
    await inFlight;
    await server.stop();
    await expect(hanging).rejects.toThrow();
    await expect(fetch(server.origin)).rejects.toThrow();
    await server.stop(); // a second stop is harmless

    await server.restart();
    expect(await (await fetch(server.origin)).json()).toEqual({ ok: true });
  });
});
