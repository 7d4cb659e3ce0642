import { BackendUnavailableError, ConfigurationError, CtxError } from '@ctx/core';

/** What a failed call was doing, for error messages. Ids only, never message text. */
export interface Mem0CallSite {
  /** `'search'` or `'add'`. */
  operation: 'search' | 'add';
  /** The adapter's `kind`, e.g. `'platform'`. */
  kind: string;
  sessionId: string;
}

const NETWORK = /fetch failed|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|socket hang up|Connection error|Failed to ping server|network/i;

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

function shortId(id: string): string {
  return id.length <= 60 ? id : `${id.slice(0, 60)}…`;
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
  const where = `mem0 (${site.kind}) ${site.operation} for session "${shortId(site.sessionId)}"`;
  const status = statusOf(error);
  if (status === 401 || status === 403) {
    return new ConfigurationError(`${where} was refused (HTTP ${status}): check the mem0 API key and its project. ${messageOf(error)}`, { cause: error });
  }
  if (status === 400 || status === 404 || status === 409 || status === 422) {
    return new ConfigurationError(`${where} was rejected (HTTP ${status}): check the scope ids and options. ${messageOf(error)}`, { cause: error });
  }
  const kind = status !== undefined ? `HTTP ${status}` : NETWORK.test(messageOf(error)) ? 'unreachable' : 'failed';
  return new BackendUnavailableError('mem0', `${where} failed (${kind}): ${messageOf(error)}`, { cause: error });
}

/**
 * Resolves or rejects like `promise`, but rejects with `BackendUnavailableError` after `timeoutMs`
 * and with the signal's reason when `signal` aborts first. The call itself cannot be cancelled
 * (the mem0 clients take no signal) and may still complete later.
 */
export function bounded<T>(promise: Promise<T>, timeoutMs: number, site: Mem0CallSite, signal?: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal?.aborted) {
      promise.catch(() => {});
      return reject(signal.reason);
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      reject(new BackendUnavailableError('mem0', `mem0 (${site.kind}) ${site.operation} for session "${shortId(site.sessionId)}" did not answer within ${timeoutMs} ms.`));
    }, timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        reject(toCtxError(error, site));
      },
    );
  });
}
