import { historiesIn } from '../policies/wrap-provider.js';
import { checkId, checkOptionNames, optionNames, shortId } from '../backend/checks.js';
import { MAX_LIST_LIMIT } from '../backend/session-cursor.js';
import { ConcurrencyError, ConfigurationError, CtxError } from '../errors.js';
import type { Message } from '../messages/message.js';
import { AgentSession } from '../session/agent-session.js';
import { sessionMethods } from '../session/session-methods.js';
import type { JsonValue } from '../contracts/json.js';
import type { AgentView, ContextProvider } from '../contracts/run-view.js';
import type { ListSessionsOptions, SessionPage, SessionStore } from '../contracts/session-store.js';
import type { Agent, UserDataExport } from './agent.js';
import type { AgentRuntime } from './execute-run.js';
import { runHooks } from './provider-hooks.js';

/** How many sessions a user-data export or delete works on at once. */
const SESSIONS_AT_ONCE = 8;
/** How many times `deleteUserData` deletes a session that is listed again before it gives up. */
const DELETE_ATTEMPTS = 2;

const LIST_OPTIONS = optionNames<ListSessionsOptions>()({ userId: true, limit: true, cursor: true, signal: true });

/**
 * The agent's session lifecycle: listing the store's sessions, deleting a session with everything
 * that belongs to it (each provider's `onSessionDeleted`, then the store), and exporting or
 * deleting everything about one user.
 */
export function sessionLifecycle(
  runtime: AgentRuntime,
): Pick<Agent, 'listSessions' | 'deleteSession' | 'exportUserData' | 'deleteUserData'> {
  const { options, history } = runtime;
  const { name, client, contextProviders, sessionStore: store, providerTimeoutMs } = options;
  const { restoreSession } = sessionMethods(name, history.validators, store);

  const lister = (): SessionStore & Pick<Required<SessionStore>, 'list'> => {
    if (!store) {
      throw new ConfigurationError(
        `Agent "${name}" has no sessionStore; pass one to createAgent to list sessions or export or delete a user's data.`,
      );
    }
    if (typeof store.list !== 'function') {
      throw new ConfigurationError(
        `Agent "${name}": its sessionStore cannot list sessions (it has no list method), so it cannot list sessions or export or delete a user's data; use a store that lists (InMemorySessionStore, FileSessionStore, Redis, Cosmos).`,
      );
    }
    return store as SessionStore & Pick<Required<SessionStore>, 'list'>;
  };

  /**
   * Every provider's `onSessionDeleted` (the default history's included when the rule adds it), then
   * the store's delete, then, when the store held the session, the hooks once more: a hosted turn
   * running meanwhile may have stored its messages between the first round and the delete (its
   * save landed before the delete, so it does not clean up itself). A turn whose save comes after
   * the delete fails and removes what it stored (`hostedRun`).
   */
  const deleteLoaded = async (session: AgentSession, signal: AbortSignal): Promise<boolean> => {
    const providers = history.providersFor(session, {});
    const clear = () => clearSessionData({ name, client, providers, session, signal, timeoutMs: providerTimeoutMs });
    await clear();
    const deleted = store ? await store.delete(session.sessionId, { signal }) : false;
    if (deleted) await clear();
    return deleted;
  };

  /** The stored session `sessionId`, validated, or undefined when the store has none. */
  const load = async (sessionId: string, signal: AbortSignal): Promise<AgentSession | undefined> => {
    const stored = await store?.get(sessionId, { signal });
    return stored && restoreSession(stored.session);
  };

  /** Each page of the user's sessions, following `nextCursor`; refuses a store whose pages do not move on. */
  async function* pages(userId: string, signal: AbortSignal): AsyncGenerator<SessionPage> {
    const listing = lister();
    let cursor: string | undefined;
    for (;;) {
      const page = await listing.list({ userId, limit: MAX_LIST_LIMIT, signal, ...(cursor ? { cursor } : {}) });
      yield page;
      if (page.nextCursor === undefined) return;
      if (page.nextCursor === cursor || page.sessions.length === 0) {
        throw new CtxError(
          `Agent "${name}": the sessionStore's list returned a next page cursor that does not move on (the same cursor, or an empty page); stopped.`,
        );
      }
      cursor = page.nextCursor;
    }
  }

  return {
    listSessions: async (listOptions) => {
      checkOptionNames('agent.listSessions', listOptions, LIST_OPTIONS);
      return lister().list(listOptions);
    },

    async deleteSession(target, { signal = new AbortController().signal } = {}) {
      signal.throwIfAborted();
      let session: AgentSession;
      if (typeof target === 'string') {
        checkId(target, 'session id');
        session = (await load(target, signal)) ?? new AgentSession({ sessionId: target });
      } else if (typeof target?.sessionId === 'string' && typeof target.state === 'object') {
        session = target;
      } else {
        throw new ConfigurationError('deleteSession takes an AgentSession or a session id.');
      }
      return deleteLoaded(session, signal);
    },

    async exportUserData(userId, { signal = new AbortController().signal } = {}) {
      checkId(userId, 'userId');
      signal.throwIfAborted();
      const exportSession = async (sessionId: string) => {
        const session = await load(sessionId, signal);
        if (session?.metadata.userId !== userId) return undefined; // deleted or handed to another user meanwhile
        const histories = historiesIn(history.providersFor(session, {}));
        const messages = await runHooks(histories, 'exportUserData', signal, providerTimeoutMs, (p, hookSignal) =>
          p.getMessages(sessionId, { state: session.state[p.sourceId] ?? {}, signal: hookSignal }),
        );
        const byProvider: Record<string, Message[]> = {};
        histories.forEach((p, i) => (byProvider[p.sourceId] = messages[i]!));
        return { session: session.toJSON(), history: byProvider };
      };
      const sessions: UserDataExport['sessions'] = [];
      for await (const page of pages(userId, signal)) {
        const exported = await mapAtMost(SESSIONS_AT_ONCE, page.sessions, (s) => exportSession(s.sessionId));
        for (const entry of exported) if (entry) sessions.push(entry);
      }
      const agent: AgentView = { name, client, contextProviders };
      const exporters = contextProviders.filter((p) => p.exportUserData);
      const values = await runHooks(exporters, 'exportUserData', signal, providerTimeoutMs, (p, hookSignal) =>
        p.exportUserData!({ agent, userId, signal: hookSignal }),
      );
      const providers: Record<string, JsonValue> = {};
      exporters.forEach((p, i) => {
        if (values[i] !== undefined) providers[p.sourceId] = values[i] as JsonValue;
      });
      return { type: 'ctx.user-data', userId, exportedAt: new Date().toISOString(), sessions, providers };
    },

    async deleteUserData(userId, { signal = new AbortController().signal } = {}) {
      checkId(userId, 'userId');
      signal.throwIfAborted();
      // Each round lists the first page again: what was deleted has left the listing, and a
      // session saved meanwhile (moved to the front) is still found.
      const attempts = new Map<string, number>();
      let deleted = 0;
      const listing = lister();
      for (;;) {
        const page = await listing.list({ userId, limit: MAX_LIST_LIMIT, signal });
        if (page.sessions.length === 0) break;
        for (const { sessionId } of page.sessions) {
          const attempt = (attempts.get(sessionId) ?? 0) + 1;
          if (attempt > DELETE_ATTEMPTS) {
            throw new ConcurrencyError(
              sessionId,
              `Session ${shortId(sessionId)} of user ${shortId(userId)} was listed again after being deleted ${DELETE_ATTEMPTS} times: another writer keeps saving it, or the store's list does not reflect deletes. Stop the writers and retry.`,
            );
          }
          attempts.set(sessionId, attempt);
        }
        const outcomes = await mapAtMost(SESSIONS_AT_ONCE, page.sessions, async ({ sessionId }) => {
          const session = await load(sessionId, signal);
          if (session && session.metadata.userId !== userId) return false; // handed to another user meanwhile
          return deleteLoaded(session ?? new AgentSession({ sessionId }), signal);
        });
        deleted += outcomes.filter(Boolean).length;
      }
      const agent: AgentView = { name, client, contextProviders };
      await runHooks(
        contextProviders.filter((p) => p.deleteUserData),
        'deleteUserData',
        signal,
        providerTimeoutMs,
        (p, hookSignal) => p.deleteUserData!({ agent, userId, signal: hookSignal }),
      );
      return { sessions: deleted };
    },
  };
}

