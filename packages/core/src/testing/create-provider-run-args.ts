import { RunContext } from '../run/run-context.js';
import { AgentSession } from '../session/agent-session.js';
import type { ChatClient } from '../contracts/chat-client.js';
import type { ProviderDiagnostic } from '../contracts/run-view.js';
import type { JsonObject } from '../contracts/json.js';
import type { Message } from '../contracts/message.js';
import type { ContextProvider, ProviderRunArgs, SessionContext } from '../contracts/run-view.js';
import { ScriptedChatClient } from './scripted-chat-client.js';

/** What `createProviderRunArgs` builds the hook arguments from; every field has a default. */
export interface ProviderRunArgsInit<TState extends JsonObject = JsonObject> {
  /** The provider whose slot `state` is. Default `test`. */
  sourceId?: string;
  /** The session's id (ignored when `session` is given). Default: a new random id. */
  sessionId?: string;
  /** The session, as `agent.createSession()` or `agent.restoreSession()` make it. Default: a new one with `sessionId`. */
  session?: AgentSession;
  /** The provider's slot, `session.state[sourceId]`, as the hook gets it (the same object). Default: the session's slot, `{}` when absent. */
  state?: TState;
  /** The run's input messages (ignored when `context` is given). Default none. */
  inputMessages?: readonly Message[];
  /** The run's context. Default: a fresh one for the session and `inputMessages`, as `createSessionContext` builds it. */
  context?: SessionContext;
  /** The model in `agent.client`. Default: a `ScriptedChatClient` with no replies. */
  client?: ChatClient;
  /** The run's providers in `agent.contextProviders`. Default none. */
  contextProviders?: readonly ContextProvider[];
  /** The agent's name. Default `agent`. */
  agentName?: string;
  /** The run's signal. Default: one that never aborts. */
  signal?: AbortSignal;
  /** Where diagnostics go besides `diagnostics`. */
  report?: (diagnostic: ProviderDiagnostic) => void;
  /** The storage redaction, as the agent hands it out. Default: none (the messages as they are). */
  redact?: (messages: readonly Message[]) => Promise<Message[]>;
}

/** `ProviderRunArgs` for a unit test, with every diagnostic the hooks reported. */
export type TestProviderRunArgs<TState extends JsonObject = JsonObject> = ProviderRunArgs<TState> & {
  /** What the hooks passed to `report`, in order. */
  readonly diagnostics: ProviderDiagnostic[];
};

/**
 * The arguments the agent hands a provider's hooks (`beforeRun`, `afterRun`, `wrap`), for unit
 * tests that call them directly, without an agent. The same object can be passed to `beforeRun`
 * and then `afterRun` (set `context.response` in between), as one run does.
 */
export function createProviderRunArgs<TState extends JsonObject = JsonObject>(
  init: ProviderRunArgsInit<TState> = {},
): TestProviderRunArgs<TState> {
  const sourceId = init.sourceId ?? 'test';
  const session = init.session ?? new AgentSession(init.sessionId === undefined ? {} : { sessionId: init.sessionId });
  if (init.state !== undefined) session.state[sourceId] = init.state;
  const state = session.stateOf(sourceId) as TState;
  const context =
    init.context ??
    new RunContext({
      sessionId: session.sessionId,
      serviceSessionId: session.serviceSessionId,
      inputMessages: init.inputMessages ?? [],
    });
  const diagnostics: ProviderDiagnostic[] = [];
  const args: TestProviderRunArgs<TState> = {
    agent: {
      name: init.agentName ?? 'agent',
      client: init.client ?? new ScriptedChatClient({ replies: [] }),
      contextProviders: init.contextProviders ?? [],
    },
    session,
    context,
    state,
    signal: init.signal ?? new AbortController().signal,
    report: (diagnostic) => {
      diagnostics.push(diagnostic);
      init.report?.(diagnostic);
    },
    diagnostics,
  };
  if (init.redact) args.redact = init.redact;
  return args;
}
