import { request as httpRequest, type Agent, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';

/** A whole answer from the stand-in. */
export interface UpstreamReply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/**
 * Sends one request to the stand-in over `agent` and reads the whole answer. A request that fails
 * with ECONNRESET on a kept-alive socket is sent once more on a new one: the stand-in closed that
 * socket while it was idle (its keep-alive timeout), before it could read the request, which
 * happens whenever this process's event loop was busy long enough to miss the close.
 */
export function sendUpstream(
  agent: Agent,
  target: URL,
  request: { method: string; path: string; headers: OutgoingHttpHeaders; body?: Buffer | string },
  retried = false,
): Promise<UpstreamReply> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const out = httpRequest(
      { host: target.hostname, port: target.port, method: request.method, path: request.path, headers: request.headers, agent },
      (res) => {
        answered = true;
        const parts: Buffer[] = [];
        res.on('data', (chunk: Buffer) => parts.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(parts) }));
        res.on('error', reject);
      },
    );
    out.on('error', (error: NodeJS.ErrnoException) => {
      if (out.reusedSocket && error.code === 'ECONNRESET' && !answered && !retried) resolve(sendUpstream(agent, target, request, true));
      else reject(error);
    });
    out.end(request.body);
  });
}
