import { InvalidInputError, type JsonObject, type Message } from '@ctx/core';
import { isPlainObject, shortId } from '@ctx/core/backend';
import type { AgentInputItem, SessionHistoryTransaction, SessionHistoryTransactionArgs } from '@openai/agents-core';
import { encode, itemToMessage, messageToItems } from './agent-items.js';

/**
 * The key in `message.metadata` under which a message written by `CtxSession.applyHistoryTransaction`
 * records the operation that wrote it: `{ operation, digest }`, the operation id and the SHA-256 of
 * the transaction (its canonical JSON), so a retry is recognised and a reused id refused.
 */
export const AGENTS_TRANSACTION_KEY = 'agentsTransaction';

/** What a message written by a transaction records of it. */
export interface TransactionTag {
  /** The transaction's `operationId`. */
  operation: string;
  /** SHA-256 (hex) of the transaction's canonical JSON. */
  digest: string;
}

/**
 * The arguments of `applyHistoryTransaction`, checked: an operation id with a non-whitespace
 * character, and an `append_items` (`items`) or `replace_suffix` (`expectedSuffix`, `replacement`)
 * transaction whose items are plain objects.
 * @throws InvalidInputError naming what is wrong and the session; nothing has changed.
 */
export function checkTransaction(args: unknown, sessionId: string): SessionHistoryTransactionArgs {
  const refuse = (problem: string) =>
    new InvalidInputError(
      `CtxSession.applyHistoryTransaction (session ${shortId(sessionId)}): ${problem}; nothing was changed. Pass { operationId, transaction } as the Agents runner does.`,
    );
  if (!isPlainObject(args)) throw refuse('the arguments are not an object');
  const { operationId, transaction } = args;
  if (typeof operationId !== 'string' || operationId.trim() === '') throw refuse('operationId must be a non-empty string');
  if (!isPlainObject(transaction)) throw refuse('transaction must be an object');
  const lists =
    transaction.type === 'append_items' ? ['items'] : transaction.type === 'replace_suffix' ? ['expectedSuffix', 'replacement'] : undefined;
  if (lists === undefined)
    throw refuse(`transaction.type must be "append_items" or "replace_suffix", got ${JSON.stringify(transaction.type)}`);
  for (const name of lists) {
    const list = transaction[name];
    if (!Array.isArray(list)) throw refuse(`transaction.${name} must be an array of items`);
    const bad = list.findIndex((item) => !isPlainObject(item));
    if (bad !== -1) throw refuse(`transaction.${name}[${bad}] is not an item object`);
  }
  return { operationId, transaction: transaction as unknown as SessionHistoryTransaction };
}

/** SHA-256 (hex) of the transaction's canonical JSON: key order free, bytes as base64, `undefined` properties left out. */
export async function transactionDigest(transaction: SessionHistoryTransaction): Promise<string> {
  return sha256(canonicalJson(transaction));
}

/** SHA-256 of a string, as 64 hex digits. */
export async function sha256(text: string): Promise<string> {
  const bytes = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  let hex = '';
  for (const byte of bytes) hex += byte.toString(16).padStart(2, '0');
  return hex;
}

/** Whether two item lists hold the same items (as `canonicalJson` writes them). */
export function sameItems(a: readonly AgentInputItem[], b: readonly AgentInputItem[]): boolean {
  return a.length === b.length && canonicalJson(a) === canonicalJson(b);
}

/** `value` as JSON with every object's keys sorted, after `encode` (bytes as `{ $bytes }`). */
function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(encode(value)));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (!isPlainObject(value)) return value;
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const entry = sortKeys(value[key]);
    if (key === '__proto__') Object.defineProperty(sorted, key, { value: entry, enumerable: true, writable: true, configurable: true });
    else sorted[key] = entry;
  }
  return sorted;
}

/** The digest an operation was applied with, from the tag of a message it wrote; undefined when none of `messages` holds one. */
export function appliedDigest(messages: readonly Message[], operationId: string): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const tag = messages[i]!.metadata?.[AGENTS_TRANSACTION_KEY];
    if (isPlainObject(tag) && tag.operation === operationId && typeof tag.digest === 'string') return tag.digest;
  }
  return undefined;
}

/**
 * The messages a transaction writes for `items`, each tagged with the operation, with ids made
 * from the operation id (`agents-tx-<hash>-<index>`), so a retried write of them is skipped by the
 * provider's id check. No items give one message without contents that only carries the tag (it
 * reads as no item), so the operation is recorded still.
 */
export async function transactionMessages(items: readonly AgentInputItem[], tag: TransactionTag): Promise<Message[]> {
  const base = `agents-tx-${(await sha256(tag.operation)).slice(0, 32)}`;
  const createdAt = new Date().toISOString();
  const tagValue: JsonObject = { operation: tag.operation, digest: tag.digest };
  if (items.length === 0) {
    return [
      {
        id: `${base}-0`,
        role: 'assistant',
        contents: [],
        createdAt,
        metadata: { ctx: { sourceId: 'response', sourceType: 'response' }, [AGENTS_TRANSACTION_KEY]: tagValue },
      },
    ];
  }
  return items.map((item, i) => {
    const message = itemToMessage(item, { id: `${base}-${i}`, createdAt });
    message.metadata = { ...message.metadata, [AGENTS_TRANSACTION_KEY]: tagValue };
    return message;
  });
}

/**
 * The stored messages that stay when the newest `expected.length` items are replaced: the messages
 * before those items, and, when the first of them sits inside a message that maps to several items
 * (one a ctx agent stored), that message's earlier items as messages of their own. Undefined when
 * the newest items are not `expected` (or fewer are stored).
 */
export function keptBeforeSuffix(messages: readonly Message[], expected: readonly AgentInputItem[]): Message[] | undefined {
  let need = expected.length;
  let start = messages.length;
  const suffix: AgentInputItem[] = [];
  let split: AgentInputItem[] = [];
  while (need > 0 && start > 0) {
    const items = messageToItems(messages[--start]!);
    if (items.length <= need) {
      suffix.unshift(...items);
      need -= items.length;
    } else {
      split = items.slice(0, items.length - need);
      suffix.unshift(...items.slice(items.length - need));
      need = 0;
    }
  }
  if (need > 0 || !sameItems(suffix, expected)) return undefined;
  const createdAt = messages[start]?.createdAt;
  return [...messages.slice(0, start), ...split.map((item) => itemToMessage(item, createdAt ? { createdAt } : {}))];
}
