import { type AgentSession, type JsonObject, SessionStateError } from '@ctx/core';
import { isPlainObject } from '@ctx/core/backend';
import type { PromptMessage } from './prompt.js';

/** The session slot where the middleware keeps its place in the conversation. Reserved: no provider may use it. */
export const TURN_SLOT = 'ai-sdk';

/**
 * What the middleware stored of the turn in progress: the fingerprint of the prompt messages the
 * app passed when the turn began (`inputs` of them), and how many prompt messages ctx has stored
 * since (`seen`, the model's answer included).
 */
interface Turn {
  key: string;
  inputs: number;
  seen: number;
}

/**
 * Which prompt messages are new to ctx. The AI SDK sends a step of a tool loop the prompt of the
 * previous step plus the model's answer and the tool results. When the prompt begins with the
 * turn ctx stored last and is longer than what ctx has seen, only the rest is new (the tool
 * results, or the next user message of an app that keeps its own message list); otherwise the
 * whole prompt is a new turn.
 */
export function newMessages(
  session: AgentSession | undefined,
  prompt: readonly PromptMessage[],
): { input: PromptMessage[]; commit(): void } {
  if (!session) return { input: [...prompt], commit: () => {} };
  const turn = readTurn(session);
  const continues =
    turn !== undefined &&
    prompt.length > turn.seen &&
    prompt[turn.seen - 1]?.role === 'assistant' &&
    fingerprint(prompt.slice(0, turn.inputs)) === turn.key;
  const next: Turn = continues
    ? { ...turn, seen: prompt.length + 1 }
    : { key: fingerprint(prompt), inputs: prompt.length, seen: prompt.length + 1 };
  return {
    input: continues ? prompt.slice(turn.seen) : [...prompt],
    commit: () => {
      session.state[TURN_SLOT] = { turn: { ...next } };
    },
  };
}

function readTurn(session: AgentSession): Turn | undefined {
  const slot = session.state[TURN_SLOT] as JsonObject | undefined;
  if (slot === undefined) return undefined;
  const turn = slot.turn;
  const count = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v >= 0;
  if (!isPlainObject(turn) || typeof turn.key !== 'string' || !count(turn.inputs) || !count(turn.seen)) {
    throw new SessionStateError(
      `$.state.${TURN_SLOT}.turn`,
      'is not { key: string, inputs: integer, seen: integer }: the session was changed outside ctx. Delete the slot to start the next call as a new turn.',
    );
  }
  return turn as unknown as Turn;
}

/** A 64-bit FNV-1a fingerprint of the messages' JSON. */
function fingerprint(messages: readonly PromptMessage[]): string {
  const text = JSON.stringify(messages);
  let a = 0x811c9dc5;
  let b = 0xcbf29ce4 ^ text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
  }
  return (a >>> 0).toString(16).padStart(8, '0') + (b >>> 0).toString(16).padStart(8, '0');
}
