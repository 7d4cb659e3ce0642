import type { IncomingHttpHeaders } from 'node:http';
import { networkInterfaces } from 'node:os';
import { ConfigurationError } from '@ctx/core';

/** The names of this machine's loopback interface a browser may use in a `Host` header. */
const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '::1'];

/** A host name or IP address as a `Host` header or an `allowedHosts` entry may hold it, without the port. */
const HOST_NAME = /^(?:\[[0-9a-f:.]+\]|[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?)$/i;

/** `Host: name[:port]`, strictly: no user info, no path. */
const HOST_HEADER = /^(\[[0-9a-f:.]+\]|[a-z0-9_.-]+)(?::(\d{1,5}))?$/i;

/**
 * Decides which requests the inspector answers, against DNS rebinding: a page at a name an attacker
 * controls, resolving to this machine, sends its own name in `Host` (and `Origin`), never the
 * address the inspector listens on.
 */
export interface HostCheck {
  /** Why a request with these headers is refused, or undefined when it is answered. */
  refusal(headers: IncomingHttpHeaders): string | undefined;
}

/**
 * Checks the `allowedHosts` option: host names or IP addresses, without scheme, port or path.
 * @throws ConfigurationError naming the first entry that is not one.
 */
export function checkAllowedHosts(allowedHosts: unknown): string[] {
  if (allowedHosts === undefined) return [];
  if (!Array.isArray(allowedHosts))
    throw new ConfigurationError(
      `createInspector: allowedHosts must be an array of host names, e.g. ['inspector.example.com'], got ${typeof allowedHosts}.`,
    );
  return allowedHosts.map((entry: unknown) => {
    if (typeof entry !== 'string' || !HOST_NAME.test(entry))
      throw new ConfigurationError(
        `createInspector: allowedHosts must list host names such as "inspector.example.com" (no scheme, port or path), got ${JSON.stringify(entry)}.`,
      );
    return normalize(entry);
  });
}

/**
 * The check for a server listening on `host` (as given to `listen`) and `port` (the bound one), whose
 * page is at `url` (named in the refusal).
 * Answered: `Host` names the listening address (on loopback also `localhost`, `127.0.0.1` and
 * `[::1]`; on a wildcard address also each interface's address) with the inspector's port, or an
 * `allowedHosts` name with any port; and `Origin`, when sent, is `http://` one of the former, or
 * `http(s)://` one of `allowedHosts`.
 */
export function createHostCheck(options: { host: string; port: number; allowedHosts: readonly string[]; url: string }): HostCheck {
  const { port } = options;
  const listen = normalize(options.host);
  const own = new Set<string>([listen]);
  const wildcard = listen === '0.0.0.0' || listen === '::' || listen === '';
  if (wildcard || isLoopback(listen)) for (const name of LOOPBACK_NAMES) own.add(name);
  if (wildcard)
    for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) own.add(normalize(a.address.replace(/%.*$/, '')));
  const allowed = new Set(options.allowedHosts.map(normalize));
  const hint = `open ${options.url}${allowed.size ? ` or one of allowedHosts (${[...allowed].join(', ')})` : ''}, or add the name to allowedHosts (behind a proxy)`;

  return {
    refusal(headers) {
      const host = headers.host;
      if (typeof host !== 'string' || host === '') return `no Host header; ${hint}`;
      const parsed = HOST_HEADER.exec(host);
      if (!parsed) return `Host ${JSON.stringify(host)} is not a host name; ${hint}`;
      const name = normalize(parsed[1]!);
      const hostPort = Number(parsed[2] ?? 80);
      if (!allowed.has(name) && !(own.has(name) && hostPort === port))
        return `Host ${JSON.stringify(host)} is not the address the inspector listens on; ${hint}`;
      const origin = headers.origin;
      if (origin === undefined) return undefined;
      if (originAllowed(origin, own, allowed, port)) return undefined;
      return `Origin ${JSON.stringify(origin)} is not the inspector's page; ${hint}`;
    },
  };
}

function originAllowed(origin: string, own: ReadonlySet<string>, allowed: ReadonlySet<string>, port: number): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // `null` (a sandboxed frame, a file) and anything else that is not an origin
  }
  if (url.username || url.password || (url.pathname !== '/' && url.pathname !== '') || url.search || url.hash) return false;
  const name = normalize(url.hostname);
  if (allowed.has(name)) return url.protocol === 'http:' || url.protocol === 'https:';
  return url.protocol === 'http:' && own.has(name) && Number(url.port || 80) === port;
}

/** Lower case, without IPv6 brackets or a trailing dot. */
function normalize(host: string): string {
  return host
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
}

/** Whether `host` names this machine's loopback interface. */
export function isLoopback(host: string): boolean {
  const h = normalize(host);
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h) || h === '::ffff:127.0.0.1';
}
