import { ConfigurationError } from '../errors.js';
import { hasFrozenSource, isAttributed } from '../messages/frozen.js';
import { Message } from '../messages/message.js';
import { isSettled, markSettled } from '../messages/settled-calls.js';
import type { AgentResponse } from '../contracts/agent-response.js';
import type { ChatOptions } from '../contracts/chat-client.js';
import type { SourceType } from '../contracts/message.js';
import type { Contribution } from '../contracts/agent-response.js';
import type { GetMessagesOptions, SessionContext, SourcedInstructions, Tool } from '../contracts/run-view.js';

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
  /** The declared `stability` of the run's providers, by `sourceId` (see `ContextProvider.stability`). */
  stability?: ReadonlyMap<string, 'stable' | 'per-run'>;
}

/**
 * Core's `SessionContext` (its members are documented on the contract in `contracts/run-view.ts`): what
 * one run assembles for the model, built fresh for every run.
 */
export class RunContext implements SessionContext {
  readonly sessionId: string;
  readonly serviceSessionId: string | undefined;
  readonly inputMessages: readonly Message[];
  readonly options: Readonly<ChatOptions>;
  readonly metadata: Record<string, unknown> = {};
  error: unknown;
  #response: AgentResponse | undefined;
  /** Set once the model step has answered: from then on the response is what the caller gets. */
  #responseFinal = false;

  readonly #messages = new Map<string, Message[]>();
  readonly #instructions: SourcedInstructions[] = [];
  readonly #tools: Tool[] = [];
  /** Who added each tool, by name, as error messages name them. */
  readonly #toolOwners = new Map<string, string>();
  /** Each tool as it was given, by name: the same object given twice is offered once. */
  readonly #givenTools = new Map<string, Tool>();
  /** Instructions and tools added per source, so `contributionOf` does not scan them. */
  readonly #added = new Map<string, { instructions: number; tools: number }>();
  readonly #stability: ReadonlyMap<string, 'stable' | 'per-run'>;
  /** Sources whose messages are history: they sit between stable and per-run context in the prompt. */
  readonly #history = new Set<string>();
  /** Tools of per-run sources, kept after the others. */
  #perRunTools = 0;
  /** Sources whose messages may not be settled (see `CallScan`). */
  readonly #unsettled = new Set<string>();
  readonly #inputSettled: boolean;

