import { CtxError } from '../errors.js';
import type { Agent } from './agent.js';
import type { AgentRuntime } from './execute-run.js';

/**
 * The agent's session lifecycle: listing the store's sessions, deleting a session with everything
 * that belongs to it (each provider's `onSessionDeleted`, then the store), and exporting or
 * deleting everything about one user.
 */
export function sessionLifecycle(
  _runtime: AgentRuntime,
): Pick<Agent, 'listSessions' | 'deleteSession' | 'exportUserData' | 'deleteUserData'> {
  const todo = async (): Promise<never> => {
    throw new CtxError('not built yet');
  };
  return { listSessions: todo, deleteSession: todo, exportUserData: todo, deleteUserData: todo };
}
