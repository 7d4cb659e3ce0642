import { CtxError } from '../errors.js';
import type { Agent } from './agent.js';
import type { AgentRuntime } from './execute-run.js';

/**
 * The agent's operations on a session's stored conversation: read it, fork it at a message,
 * rewind it to a message, and regenerate a turn.
 */
export function sessionHistory(_runtime: AgentRuntime): Pick<Agent, 'getHistory' | 'forkSession' | 'rewindSession' | 'regenerate'> {
  const todo = async (): Promise<never> => {
    throw new CtxError('not built yet');
  };
  return { getHistory: todo, forkSession: todo, rewindSession: todo, regenerate: todo };
}