  /** @throws ConfigurationError when two of the agent's and the run's tools share a name. */
  constructor(init: RunContextInit) {
    this.sessionId = init.sessionId;
    this.serviceSessionId = init.serviceSessionId;
    this.inputMessages = init.inputMessages.map((m) => Message.withSource(m, 'input', 'input'));
    this.#inputSettled = isSettled(this.inputMessages);
    this.options = init.options ?? {};
    this.#stability = init.stability ?? new Map();
    if (init.instructions) this.extendInstructions('agent', init.instructions);
    for (const tool of init.tools ?? []) this.#addTool(tool, 'the agent (createAgent({ tools }))', 'rename one of them or leave one out');
    for (const tool of init.runTools ?? []) {
      this.#addTool(
        tool,
        "this run's options.tools",
        "rename it, or leave the agent's tool out of createAgent and pass the variant you want in each run's options.tools",
      );
    }
  }

  #addTool(tool: Tool, owner: string, fix: string): void {
    if (this.#givenTools.get(tool.name) === tool) return; // the same tool given to the agent and the run
    const taken = this.#toolOwners.get(tool.name);
    if (taken !== undefined) {
      throw new ConfigurationError(
        `Tool "${tool.name}" from ${owner} has the name of a tool of ${taken}; the model is offered each name once: ${fix}.`,
      );
    }
    this.#tools.push(tool);
    this.#givenTools.set(tool.name, tool);
    // A tool carrying a provider's stamp (taken from another run's context) counts as that provider's.
    const stamp = (tool.metadata?.ctx as { sourceId?: unknown } | undefined)?.sourceId;
    if (typeof stamp === 'string') this.#addedBy(stamp).tools++;
    this.#toolOwners.set(tool.name, typeof stamp === 'string' ? `context provider "${stamp}"` : owner);
  }

  /** The counts of what `sourceId` added, created on first use. */
  #addedBy(sourceId: string): { instructions: number; tools: number } {
    let added = this.#added.get(sourceId);
    if (!added) this.#added.set(sourceId, (added = { instructions: 0, tools: 0 }));
    return added;
  }

  get response(): AgentResponse | undefined {
    return this.#response;
  }

  /**
   * Set by the model step. Once it has answered, the response is final: history stores it and the
   * caller gets it, so the two never differ.
   * @throws ConfigurationError when a provider replaces the response after the model step (in `afterRun`,
   *   or in `wrap` after `next()`).
   */
  set response(response: AgentResponse | undefined) {
    if (this.#responseFinal) {
      throw new ConfigurationError(
        'context.response is read-only once the model has answered: what history stores and what the caller gets must be the same response. Shape what the model sees in beforeRun (or in wrap before next()) instead.',
      );
    }
    this.#response = response;
  }

  /** Makes the response final (the model step calls it once it has set `response` or `error`). */
  finishResponse(): void {
    this.#responseFinal = true;
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
    if (sourceType === 'history') this.#history.add(sourceId);
    if (!isSettled(messages)) this.#unsettled.add(sourceId);
    // A message already frozen with this attribution (loaded history) is used as is.
    if (isAttributed(messages, sourceId, sourceType)) for (const m of messages) list.push(m);
    else for (const m of messages) list.push(hasFrozenSource(m, sourceId, sourceType) ? m : Message.withSource(m, sourceId, sourceType));
  }

  replaceMessages(sourceId: string, messages: readonly Message[]): void {
    const first = this.#messages.get(sourceId)?.[0];
    const sourceType = (first && Message.source(first)?.sourceType) ?? 'context';
    this.#messages.set(sourceId, []);
    this.#unsettled.delete(sourceId);
    this.extendMessages(sourceId, messages, sourceType);
  }

  extendInstructions(sourceId: string, text: string | readonly string[]): void {
    for (const t of typeof text === 'string' ? [text] : text) {
      if (!t) continue;
      this.#instructions.push({ sourceId, text: t });
      this.#addedBy(sourceId).instructions++;
    }
  }

  extendTools(sourceId: string, given: readonly Tool[]): void {
    // A tool object the run already offers (the agent's own, say) is offered once.
    const tools = given.filter((tool) => this.#givenTools.get(tool.name) !== tool);
    // All or nothing: a clash anywhere in the list adds none of them.
    const names = new Set<string>();
    for (const tool of tools) {
      const taken = names.has(tool.name) ? `context provider "${sourceId}" (the same call)` : this.#toolOwners.get(tool.name);
      if (taken !== undefined) {
        throw new ConfigurationError(
          `Tool "${tool.name}" from context provider "${sourceId}" has the name of a tool of ${taken}; the model is offered each name once: give the provider's tool another name, or leave one of them out.`,
        );
      }
      names.add(tool.name);
    }
    // Per-run tools go last, so the stable tools keep their places from one request to the next.
    const perRun = this.#stability.get(sourceId) === 'per-run';
    const stamped = tools.map((tool) => ({ ...tool, metadata: { ...tool.metadata, ctx: { sourceId } } }));
    if (perRun || this.#perRunTools === 0) this.#tools.push(...stamped);
    else this.#tools.splice(this.#tools.length - this.#perRunTools, 0, ...stamped);
    if (perRun) this.#perRunTools += tools.length;
    for (const tool of tools) {
      this.#toolOwners.set(tool.name, `context provider "${sourceId}"`);
      this.#givenTools.set(tool.name, tool);
    }
    if (tools.length) this.#addedBy(sourceId).tools += tools.length;
  }

  getMessages(options: GetMessagesOptions = {}): Message[] {
    const { sources, excludeSources, includeInput = false, includeResponse = false } = options;
    const out: Message[] = [];
    let stable: Message[] | undefined;
    let perRun: Message[] | undefined;
    for (const [sourceId, list] of this.#messages) {
      if (sources && !sources.includes(sourceId)) continue;
      if (excludeSources?.includes(sourceId)) continue;
      // Prompt order: stable context, history, per-run context (then per-run instructions and the input).
      if (this.#history.has(sourceId)) out.push(...list);
      else if (this.#stability.get(sourceId) === 'stable') (stable ??= []).push(...list);
      else (perRun ??= []).push(...list);
    }
    if (stable) out.unshift(...stable);
    if (perRun) out.push(...perRun);
    if (includeInput) {
      for (const i of this.#instructions) {
        if (this.#stability.get(i.sourceId) !== 'per-run') continue;
        if (sources && !sources.includes(i.sourceId)) continue;
        if (excludeSources?.includes(i.sourceId)) continue;
        out.push(Message.withSource(Message.system(i.text), i.sourceId, 'context'));
      }
      out.push(...this.inputMessages);
    }
    if (includeResponse && this.response) out.push(...this.response.messages);
    // Settled lists stay settled one after the other: the tool loop then has no calls to repair.
    else if (includeInput && this.#inputSettled && this.#unsettled.size === 0) markSettled(out);
    return out;
  }

  getInstructions(): string | undefined {
    let text: string | undefined;
    for (const i of this.#instructions) {
      if (this.#stability.get(i.sourceId) === 'per-run') continue;
      text = text === undefined ? i.text : `${text}\n\n${i.text}`;
    }
    return text;
  }

  contributionOf(sourceId: string): Contribution {
    const added = this.#added.get(sourceId);
    return { messages: this.#messages.get(sourceId)?.length ?? 0, instructions: added?.instructions ?? 0, tools: added?.tools ?? 0 };
  }

  removeSource(sourceId: string): void {
    this.#messages.delete(sourceId);
    this.#unsettled.delete(sourceId);
    const added = this.#added.get(sourceId);
    if (!added) return;
    this.#added.delete(sourceId);
    if (added.instructions) {
      for (let i = this.#instructions.length - 1; i >= 0; i--)
        if (this.#instructions[i]!.sourceId === sourceId) this.#instructions.splice(i, 1);
    }
    if (added.tools) {
      for (let i = this.#tools.length - 1; i >= 0; i--) {
        const tool = this.#tools[i]!;
        if ((tool.metadata?.ctx as { sourceId?: string } | undefined)?.sourceId !== sourceId) continue;
        this.#tools.splice(i, 1);
        if (this.#stability.get(sourceId) === 'per-run') this.#perRunTools--;
        this.#toolOwners.delete(tool.name);
      }
    }
  }
}
