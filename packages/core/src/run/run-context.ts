import { ConfigurationError } from '../errors.js';
import { Message } from '../messages/message.js';
import type { AgentResponse } from '../spec/agent-response.js';
import type { ChatOptions } from '../spec/chat-client.js';
import type { SourceType } from '../spec/message.js';
import type { Contribution, GetMessagesOptions, SessionContext, SourcedInstructions, Tool } from '../spec/run-view.js';

/** Fields a `RunContext` is created with. */
export interface RunContextInit {
  sessionId: string;
  serviceSessionId?: string | undefined;
  inputMessages: readonly Message[];
  options?: Readonly<ChatOptions>;
  instructions?: string | undefined;
  tools?: readonly Tool[];
}

/** Core's `SessionContext`: what one run assembles for the model, built fresh for every run. */
export class RunContext implements SessionContext {
  readonly sessionId: string;
  readonly serviceSessionId: string | undefined;
  /** The caller's input for this run, attributed as `input`. */
  readonly inputMessages: readonly Message[];
  /** The caller's options for this run. */
  readonly options: Readonly<ChatOptions>;
  /** Free-form data providers may share within one run. */
  readonly metadata: Record<string, unknown> = {};
  /** The model's answer, set before `afterRun` hooks run. */
  response: AgentResponse | undefined;
  /** Why the run failed, set before `afterRun` hooks run; history providers store nothing then. */
  error: unknown;

  readonly #messages = new Map<string, Message[]>();
  readonly #instructions: SourcedInstructions[] = [];
  readonly #tools: Tool[] = [];

  constructor(init: RunContextInit) {
    this.sessionId = init.sessionId;
    this.serviceSessionId = init.serviceSessionId;
    this.inputMessages = init.inputMessages.map((m) => Message.withSource(m, 'input', 'input'));
    this.options = init.options ?? {};
    if (init.instructions) this.#instructions.push({ sourceId: 'agent', text: init.instructions });
    if (init.tools) this.#tools.push(...init.tools);
  }

  /** Context messages by source, in the order sources first added them. */
  get contextMessages(): ReadonlyMap<string, readonly Message[]> {
    return this.#messages;
  }

  /** Instructions in order: the agent's own (source `agent`), then each provider's. */
  get instructions(): readonly SourcedInstructions[] {
    return this.#instructions;
  }

  /** Tools of this run: the agent's, then those providers added (stamped with their `sourceId`). */
  get tools(): readonly Tool[] {
    return this.#tools;
  }

  /**
   * Adds messages from `sourceId`, stamped `metadata.ctx = { sourceId, sourceType }`
   * (`sourceType` defaults to `'context'`; history providers pass `'history'`).
   */
  extendMessages(sourceId: string, messages: readonly Message[], sourceType: SourceType = 'context'): void {
    if (messages.length === 0) return;
    let list = this.#messages.get(sourceId);
    if (!list) this.#messages.set(sourceId, (list = []));
    for (const m of messages) list.push(Message.withSource(m, sourceId, sourceType));
  }

  /**
   * Replaces what `sourceId` added with `messages` (attributed like before). For compaction, which
   * rewrites the history view; other providers add, they do not replace.
   */
  replaceMessages(sourceId: string, messages: readonly Message[]): void {
    const first = this.#messages.get(sourceId)?.[0];
    const sourceType = (first && Message.source(first)?.sourceType) ?? 'context';
    this.#messages.set(sourceId, []);
    this.extendMessages(sourceId, messages, sourceType);
  }

  /** Adds instructions from `sourceId`. */
  extendInstructions(sourceId: string, text: string | readonly string[]): void {
    for (const t of typeof text === 'string' ? [text] : text) if (t) this.#instructions.push({ sourceId, text: t });
  }

  /**
   * Adds tools from `sourceId`, stamped `tool.metadata.ctx.sourceId`.
   * @throws ConfigurationError when a tool's name is already taken in this run.
   */
  extendTools(sourceId: string, tools: readonly Tool[]): void {
    for (const tool of tools) {
      if (this.#tools.some((t) => t.name === tool.name)) {
        throw new ConfigurationError(`Tool "${tool.name}" from "${sourceId}" clashes with a tool of the same name already in this run.`);
      }
      this.#tools.push({ ...tool, metadata: { ...tool.metadata, ctx: { sourceId } } });
    }
  }

  /** Context messages in source order, filtered; optionally followed by the input and the response. */
  getMessages(options: GetMessagesOptions = {}): Message[] {
    const { sources, excludeSources, includeInput = false, includeResponse = false } = options;
    const out: Message[] = [];
    for (const [sourceId, list] of this.#messages) {
      if (sources && !sources.includes(sourceId)) continue;
      if (excludeSources?.includes(sourceId)) continue;
      out.push(...list);
    }
    if (includeInput) out.push(...this.inputMessages);
    if (includeResponse && this.response) out.push(...this.response.messages);
    return out;
  }

  /** The instructions joined into one text, or undefined when there are none. */
  getInstructions(): string | undefined {
    return this.#instructions.length ? this.#instructions.map((i) => i.text).join('\n\n') : undefined;
  }

  /** Counts of what `sourceId` has added so far. */
  contributionOf(sourceId: string): Contribution {
    return {
      messages: this.#messages.get(sourceId)?.length ?? 0,
      instructions: this.#instructions.filter((i) => i.sourceId === sourceId).length,
      tools: this.#tools.filter((t) => t.metadata?.ctx && (t.metadata.ctx as { sourceId?: string }).sourceId === sourceId).length,
    };
  }

  /** Removes everything `sourceId` added (used when a provider with `onError: 'skip'` fails). */
  removeSource(sourceId: string): void {
    this.#messages.delete(sourceId);
    for (let i = this.#instructions.length - 1; i >= 0; i--) if (this.#instructions[i]!.sourceId === sourceId) this.#instructions.splice(i, 1);
    for (let i = this.#tools.length - 1; i >= 0; i--) {
      const ctx = this.#tools[i]!.metadata?.ctx as { sourceId?: string } | undefined;
      if (ctx?.sourceId === sourceId) this.#tools.splice(i, 1);
    }
  }
}
