import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { planQuery, rangesOf } from './query-plan.js';

/** A running Cosmos DB stand-in (`@vercel/cosmosdb-server`) on loopback, in this process. */
export interface CosmosStandIn {
  /** `http://127.0.0.1:<port>`: give it to `CosmosClient` with `connectionPolicy.enableEndpointDiscovery: false`. */
  endpoint: string;
  port: number;
  /** Any base64 string works as the account key: the stand-in does not check signatures. */
  key: string;
  /** Closes the server and every open connection. The data is gone afterwards. */
  stop(): Promise<void>;
}

/** The key the tests pass to `CosmosClient` (the stand-in accepts any). */
export const STAND_IN_KEY = 'Y3R4LXN0YW5kLWluLWtleQ==';

type CreateHttpServer = (options?: { keepAlive?: boolean }) => Server;

/**
 * Starts `@vercel/cosmosdb-server` over plain http on 127.0.0.1 and a free port (port 0), inside
 * the calling process. Its TLS mode is not used: the bundled certificate expired in 2021.
 *
 * A cross-partition query-plan request (`x-ms-cosmos-is-query-plan-request` without a partition
 * key), which `@azure/cosmos` 4.10 and later send for every cross-partition query with
 * `enableQueryControl`, is answered with the plan of `planQuery` over the one partition key range
 * the stand-in has, as the service's gateway would; the stand-in itself would run the query instead.
 */
export async function startCosmosStandIn(options: { port?: number } = {}): Promise<CosmosStandIn> {
  // The package is CommonJS; createRequire keeps this module loadable from both ESM and tsx.
  const { createHttpServer } = createRequire(import.meta.url)('@vercel/cosmosdb-server') as { createHttpServer: CreateHttpServer };
  const server = createHttpServer({ keepAlive: true });
  const [handle] = server.listeners('request') as RequestListener[];
  if (!handle) throw new Error('@vercel/cosmosdb-server: the server has no request handler');
  server.removeAllListeners('request');
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const header = (name: string) => String(request.headers[name] ?? '').toLowerCase();
    if (
      request.method !== 'POST' ||
      header('x-ms-cosmos-is-query-plan-request') !== 'true' ||
      request.headers['x-ms-documentdb-partitionkey']
    )
      return handle(request, response);
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      let status = 200;
      let answer: unknown;
      try {
        const spec = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as {
          query?: string;
          parameters?: { name: string; value: unknown }[];
        };
        answer = planQuery(String(spec.query), spec.parameters ?? [], rangesOf(undefined, { paths: [] })).plan;
      } catch (error) {
        status = 400;
        answer = { code: 'BadRequest', message: `Syntax error: ${(error as Error).message}` };
      }
      response.writeHead(status, {
        'content-type': 'application/json',
        'x-ms-activity-id': '00000000-0000-0000-0000-000000000000',
        'x-ms-request-charge': '0',
      });
      response.end(JSON.stringify(answer));
    });
  });
  // The stand-in logs every handler error with console.error; tests provoke some on purpose.
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let stopped: Promise<void> | undefined;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    key: STAND_IN_KEY,
    stop: () =>
      (stopped ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}
