import type { CompactedResponse, ResponseOutputItem } from 'openai/resources/responses/responses';
import type { CompactionStrategy, CompactionTrigger, Content, JsonObject, Message as CoreMessage, Usage } from '@ctx/core';
import { COMPACTION_WINDOW, compactWhen, generateId, Message } from '@ctx/core';
import { checkOptionNames, flattenGroups, groupMessages, optionNames, splitProtected } from '@ctx/core/backend';
import { textContent } from './annotations.js';
import { SERVICE_MESSAGE_ID } from './chat-completions-mapping.js';

/** What `OpenAIResponsesClient.compact` returns. */
export interface ResponsesCompaction {
  /**
   * The compacted window, to send instead of the messages that were compacted: the user messages the
   * service kept (the original messages where their text is unchanged), then an assistant message
   * holding the compaction item. Every message before the item carries `metadata.compactionWindow`
   * (the item's id), so it is sent with the item, unpruned, as the service asks.
   */
  messages: CoreMessage[];
  /** Tokens the compaction pass used. */
  usage?: Usage;
  /** The service's compacted response, as it came. */
  raw: CompactedResponse;
}

/** The compacted response's output as core messages (see `ResponsesCompaction.messages`). */
export function fromCompactedResponse(compacted: CompactedResponse, input: readonly CoreMessage[]): CoreMessage[] {
  const createdAt = new Date(compacted.created_at * 1000).toISOString();
  const users = input.filter((m) => m.role === 'user');
  let next = 0;
  const out: CoreMessage[] = [];
  let assistant: Content[] = [];
  const flush = () => {
    if (!assistant.length) return;
    out.push({ id: generateId(), role: 'assistant', contents: assistant, createdAt, metadata: { [SERVICE_MESSAGE_ID]: compacted.id } });
    assistant = [];
  };
  for (const item of compacted.output) {
    if (item.type === 'message' && (item as { role: string }).role === 'user') {
      flush();
      out.push(userMessage(item, users, next, createdAt, (i) => (next = i)));
    } else {
      assistant.push(...outputContents(item));
    }
  }
  flush();
  // The messages before the newest compaction item go with it: mark them with its id.
  let at = -1;
  let itemId: string | undefined;
  out.forEach((m, i) => {
    for (const c of m.contents) {
      if (c.type === 'hosted-tool' && c.item.type === 'compaction' && typeof c.item.id === 'string') {
        at = i;
        itemId = c.item.id;
      }
    }
  });
  if (itemId === undefined) return out;
  return out.map((m, i) => (i < at ? { ...m, metadata: { ...m.metadata, [COMPACTION_WINDOW]: itemId! } } : m));
}

function userMessage(
  item: ResponseOutputItem,
  users: readonly CoreMessage[],
  from: number,
  createdAt: string,
  advance: (next: number) => void,
): CoreMessage {
  const parts = (item as unknown as { content?: { type: string; text?: string }[] }).content ?? [];
  const text = parts.map((p) => (p.type === 'input_text' || p.type === 'output_text' ? (p.text ?? '') : '')).join('');
  // The service keeps the user's messages as they were: keep their ids and contents when the text matches.
  for (let i = from; i < users.length; i++) {
    if (Message.text(users[i]!) === text) {
      advance(i + 1);
      return users[i]!;
    }
  }
  return Message.user(text, { createdAt });
}

function outputContents(item: ResponseOutputItem): Content[] {
  if (item.type === 'message') {
    return item.content.map((part) =>
      part.type === 'output_text' ? textContent(part.text, part.annotations, item.phase) : { type: 'refusal', refusal: part.refusal },
    );
  }
  if (item.type === 'function_call') return [{ type: 'function-call', callId: item.call_id, name: item.name, arguments: item.arguments }];
  return [{ type: 'hosted-tool', item: item as unknown as JsonObject }];
}

/** What `compact` needs of the client: the standalone compaction call. */
export interface ResponsesCompactor {
  compact(messages: readonly CoreMessage[], options?: { signal?: AbortSignal; instructions?: string }): Promise<ResponsesCompaction>;
}

/** Options of `serviceCompaction`. */
export interface ServiceCompactionOptions {
  /** The client whose service compacts, e.g. an `OpenAIResponsesClient` (its model does the compaction). */
  client: ResponsesCompactor;
  /** Run only when this fires, e.g. `{ tokens: 60000 }`. Default: whenever there is something to compact. */
  trigger?: CompactionTrigger;
  /** Sent as the compaction call's `instructions`. Default: none. */
  instructions?: string;
}

const OPTION_NAMES = optionNames<ServiceCompactionOptions>()({ client: true, trigger: true, instructions: true });

/**
 * A `CompactionStrategy` that has the service compact (the Responses API's standalone compaction,
 * `POST /responses/compact`): everything before the newest user turn (system messages included) is
 * sent to it and replaced by the window it returns (the user messages, then a compaction item); the
 * newest user turn and what follows it stay as they are. A previous compaction item is kept inside
 * what is compacted, so the service folds it in. A failing call changes nothing (the agent and
 * `CompactionProvider` report it as `compaction-failed`).
 * @throws ConfigurationError for an option it does not know (named).
 */
export function serviceCompaction(options: ServiceCompactionOptions): CompactionStrategy {
  checkOptionNames('serviceCompaction', options, OPTION_NAMES);
  const strategy: CompactionStrategy = {
    specificationVersion: 'v1',
    async compact(messages, { signal }) {
      const groups = groupMessages(messages);
      const { system, older, recent } = splitProtected(groups);
      if (older.length === 0 || (older.length === 1 && older[0]!.kind === 'compaction' && !system.length)) return [...messages];
      const compacted = await options.client.compact(flattenGroups([...system, ...older]), {
        ...(signal ? { signal } : {}),
        ...(options.instructions !== undefined ? { instructions: options.instructions } : {}),
      });
      return [...compacted.messages, ...flattenGroups(recent)];
    },
  };
  return options.trigger ? compactWhen(options.trigger, strategy) : strategy;
}
