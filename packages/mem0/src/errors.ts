import { BackendUnavailableError, ConfigurationError, CtxError } from '@ctx/core';
import { shortId, withDeadline } from '@ctx/core/backend';

/** What a failed call was doing, for error messages. Ids only, never message text. */
export interface Mem0CallSite {
  /** `'search'` or `'add'`. */
  operation: 'search' | 'add';
  /** The adapter's `kind`, e.g. `'platform'`. */
  kind: string;
  sessionId: string;
}

const NETWORK =
  /fetch failed|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|socket hang up|Connection error|Failed to ping server|network/i;

function statusOf(error: unknown): number | undefined {
  const e = error as { status?: unknown; errorCode?: unknown; cause?: unknown } | null;
  if (typeof e !== 'object' || e === null) return undefined;
  if (typeof e.status === 'number') return e.status;
  if (typeof e.errorCode === 'string') {
    const match = /^HTTP_(\d{3})$/.exec(e.errorCode);
    if (match) return Number(match[1]);
  }
  return e.cause !== undefined && e.cause !== error ? statusOf(e.cause) : undefined;
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`.slice(0, 300);
  return String(error).slice(0, 300);
}

/** What the call was, for messages: `mem0 (platform) search for session "s1"`. */
function describeSite(site: Mem0CallSite): string {
  return `mem0 (${site.kind}) ${site.operation} for session ${shortId(site.sessionId)}`;
}

/**
 * Turns what a mem0 client threw into a typed ctx error (kept as `cause`):
 * credentials refused (401, 403) and requests mem0 rejects (400, 404, 409, 422) are a
 * `ConfigurationError`; everything else (unreachable, timeouts, 408, 429, 5xx, failures of mem0
 * OSS's LLM or embedder) is a `BackendUnavailableError` with `backend: 'mem0'`. ctx errors pass
 * through unchanged.
 */
export function toCtxError(error: unknown, site: Mem0CallSite): CtxError {
  if (CtxError.isInstance(error)) return error;
  const where = describeSite(site);
  const status = statusOf(error);
  if (status === 401 || status === 403) {
    return new ConfigurationError(`${where} was refused (HTTP ${status}): check the mem0 API key and its project. ${messageOf(error)}`, {
      cause: error,
    });
  }
  if (status === 400 || status === 404 || status === 409 || status === 422) {
    return new ConfigurationError(`${where} was rejected (HTTP ${status}): check the scope ids and options. ${messageOf(error)}`, {
      cause: error,
    });
  }
  const kind = status !== undefined ? `HTTP ${status}` : NETWORK.test(messageOf(error)) ? 'unreachable' : 'failed';
  return new BackendUnavailableError('mem0', `${where} failed (${kind}): ${messageOf(error)}`, { cause: error });
}

/**
 * Runs one mem0 call with core's `withDeadline`: it rejects with a `BackendUnavailableError` after
 * `timeoutMs`, with the signal's reason when `signal` aborts first, and with `toCtxError` of what
 * the call threw. The call itself cannot be cancelled (the mem0 clients take no signal) and may
 * still complete later. `option` names the timeout option the message tells the user to raise.
 */
export function callMem0<T>(
  call: () => Promise<T>,
  site: Mem0CallSite,
  timeoutMs: number,
  option: string,
  signal?: AbortSignal,
): Promise<T> {
  return withDeadline(call, {
    timeoutMs,
    signal,
    backend: 'mem0',
    operation: describeSite(site),
    hint: `Check that mem0 (and, for mem0 OSS, its LLM and embedder) is reachable, or raise ${option} if it is just slow.`,
    mapError: (error) => toCtxError(error, site),
  });
}
