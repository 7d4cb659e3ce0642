import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { HttpError } from './http-error.js';
import { sendJsonError, type ErrorFormat } from './json-reply.js';

/** Answers one request. May be async; what it throws is answered by `startLocalHttpServer`. */
export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

/** Options of `startLocalHttpServer`. */
export interface LocalHttpServerOptions {
  /** Names the server in the 500 reply to a handler that threw: `The <name> failed: <stack>`. */
  name: string;
  /** The service's error body, used for the replies the kit sends itself (a thrown `HttpError`, the 500). */
  errorFormat: ErrorFormat;
  /** Serve https with this certificate and key instead of plain http. */
  tls?: { cert: string; key: string };
}

/** A running `node:http` (or `node:https`) server on 127.0.0.1. */
export interface LocalHttpServer {
  readonly server: Server;
  /** The port chosen at start; `restart()` listens on it again. */
  readonly port: number;
  /** `http://127.0.0.1:PORT` (`https://` with `tls`). */
  readonly origin: string;
  /** Stops listening and drops every open connection, in-flight requests included. Resolves at once when not listening. */
  stop(): Promise<void>;
  /** Listens again on the same port after `stop()`. Rejects when the port was taken meanwhile. */
  restart(): Promise<void>;
}

/**
 * Starts `handler` on 127.0.0.1 on a free port (port 0). When the handler throws or rejects: an
 * `HttpError` is answered with its status and message, anything else with a 500, both in the
 * service's `errorFormat`; when the reply had already begun, the connection is dropped instead.
 */
export async function startLocalHttpServer(handler: RequestHandler, options: LocalHttpServerOptions): Promise<LocalHttpServer> {
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    // An async wrapper, so a handler that throws synchronously is answered like one that rejects.
    (async () => handler(req, res))().catch((error: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (error instanceof HttpError) {
        sendJsonError(res, error.status, error.message, options.errorFormat);
        return;
      }
      const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
      sendJsonError(res, 500, `The ${options.name} failed: ${detail}`, options.errorFormat);
    });
  };
  const server: Server = options.tls
    ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, onRequest)
    : createHttpServer(onRequest);
  await listen(server, 0);
  const { port } = server.address() as AddressInfo;
  return {
    server,
    port,
    origin: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve, reject) => {
        if (!server.listening) {
          resolve();
          return;
        }
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
    restart: async () => {
      if (!server.listening) await listen(server, port);
    },
  };
}

function listen(server: Server, port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
}
