import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';

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
 */
export async function startCosmosStandIn(options: { port?: number } = {}): Promise<CosmosStandIn> {
  // The package is CommonJS; createRequire keeps this module loadable from both ESM and tsx.
  const { createHttpServer } = createRequire(import.meta.url)('@vercel/cosmosdb-server') as { createHttpServer: CreateHttpServer };
  const server = createHttpServer({ keepAlive: true });
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