/** What `clearSessionData` works with. */
export interface ClearSessionDataArgs {
  /** The agent's name and client, for the providers' `AgentView`. */
  name: string;
  client: AgentView['client'];
  /** The providers whose `onSessionDeleted` runs (the default history included where the rule adds it). */
  providers: readonly ContextProvider[];
  /** The session whose data goes: each hook gets its state slot. */
  session: AgentSession;
  signal: AbortSignal;
  /** Bounds each hook (a provider's own `timeoutMs` first). */
  timeoutMs: number | undefined;
}

/**
 * Removes what `providers` keep for `session` outside the session: every `onSessionDeleted` at
 * once (history providers clear its messages, recall its vectors, working memory its record).
 * @throws ProviderError for the first provider (in list order) whose hook failed, once every hook
 *   has settled; the abort reason when `signal` aborted.
 */
export async function clearSessionData({ name, client, providers, session, signal, timeoutMs }: ClearSessionDataArgs): Promise<void> {
  const agent: AgentView = { name, client, contextProviders: providers };
  await runHooks(
    providers.filter((p) => p.onSessionDeleted),
    'onSessionDeleted',
    signal,
    timeoutMs,
    (p, hookSignal) => p.onSessionDeleted!({ agent, session, state: session.state[p.sourceId] ?? {}, signal: hookSignal }),
  );
}

/**
 * `fn` of each item, at most `limit` at a time, resolving to the results in item order. After a
 * failure no new item starts; it rejects with the failure of the earliest item once the running
 * ones have settled.
 */
async function mapAtMost<T, R>(limit: number, items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  const failures: Array<{ index: number; error: unknown }> = [];
  let next = 0;
  const worker = async () => {
    while (next < items.length && failures.length === 0) {
      const index = next++;
      try {
        results[index] = await fn(items[index]!);
      } catch (error) {
        failures.push({ index, error });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failures.length) throw failures.reduce((a, b) => (b.index < a.index ? b : a)).error;
  return results;
}
