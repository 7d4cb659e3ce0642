import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { sendJson } from './json-reply.js';
import { startLocalHttpServer, type LocalHttpServer } from './local-http-server.js';
import { isJsonObject, recordRequest, type RecordedHttpRequest } from './recorded-request.js';
import { readJsonBody } from './request-body.js';

let server: LocalHttpServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

async function recordingServer(): Promise<{ server: LocalHttpServer; recorded: RecordedHttpRequest[] }> {
  const recorded: RecordedHttpRequest[] = [];
  server = await startLocalHttpServer(
    async (req, res) => {
      recorded.push(recordRequest(req, (await readJsonBody(req)).value));
      sendJson(res, 200, {});
    },
    { name: 'kit test server', errorFormat: (_status, message) => ({ message }) },
  );
  return { server, recorded };
}

/** Sends a request with a repeated header, which fetch cannot do. */
function rawRequest(origin: string, path: string, headers: Record<string, string | string[]>, body: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(`${origin}${path}`, { method: 'put', headers }, (res) => {
      res.resume();
      res.on('end', () => resolve());
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('recordRequest', () => {
  it('records the method, the path without its query, the decoded query and the JSON object body', async () => {
    const { server, recorded } = await recordingServer();
    await fetch(`${server.origin}/v1/things%20here?api-version=2024&name=a%20b&name=last`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-Custom': 'Yes' },
      body: JSON.stringify({ model: 'm', input: [1, 2] }),
    });
    expect(recorded).toHaveLength(1);
    const [only] = recorded;
    expect(only).toMatchObject({
      method: 'POST',
      path: '/v1/things%20here',
      query: { 'api-version': '2024', name: 'last' },
      body: { model: 'm', input: [1, 2] },
    });
    expect(only?.headers['x-custom']).toBe('Yes');
    expect(only?.headers['content-type']).toBe('application/json');
  });

  it('joins a repeated header with ", " under its lower-case name and upper-cases the method', async () => {
    const { server, recorded } = await recordingServer();
    await rawRequest(server.origin, '/h', { 'X-Many': ['a', 'b'] }, '');
    expect(recorded[0]?.method).toBe('PUT');
    expect(recorded[0]?.headers['x-many']).toBe('a, b');
  });

  it('keeps the body only when it is a JSON object', async () => {
    const { server, recorded } = await recordingServer();
    for (const body of ['[1,2]', '"text"', '{bad', '']) await fetch(server.origin, { method: 'POST', body });
    expect(recorded.map((r) => r.body)).toEqual([undefined, undefined, undefined, undefined]);
  });
});

describe('isJsonObject', () => {
  it('accepts plain objects only', () => {
    expect(isJsonObject({})).toBe(true);
    expect(isJsonObject([])).toBe(false);
    expect(isJsonObject(null)).toBe(false);
    expect(isJsonObject('x')).toBe(false);
  });
});
