import { historiesIn } from '../policies/wrap-provider.js';
import { ConfigurationError } from '../errors.js';
import { serviceKeepsConversation } from '../history/history-provider.js';
import { InMemoryHistoryProvider } from '../history/in-memory-history-provider.js';
import type { ChatClient, ChatOptions } from '../contracts/chat-client.js';
import type { ContextProvider, SessionView } from '../contracts/run-view.js';

/**
 * The default-history rule, in one place. When a run has a session, no history provider that
 * loads, and the service does not keep the conversation, the agent puts an `InMemoryHistoryProvider`
 * (sourceId `memory`) in front of its providers for that run, so a conversation has memory without
 * any setup. A pipeline of only non-history providers still gets it.
 */
export interface DefaultHistory {
  /** The agent's history providers that load messages. */
  readonly loaders: readonly ContextProvider[];
  /** Providers whose `validateState` checks a restored session: the default history first, unless a provider of the agent owns its slot. */
  readonly validators: readonly ContextProvider[];
  /** The providers of one run, outermost first. */
  providersFor(session: SessionView | undefined, options: Pick<ChatOptions, 'store'>): readonly ContextProvider[];
  /**
   * Once a response hands over a service conversation id, the service keeps the conversation and
   * later runs no longer add the default history: drops the local copy the default history kept, so
   * no stale duplicate stays in the session.
   */
  dropLocalCopy(session: SessionView, providers: readonly ContextProvider[]): void;
}

/**
 * Applies the rule to an agent's client and providers.
 * @throws ConfigurationError when a provider that does not load history takes the default history's sourceId.
 */
export function defaultHistory(client: ChatClient, providers: readonly ContextProvider[]): DefaultHistory {
  const history = new InMemoryHistoryProvider();
  const loaders = historiesIn(providers).filter((p) => p.loadMessages !== false);
  const slotTaken = providers.some((p) => p.sourceId === history.sourceId);
  if (slotTaken && loaders.length === 0) {
    throw new ConfigurationError(
      `The sourceId "${history.sourceId}" belongs to the default history unless the provider using it loads history; choose another.`,
    );
  }
  const withDefault = [history, ...providers];
  return {
    loaders,
    validators: slotTaken ? providers : withDefault,
    providersFor(session, options) {
      const add = session !== undefined && loaders.length === 0 && !serviceKeepsConversation(client, session, options);
      return add ? withDefault : providers;
    },
    dropLocalCopy(session, runProviders) {
      if (runProviders[0] === history) delete session.state[history.sourceId];
    },
  };
}
