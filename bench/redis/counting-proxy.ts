import { createConnection, createServer, type Server } from 'node:net';
import { findFreePort } from '@ctx/redis-test-server';

/** A loopback TCP proxy that counts round trips: bursts of client writes, each answered by the server. */
export async function countingProxy(targetPort: number): Promise<{ port: number; roundTrips: () => number; server: Server }> {
  let roundTrips = 0;
  const server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: targetPort });
    let last: 'request' | 'reply' = 'reply';
    client.on('data', (chunk) => {
      if (last === 'reply') roundTrips++;
      last = 'request';
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      last = 'reply';
      client.write(chunk);
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  const port = await findFreePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { port, roundTrips: () => roundTrips, server };
}
