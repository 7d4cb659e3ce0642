import { checkOptionNames, optionNames } from '../backend/checks.js';
import { ConfigurationError, InvalidInputError } from '../errors.js';
import { formatBytes, jsonByteLength } from '../messages/json-bytes.js';
import type { Message } from '../messages/message.js';

/**
 * Size limits on what a run takes in (`createAgent({ limits })`), measured as the UTF-8 bytes of
 * each message's JSON, data parts (base64 images, files) included. The defaults are far above a
 * chat turn: the largest context windows (about a million tokens) hold some 4 MB of text, and one
 * full-size phone photo as a base64 data part is 4 to 7 MB. They stop a pasted file of tens or
 * hundreds of MB before the model is paid to read it and before a store keeps it (and reloads it
 * on every later turn). A backend with a smaller hard limit refuses a larger message when it
 * writes (a Cosmos DB item holds at most 2 MB); set `maxMessageBytes` to match it so the run is
 * refused up front instead.
 */
export interface AgentLimits {
  /**
   * The most one message may weigh, in bytes of JSON: each message of a run's input, and each tool
   * result (a larger result is replaced by an error result the model sees). Default 8 MiB.
   */
  maxMessageBytes?: number;
  /**
   * The most a run's input may weigh in all, in bytes of JSON. Default 16 MiB, or `maxMessageBytes`
   * when only that is given and it is larger. Below `maxMessageBytes` it is a `ConfigurationError`.
   */
  maxInputBytes?: number;
}

/** The limits a run applies: `AgentLimits` with defaults filled in. */
export type CheckedLimits = Required<AgentLimits>;

/** The default `AgentLimits`: 8 MiB per message, 16 MiB per run input. */
export const DEFAULT_LIMITS: Readonly<CheckedLimits> = Object.freeze({
  maxMessageBytes: 8 * 1024 * 1024,
  maxInputBytes: 16 * 1024 * 1024,
});

const LIMIT_NAMES = optionNames<AgentLimits>()({ maxMessageBytes: true, maxInputBytes: true });

/**
 * Checks `createAgent({ limits })` and fills in the defaults.
 * @throws ConfigurationError for a limit that is not a positive integer, or a message limit above the input limit.
 */
export function checkLimits(limits: AgentLimits | undefined): CheckedLimits {
  if (limits === undefined) return DEFAULT_LIMITS;
  if (typeof limits !== 'object' || limits === null)
    throw new ConfigurationError('createAgent: `limits` must be an object { maxMessageBytes?, maxInputBytes? }.');
  checkOptionNames('createAgent: limits', limits, LIMIT_NAMES);
  const out = { ...DEFAULT_LIMITS };
  for (const name of ['maxMessageBytes', 'maxInputBytes'] as const) {
    const value = limits[name];
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value <= 0)
      throw new ConfigurationError(`createAgent: limits.${name} must be a positive integer (bytes), got ${String(value)}.`);
    out[name] = value;
  }
  if (limits.maxMessageBytes !== undefined && limits.maxInputBytes === undefined)
    out.maxInputBytes = Math.max(out.maxInputBytes, out.maxMessageBytes);
  if (out.maxMessageBytes > out.maxInputBytes)
    throw new ConfigurationError(
      `createAgent: limits.maxMessageBytes (${out.maxMessageBytes}) is above limits.maxInputBytes (${out.maxInputBytes}); one message could never be sent.`,
    );
  return out;
}

/**
 * Checks the size of a run's input messages (already parsed), before any provider, store or model
 * sees them. Each message is measured once, and no further than the limit it could break.
 * @throws InvalidInputError naming the limit, the size, and the message's index and id.
 */
export function checkInputSize(messages: readonly Message[], limits: CheckedLimits): void {
  let total = 0;
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    const budget = Math.min(limits.maxMessageBytes, limits.maxInputBytes - total);
    const bytes = jsonByteLength(message, budget);
    if (bytes > limits.maxMessageBytes) {
      throw new InvalidInputError(
        `Run input message ${i} (id ${JSON.stringify(message.id)}) is ${sizeOf(bytes, budget)} of JSON, over limits.maxMessageBytes (${limitOf(limits.maxMessageBytes)}). Send large files by reference (a URL in a data part) or raise the limit in createAgent({ limits }).`,
        { limit: 'maxMessageBytes' },
      );
    }
    total += bytes;
    if (total > limits.maxInputBytes) {
      throw new InvalidInputError(
        `Run input of ${messages.length} messages is ${sizeOf(total, limits.maxInputBytes)} of JSON by message ${i} (id ${JSON.stringify(message.id)}), over limits.maxInputBytes (${limitOf(limits.maxInputBytes)}). Send fewer or smaller messages, or raise the limit in createAgent({ limits }).`,
        { limit: 'maxInputBytes' },
      );
    }
  }
}

/**
 * What a tool result over `maxMessageBytes` is replaced with, or undefined when it fits.
 */
export function toolResultTooLarge(toolName: string, result: unknown, maxMessageBytes: number): string | undefined {
  const bytes = jsonByteLength(result, maxMessageBytes);
  if (bytes <= maxMessageBytes) return undefined;
  return `Tool "${toolName}" returned ${sizeOf(bytes, maxMessageBytes)} of JSON, over the agent's limits.maxMessageBytes (${limitOf(maxMessageBytes)}); the result was dropped. Ask for less (a narrower query, a page, a summary).`;
}

/** A measured size: exact when it is within the budget it was measured against, else a lower bound. */
function sizeOf(bytes: number, budget: number): string {
  return bytes > budget ? `at least ${bytes} bytes` : `${bytes} bytes`;
}

function limitOf(bytes: number): string {
  return `${bytes} bytes, ${formatBytes(bytes)}`;
}
