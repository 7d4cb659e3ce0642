import { BackendUnavailableError, ConfigurationError, CtxError } from '@ctx/core';
import { shortId, withDeadline } from '@ctx/core/backend';

/** What a failed call was doing, for error messages. Ids only, never message text. */
export interface Mem0CallSite {
  /** What the call did. */
  operation: 'search' | 'add' | 'list' | 'delete';
  /** The adapter's `kind`, e.g. `'platform'`. */
  kind: string;
  /** The session it was for (runs, session deletes). */
  sessionId?: string;
  /** The user it was for (`exportUserData`, `deleteUserData`). */
  userId?: string;
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

/** What the client said, as one sentence of at most 300 characters. */
function messageOf(error: unknown): string {
  const text = (error instanceof Error ? `${error.name}: ${error.message}` : String(error)).slice(0, 300).trim();
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

/** What the call was, for messages: `mem0 (platform) search for session "s1"`, `mem0 (oss) delete for user "u1"`. */
function describeSite(site: Mem0CallSite): string {
  const whose =
    site.sessionId !== undefined
      ? ` for session ${shortId(site.sessionId)}`
      : site.userId !== undefined
        ? ` for user ${shortId(site.userId)}`
        : '';
  return `mem0 (${site.kind}) ${site.operation}${whose}`;
}

const REJECTED: [string, string] = ['was rejected', 'check the scope ids and options.'];

/** Statuses that need a change before the same request can succeed: what happened, and what to do. */
const FIX_FIRST: Record<number, [string, string]> = {
  401: ['was refused', 'check the mem0 API key and its project.'],
  403: ['was refused', 'check the mem0 API key and its project.'],
  400: REJECTED,
  404: REJECTED,
  409: REJECTED,
  422: REJECTED,
  413: [
    'was refused as too large',
    "store shorter turns, or raise the mem0 project's memory limit if the message names a quota (mem0ai calls this MemoryQuotaExceededError).",
  ],
  415: ['was refused (unsupported content type)', 'check that `host` is the mem0 API, not a proxy that rewrites requests.'],
  451: ['was refused for legal reasons', 'check the region and terms of the mem0 project; retrying will not help.'],
};

/** What to do after a failure a later try can get past, by status. */
const PASSING: Record<number, string> = {
  402: 'Check the plan and billing of the mem0 project (for mem0 OSS: of its LLM or embedder account); retrying will not help until the quota is raised.',
  408: 'Retry later, or raise the timeout if mem0 is just slow.',
  424: 'A service mem0 depends on failed (for mem0 OSS: its LLM, embedder or vector store); retry later.',
  429: "Retry later; if it persists, check the mem0 plan's rate limits.",
};

/**
 * Turns what a mem0 client threw into a typed ctx error (kept as `cause`), saying what to do:
 * - `ConfigurationError` (change something first): credentials refused (401, 403), requests mem0
 *   rejects (400, 404, 409, 422 and any other 4xx not named here), too large (413), 415, 451.
 * - `BackendUnavailableError` with `backend: 'mem0'` (a later try can succeed): unreachable,
 *   402 (the plan's quota or billing: nothing in the app is wrong, and the provider is skipped
 *   meanwhile), 408, 424, 429, 5xx, and failures of mem0 OSS's LLM or embedder without a status.
 *
 * ctx errors pass through unchanged.
 */
export function toCtxError(error: unknown, site: Mem0CallSite): CtxError {
  if (CtxError.isInstance(error)) return error;
  const where = describeSite(site);
  const status = statusOf(error);
  const fix =
    status === undefined
      ? undefined
      : (FIX_FIRST[status] ?? (status >= 400 && status < 500 && PASSING[status] === undefined ? OTHER_4XX : undefined));
  if (fix) return new ConfigurationError(`${where} ${fix[0]} (HTTP ${status}): ${fix[1]} ${messageOf(error)}`, { cause: error });
  const kind = status !== undefined ? `HTTP ${status}` : NETWORK.test(messageOf(error)) ? 'unreachable' : 'failed';
  const todo = (status === undefined ? undefined : PASSING[status]) ?? 'Retry later.';
  return new BackendUnavailableError('mem0', `${where} failed (${kind}): ${messageOf(error)} ${todo}`, { cause: error });
}

/** Any other 4xx: the request as sent is refused. */
const OTHER_4XX: [string, string] = ['was rejected', 'check `host`, the mem0ai version and the options.'];

/**
 * Runs one mem0 call with core's `withDeadline`: it rejects with a `BackendUnavailableError` after
 * `timeoutMs`, with the signal's reason when `signal` aborts first, and with `toCtxError` of what
 * the call threw. The call itself cannot be cancelled (the mem0 clients take no signal, so none is
 * made) and may still complete later. `option` names the timeout option the message tells the user to raise.
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
