import { abortable } from '../backend/deadline.js';
import { saveQueue } from '../session/session-merge.js';
import { sessionMethods } from '../session/session-methods.js';
import type { AgentEvent } from '../contracts/events.js';
import { checkAgentOptions } from './agent-options.js';
import type { Agent, AgentOptions } from './agent.js';
import { defaultHistory } from './default-history.js';
import { type AgentRuntime, executeRun } from './execute-run.js';
import { hostedRun } from './hosted-run.js';
import { createRunStream } from './run-stream.js';
import { sessionHistory } from './session-history.js';
import { sessionLifecycle } from './session-lifecycle.js';

/**
 * Creates an agent: a chat client, a pipeline of context providers and a tool loop. The agent is
 * stateless; sessions hold the state.
 * @throws ConfigurationError for a missing client, duplicate or reserved source ids, a bad
 *   `maxToolRoundtrips`, or a contract version this copy of `@ctx/core` does not run.
 */
export function createAgent(agentOptions: AgentOptions): Agent {
  const options = checkAgentOptions(agentOptions);
  const { name, client, contextProviders, onEvent } = options;
  const history = defaultHistory(client, contextProviders);
  const includeContent = onEvent?.includeContent === true;
  const emit = onEvent
    ? (event: AgentEvent) => {
        try {
          onEvent(includeContent || !('content' in event) ? event : withoutContent(event));
        } catch (error) {
          console.warn(`[ctx] The onEvent handler of agent "${name}" threw on a "${event.type}" event:`, error);
        }
      }
    : undefined;
  const runtime: AgentRuntime = { options, history, emit };
  // Saves of one session by this agent wait for each other; other agents' saves are merged.
  const queue = saveQueue();
  return {
    name,
    client,
    contextProviders,
    run: (input, runOptions = {}) => hostedRun(runtime, runOptions, queue, input, (run) => executeRun(runtime, input, run)),
    runStream: (input, runOptions = {}) =>
      createRunStream((sink, controller) =>
        hostedRun(runtime, runOptions, queue, input, (run) => executeRun(runtime, input, run, sink, controller), {
          sink,
          controller,
        }),
      ),
    flush: async ({ signal, session } = {}) => {
      const sessionId = typeof session === 'string' ? session : session?.sessionId;
      const flushOptions = { ...(signal ? { signal } : {}), ...(sessionId === undefined ? {} : { sessionId }) };
      await abortable(Promise.all(contextProviders.map((p) => p.flush?.(flushOptions))), signal);
    },
    ...sessionMethods(name, history.validators, options.sessionStore, queue),
    ...sessionLifecycle(runtime),
    ...sessionHistory(runtime),
  };
}

/** The event without its message content, for handlers that did not ask for it. */
function withoutContent(event: AgentEvent): AgentEvent {
  const { content: _, ...rest } = event as AgentEvent & { content?: unknown };
  return rest as AgentEvent;
}
