import { ConfigurationError } from '../errors.js';
import { Message } from '../messages/message.js';
import type { AgentResponse } from '../spec/agent-response.js';
import type { ChatOptions } from '../spec/chat-client.js';
import type { SourceType } from '../spec/message.js';
import type { Contribution, GetMessagesOptions, SessionContext, SourcedInstructions, Tool } from '../spec/run-view.js';

/** Fields a `RunContext` is created with: the run's ids, input, options, and the agent's instructions and tools. */
export interface RunContextInit {
  sessionId: string;
  serviceSessionId?: string | undefined;
  inputMessages: readonly Message[];
  options?: Readonly<ChatOptions>;
  instructions?: string | undefined;
  /** The agent's tools. */
  tools?: readonly Tool[];
  /** The run's own tools (`agent.run(input, { options: { tools } })`), offered after the agent's. */
  runTools?: readonly Tool[];
}

/**
 * Core's `SessionContext` (its members are documented on the contract in `spec/run-view.ts`): what
 * one run assembles for the model, built fresh for every run.
 */
export class RunContext implements SessionContext {
  readonly sessionId: string;
  readonly serviceSessionId: string | undefined;
  readonly inputMessages: readonly Message[];
  readonly options: Readonly<ChatOptions>;
  readonly metadata: Record<string, unknown> = {};
  response: AgentResponse | undefined;
  error: unknown;

  readonly #messages = new Map<string, Message[]>();
  readonly #instructions: SourcedInstructions[] = [];
  readonly #tools: Tool[] = [];
  readonly #runToolNames = new Set<string>();

  /** @throws ConfigurationError when two of the agent's and the run's tools share a name. */
  constructor(init: RunContextInit) {
    this.sessionId = init.sessionId;
    this.serviceSessionId = init.serviceSessionId;
    this.inputMessages = init.inputMessages.map((m) => Message.withSource(m, 'input', 'input'));
    this.options = init.options ?? {};
    if (init.instructions) this.#instructions.push({ sourceId: 'agent', text: init.instructions });
    for (const tool of init.tools ?? []) this.#addTool(tool, 'the agent (createAgent({ tools }))', 'rename one of them or leave one out');
    for (const tool of init.runTools ?? []) {
      this.#addTool(
        tool,
        "this run's options.tools",
        "rename it, or leave the agent's tool out of createAgent and pass the variant you want in each run's options.tools",
      );
      this.#runToolNames.add(tool.name);
    }
  }

  #addTool(tool: Tool, owner: string, fix: string): void {
    const taken = this.#ownerOf(tool.name);
    if (taken !== undefined) {
      throw new ConfigurationError(
        `Tool "${tool.name}" from ${owner} has the name of a tool of ${taken}; the model is offered each name once: ${fix}.`,
      );
    }
    this.#tools.push(tool);
  }

  /** Who added the tool named `name` to this run, or undefined when no tool has that name. */
  #ownerOf(name: string): string | undefined {
    const tool = this.#tools.find((t) => t.name === name);
    if (!tool) return undefined;
    const sourceId = (tool.metadata?.ctx as { sourceId?: unknown } | undefined)?.sourceId;
    if (typeof sourceId === 'string') return `context provider "${sourceId}"`;
    return this.#runToolNames.has(name) ? "this run's options.tools" : 'the agent (createAgent({ tools }))';
  }

  get contextMessages(): ReadonlyMap<string, readonly Message[]> {
    return this.#messages;
  }

  get instructions(): readonly SourcedInstructions[] {
    return this.#instructions;
  }

  get tools(): readonly Tool[] {
    return this.#tools;
  }

  extendMessages(sourceId: string, messages: readonly Message[], sourceType: SourceType = 'context'): void {
    if (messages.length === 0) return;
    let list = this.#messages.get(sourceId);
    if (!list) this.#messages.set(sourceId, (list = []));
    for (const m of messages) list.push(Message.withSource(m, sourceId, sourceType));
  }

  replaceMessages(sourceId: string, messages: readonly Message[]): void {
    const first = this.#messages.get(sourceId)?.[0];
    const sourceType = (first && Message.source(first)?.sourceType) ?? 'context';
    this.#messages.set(sourceId, []);
    this.extendMessages(sourceId, messages, sourceType);
  }

  extendInstructions(sourceId: string, text: string | readonly string[]): void {
    for (const t of typeof text === 'string' ? [text] : text) if (t) this.#instructions.push({ sourceId, text: t });
  }

  extendTools(sourceId: string, tools: readonly Tool[]): void {
    // All or nothing: a clash anywhere in the list adds none of them.
    const names = new Set<string>();
    for (const tool of tools) {
      const taken = names.has(tool.name) ? `context provider "${sourceId}" (the same call)` : this.#ownerOf(tool.name);
      if (taken !== undefined) {
        throw new ConfigurationError(
          `Tool "${tool.name}" from context provider "${sourceId}" has the name of a tool of ${taken}; the model is offered each name once: give the provider's tool another name, or leave one of them out.`,
        );
      }
      names.add(tool.name);
    }
    for (const tool of tools) this.#tools.push({ ...tool, metadata: { ...tool.metadata, ctx: { sourceId } } });
  }

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

  getInstructions(): string | undefined {
    return this.#instructions.length ? this.#instructions.map((i) => i.text).join('\n\n') : undefined;
  }

  contributionOf(sourceId: string): Contribution {
    return {
      messages: this.#messages.get(sourceId)?.length ?? 0,
      instructions: this.#instructions.filter((i) => i.sourceId === sourceId).length,
      tools: this.#tools.filter((t) => t.metadata?.ctx && (t.metadata.ctx as { sourceId?: string }).sourceId === sourceId).length,
    };
  }

  removeSource(sourceId: string): void {
    this.#messages.delete(sourceId);
    for (let i = this.#instructions.length - 1; i >= 0; i--)
      if (this.#instructions[i]!.sourceId === sourceId) this.#instructions.splice(i, 1);
    for (let i = this.#tools.length - 1; i >= 0; i--) {
      const ctx = this.#tools[i]!.metadata?.ctx as { sourceId?: string } | undefined;
      if (ctx?.sourceId === sourceId) this.#tools.splice(i, 1);
    }
  }
}
