import { ConfigurationError } from '../errors.js';
import type { Message } from '../messages/message.js';
import type { Redactor } from './agent.js';

/** Without a redactor: the messages as they are (one function for every provider and run). */
const unchanged = async (messages: readonly Message[]): Promise<Message[]> => [...messages];

/**
 * `ProviderRunArgs.redact` for one provider of one run: the agent's `redact` applied and checked
 * (one message per message, same ids, in order), or the messages unchanged without one.
 */
export function redactorFor(
  redact: Redactor | undefined,
  sessionId: string,
  sourceId: string,
  signal: AbortSignal,
): (messages: readonly Message[]) => Promise<Message[]> {
  if (!redact) return unchanged;
  return async (messages) => {
    if (messages.length === 0) return [];
    const out = await redact(messages, { sessionId, sourceId, signal });
    if (!Array.isArray(out) || out.length !== messages.length || out.some((m, i) => m?.id !== messages[i]!.id)) {
      throw new ConfigurationError(
        `The agent's redact returned ${Array.isArray(out) ? `${out.length} messages` : typeof out} for ${messages.length}; it must return one message per message, with the same ids, in order.`,
      );
    }
    return [...out];
  };
}
