import { type AgentSession, type JsonObject, SessionStateError } from '@ctx/core';
import { isPlainObject } from '@ctx/core/backend';
import type { PromptMessage } from './prompt.js';

/** The session slot where the middleware keeps its place in the conversation. Reserved: no provider may use it. */
export const TURN_SLOT = 'ai-sdk';

/** How many of the newest messages the slot remembers, by key: the longest window of the conversation recognised message by message. */
export const TAIL_SIZE = 64;

/**
 * The middleware's slot of a session: the keys (`messageKey`) of the newest prompt messages ctx
 * has handled, each as the AI SDK sends it back (the app's messages, and each answer as the AI SDK
 * received it), oldest first; and, while a turn holds the session between the steps of a tool
 * loop, that turn's holder id (`SessionTurns`).
 */
export interface TurnSlot {
  tail: string[];
  holder?: string;
}

/** What `newMessages` recognised of a prompt. */
export interface Recognised {
  /** The prompt messages ctx has not handled yet: the run's input. */
  input: PromptMessage[];
  /** Whether the prompt goes on from the newest message ctx handled (a step of a tool loop, or an app sending its window). */
  continues: boolean;
  /** The holder of the turn that holds the session between steps, when the slot names one. */
  holder: string | undefined;
  /**
   * Records in the session that the input was handled, with the keys of the answer (none when the
   * call failed and only its input was stored), and the holder that keeps the session between
   * steps (none: the turn ended).
   */
  commit(answer: readonly string[], holder: string | undefined): void;
}

/**
 * Which prompt messages are new to ctx. An app may send only the new messages, its whole message
 * list, or a window of it (`messages.slice(-n)`); a step of a tool loop sends the previous step's
 * prompt plus the answer and the tool results. The longest beginning of the prompt whose newest
 * messages are the newest ctx handled (compared by `messageKey`, up to `TAIL_SIZE` of them) is
 * recognised; only the rest is input. A prompt nothing of which lines up is a new turn, all input.
 * @throws SessionStateError when the slot was changed outside ctx.
 */
export function newMessages(session: AgentSession | undefined, prompt: readonly PromptMessage[]): Recognised {
  if (!session) return { input: [...prompt], continues: false, holder: undefined, commit: () => {} };
  const slot = readSlot(session);
  const tail = slot?.tail ?? [];
  const keys = prompt.map(messageKey);
  const newest = recognisedCount(keys, tail);
  // A longer beginning that lines up with earlier messages wins over a short one that lines up by chance with the newest.
  const known = Math.max(newest, resentCount(keys, tail, prompt, newest));
  return {
    input: prompt.slice(known),
    continues: newest > 0 && known === newest,
    holder: slot?.holder,
    commit(answer, holder) {
      const next = [...tail, ...keys.slice(known), ...answer];
      const stored: TurnSlot = { tail: next.length > TAIL_SIZE ? next.slice(next.length - TAIL_SIZE) : next };
      if (holder !== undefined) stored.holder = holder;
      session.state[TURN_SLOT] = stored as unknown as JsonObject;
    },
  };
}

/** How many messages at the start of the prompt (by their keys) end with the newest keys of `tail`: the most that line up. */
function recognisedCount(keys: readonly string[], tail: readonly string[]): number {
  if (tail.length === 0) return 0;
  for (let count = keys.length; count > 0; count--) {
    const overlap = Math.min(count, tail.length);
    let i = 0;
    while (i < overlap && keys[count - 1 - i] === tail[tail.length - 1 - i]) i++;
    if (i === overlap) return count;
  }
  return 0;
}

/**
 * For a prompt that does not go on from the newest message ctx handled (a repeated request, a
 * regenerated answer, an edited message, each sent with the list before it): how many messages at
 * its start, short of its last one and holding an answer, line up with messages ctx handled before
 * its newest; only counts above `above` are looked for. Those are stored already; the rest is a
 * new turn after the stored conversation.
 */
function resentCount(keys: readonly string[], tail: readonly string[], prompt: readonly PromptMessage[], above: number): number {
  const whole = tail.length < TAIL_SIZE; // the tail holds the whole conversation ctx handled
  for (let count = keys.length - 1; count > above; count--) {
    for (let end = tail.length - 2; end >= 0; end--) {
      const overlap = Math.min(count, end + 1);
      if (whole && overlap < count) continue;
      let i = 0;
      while (i < overlap && keys[count - 1 - i] === tail[end - i]) i++;
      if (i === overlap && prompt.slice(count - overlap, count).some((m) => m.role === 'assistant')) return count;
    }
  }
  return 0;
}

function readSlot(session: AgentSession): TurnSlot | undefined {
  const slot = session.state[TURN_SLOT] as JsonObject | undefined;
  if (slot === undefined) return undefined;
  const { tail, holder } = slot as Partial<Record<keyof TurnSlot, unknown>>;
  if (
    !Array.isArray(tail) ||
    tail.some((k) => typeof k !== 'string') ||
    (holder !== undefined && typeof holder !== 'string') ||
    !isPlainObject(slot)
  ) {
    throw new SessionStateError(
      `$.state.${TURN_SLOT}`,
      'is not { tail: string[], holder?: string }: the session was changed outside ctx. Delete the slot to start the next call as a new turn.',
    );
  }
  return slot as unknown as TurnSlot;
}

/**
 * The key of a prompt message: its role, its text, its files' media types and the ids of its tool
 * calls and results, hashed. What survives the AI SDK's own conversions of a message (an answer
 * becomes `response.messages`, then a prompt message again), so an answer and the message the app
 * sends back have the same key. Reasoning and provider metadata are left out.
 */
export function messageKey(message: PromptMessage): string {
  if (message.role === 'system') return hash(`system\u0000${message.content}`);
  let text = `${message.role}\u0000`;
  for (const part of message.content) {
    if (part.type === 'text') text += part.text;
    else if (part.type === 'tool-call') text += `\u0001c${part.toolCallId}`;
    else if (part.type === 'tool-result' && message.role === 'tool') text += `\u0001r${part.toolCallId}`;
    else if (part.type === 'file' && message.role === 'user') text += `\u0001f${part.mediaType}`;
  }
  return hash(text);
}

/** The key of an answer (`messageKey` of the assistant message the AI SDK makes of it): its text and the ids of the tool calls it sees. */
export function answerKey(text: string, callIds: readonly string[]): string {
  let key = `assistant\u0000${text}`;
  for (const id of callIds) key += `\u0001c${id}`;
  return hash(key);
}

/** A 64-bit FNV-1a-style hash of a string, as 16 hex digits. */
function hash(text: string): string {
  let a = 0x811c9dc5;
  let b = 0xcbf29ce4 ^ text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
  }
  return (a >>> 0).toString(16).padStart(8, '0') + (b >>> 0).toString(16).padStart(8, '0');
}
