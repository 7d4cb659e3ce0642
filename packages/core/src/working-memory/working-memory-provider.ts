import { checkInteger, checkOptionNames, optionNames } from '../backend/checks.js';
import { type BudgetPolicy, recordBudget, resolveBudget, type ResolvedBudget } from '../policies/budget.js';
import { type ProviderGate, RunGate } from '../policies/gate.js';
import { abortable } from '../backend/deadline.js';
import { checkWorkingMemoryKey, describeWorkingMemoryKey } from '../backend/working-memory-key.js';
import { ConcurrencyError, ConfigurationError, CtxError, InvalidInputError, SessionStateError } from '../errors.js';
import { isPlainObject, jsonEqual, parseJsonAnswer } from '../messages/json.js';
import { formatBytes, jsonByteLength } from '../messages/json-bytes.js';
import { Message } from '../messages/message.js';
import { turnText } from '../providers/whiteboard-provider.js';
import type { ChatClient } from '../contracts/chat-client.js';
import type { JsonObject, JsonValue } from '../contracts/json.js';
import type {
  ContextProvider,
  ProviderRunArgs,
  SessionContext,
  SessionHookArgs,
  SessionView,
  Tool,
  UserDataArgs,
} from '../contracts/run-view.js';
import type { ToolValidator } from '../contracts/tool-validator.js';
import type { WorkingMemoryCallOptions, WorkingMemoryKey, WorkingMemoryStore } from '../contracts/working-memory-store.js';
import { formatIssue, isStandardSchema, type StandardSchemaV1 } from '../tools/define-tool.js';
import { changeSchema, mergeRecord } from './merge-record.js';

/** Options of `WorkingMemoryProvider`. Give exactly one of `schema` and `template`. */
export interface WorkingMemoryProviderOptions {
  /**
   * The record's shape: a Standard Schema (zod, valibot, ...) or a plain JSON Schema object (then
   * `validator` is required). The record is a JSON object, `{}` until the first update; every update
   * is merged in and the result must pass the schema.
   */
  schema?: StandardSchemaV1 | JsonObject;
  /**
   * The JSON Schema the model is shown for a Standard Schema that offers none itself (zod 3, valibot
   * without its JSON Schema package). Default: the schema's own (`~standard.jsonSchema`), else none.
   */
  jsonSchema?: JsonObject;
  /** Checks records against a plain JSON Schema `schema`: `jsonSchemaValidator()` from `@ctx/core/json-schema`. */
  validator?: ToolValidator;
  /** Markdown the record starts as, instead of a schema: the record is then markdown text, replaced whole by each update. */
  template?: string;
  /**
   * Where the records live. A store holds one working memory: give two providers two stores (in
   * Redis, two prefixes), else each exports, and deletes, the other's records of a user too.
   */
  store: WorkingMemoryStore;
  /**
   * One record per user (default; a session without `metadata.userId` gets no working memory and a
   * `working-memory-no-user` diagnostic), or one per session (`'session'`: exported and deleted with
   * the session's user, and with the session).
   */
  scope?: 'user' | 'session';
  /**
   * How the record changes: the model calls the `update_working_memory` tool (`'tool'`, default), or
   * after each successful run `client` reads the newest turn and updates it (`'background'`).
   */
  mode?: 'tool' | 'background';
  /** Background mode: the (cheap) model that updates the record. Default: the agent's client. */
  client?: ChatClient;
  /** The largest record, in UTF-8 bytes of its JSON. An update past it is refused. Default 8192 (8 KiB). */
  maxBytes?: number;
  /** The source id: attribution and the key of the (empty) state slot. Default `working-memory`. */
  sourceId?: string;
  /**
   * Default `'skip'`: a store that fails, or a background update that fails or is invalid, leaves the
   * record as it was, and the run goes on without it (a `provider-skipped` event says why).
   */
  onError?: 'throw' | 'skip';
  /** Bounds each of its hooks, in milliseconds (see `ContextProvider.timeoutMs`). Default: the agent's `providerTimeoutMs`. */
  timeoutMs?: number;
  /** Background mode: instructions for the update model, replacing the built-in ones. */
  updateInstructions?: string;
  /**
   * Gating: evaluated once per run before the record is shown; `false` and neither the record nor
   * the tool is in that run. Background updates after the run still happen.
   */
  when?: ProviderGate;
  /**
   * A token cap on the record's instructions (the record is one whole: it is shown entire or not
   * at all). Over it, the record is left out of the run (the update tool stays, so the model can
   * still write), a `working-memory-over-budget` diagnostic says so, and the budget report counts
   * it dropped. Default: no cap (`maxBytes` bounds the record anyway).
   */
  budget?: BudgetPolicy;
}

const OPTION_NAMES = optionNames<WorkingMemoryProviderOptions>()({
  schema: true,
  jsonSchema: true,
  validator: true,
  template: true,
  store: true,
  scope: true,
  mode: true,
  client: true,
  maxBytes: true,
  sourceId: true,
  onError: true,
  timeoutMs: true,
  updateInstructions: true,
  when: true,
  budget: true,
});

/** What `WorkingMemoryProvider.update` resolves to. */
export interface WorkingMemoryUpdate {
  /** The record as it is now stored. */
  record: JsonValue;
  /** Its etag. */
  etag: string;
  /** Whether the update changed anything (an update that changes nothing writes nothing). */
  changed: boolean;
}

/** The name of the tool the model updates the record with. */
export const WORKING_MEMORY_TOOL = 'update_working_memory';
/** The default `maxBytes`: 8 KiB of JSON, about 2,000 tokens of instructions in every call. */
export const DEFAULT_WORKING_MEMORY_BYTES = 8192;
/** Tries of one update while other writers change the record under it (with a random pause of up to 10, 20, 40 ... 500 ms between them). */
const MAX_WRITE_ATTEMPTS = 10;

const DEFAULT_UPDATE_INSTRUCTIONS = `You maintain the working memory of an assistant: what it should remember about the user (or the
conversation) from one turn to the next: facts, preferences, goals, open tasks. You receive the
current working memory and the newest turn only. Record only what the turn establishes that is worth
keeping; never small talk, never what is already there. Answer with JSON only.`;

/**
 * Working memory: one structured record per user (or per session), kept in a `WorkingMemoryStore`
 * and shown to the model as stable instructions (attributed to `sourceId`), which change only when
 * the record does, so the prompt cache holds. The model updates it with the `update_working_memory`
 * tool (a change merged into the record and checked against the schema, or the whole markdown of a
 * template), or a cheap `client` updates it after each run (`mode: 'background'`). Writes are
 * optimistic (the store's etag): an update that meets another writer reads the record again and
 * applies its change to it, so neither is lost. `agent.exportUserData` and `agent.deleteUserData`
 * include the user's records; `agent.deleteSession` deletes a session's record.
 * @throws ConfigurationError (constructor) for invalid options.
 */
export class WorkingMemoryProvider implements ContextProvider {
  /** Attribution of the instructions and the tool. Default `working-memory`. */
  readonly sourceId: string;
  /** Instructions and the tool lead the request (they change only with the record). */
  readonly stability = 'stable';
  /** Default `'skip'`. */
  readonly onError: 'throw' | 'skip';
  readonly timeoutMs: number | undefined;
  /** `'user'` or `'session'`. */
  readonly scope: 'user' | 'session';
  /** `'tool'` or `'background'`. */
  readonly mode: 'tool' | 'background';
  /** The largest record, in UTF-8 bytes of its JSON. */
  readonly maxBytes: number;
  readonly #store: WorkingMemoryStore;
  readonly #template: string | undefined;
  readonly #check: ((record: JsonObject) => Promise<string[]>) | undefined;
  readonly #recordSchema: JsonObject | undefined;
  readonly #client: ChatClient | undefined;
  readonly #updateInstructions: string;
  readonly #tool: Tool | undefined;
  /** Each run's storage redaction (`ProviderRunArgs.redact`), for the tool, which is not handed it. */
  readonly #redactors = new WeakMap<SessionContext, Redact>();
  readonly #gate: RunGate;
  readonly #budget: ResolvedBudget | undefined;

  constructor(options: WorkingMemoryProviderOptions) {
    this.sourceId = options?.sourceId ?? 'working-memory';
    const owner = `WorkingMemoryProvider("${this.sourceId}")`;
    if (!isPlainObject(options)) throw new ConfigurationError(`${owner} needs options: { schema | template, store }.`);
    checkOptionNames(owner, options, OPTION_NAMES);
    const { schema, template, store, validator } = options;
    if ((schema === undefined) === (template === undefined)) {
      throw new ConfigurationError(`${owner} needs exactly one of \`schema\` (a structured record) and \`template\` (a markdown record).`);
    }
    if (template !== undefined && typeof template !== 'string') throw new ConfigurationError(`${owner}: \`template\` must be a string.`);
    if (!store || typeof store.get !== 'function' || typeof store.put !== 'function') {
      throw new ConfigurationError(`${owner} needs a \`store\` (a WorkingMemoryStore such as InMemoryWorkingMemoryStore).`);
    }
    this.scope = options.scope ?? 'user';
    if (this.scope !== 'user' && this.scope !== 'session') throw new ConfigurationError(`${owner}: scope must be "user" or "session".`);
    this.mode = options.mode ?? 'tool';
    if (this.mode !== 'tool' && this.mode !== 'background') throw new ConfigurationError(`${owner}: mode must be "tool" or "background".`);
    if (options.client !== undefined && this.mode !== 'background') {
      throw new ConfigurationError(
        `${owner}: \`client\` updates the record in background mode only; set mode: 'background' or leave it out.`,
      );
    }
    this.maxBytes = checkInteger(owner, 'maxBytes', options.maxBytes ?? DEFAULT_WORKING_MEMORY_BYTES);
    this.onError = options.onError ?? 'skip';
    this.timeoutMs = options.timeoutMs;
    this.#store = store;
    this.#template = template;
    this.#client = options.client;
    this.#updateInstructions = options.updateInstructions ?? DEFAULT_UPDATE_INSTRUCTIONS;
    this.#gate = new RunGate(options.when);
    this.#budget = resolveBudget(owner, options.budget);
    if (schema !== undefined) {
      if (isStandardSchema(schema)) {
        const standard = schema['~standard'];
        this.#recordSchema =
          options.jsonSchema ?? (standard.jsonSchema?.input({ target: 'draft-2020-12' }) as JsonObject | undefined) ?? undefined;
        this.#check = async (record) => {
          const result = await standard.validate(record);
          return result.issues ? result.issues.map(formatIssue) : [];
        };
      } else if (isPlainObject(schema)) {
        if (!validator || typeof validator.compile !== 'function') {
          throw new ConfigurationError(
            `${owner}: a JSON Schema \`schema\` needs a \`validator\` to check records: jsonSchemaValidator() from @ctx/core/json-schema.`,
          );
        }
        const compiled = validator.compile({ name: WORKING_MEMORY_TOOL, parameters: schema as JsonObject });
        this.#recordSchema = schema as JsonObject;
        this.#check = async (record) => {
          const result = await compiled(record);
          return result.success ? [] : result.issues;
        };
      } else {
        throw new ConfigurationError(`${owner}: \`schema\` must be a Standard Schema (zod, valibot, ...) or a JSON Schema object.`);
      }
    }
    this.#tool = this.mode === 'tool' ? this.#makeTool() : undefined;
  }

  /**
   * The record of a session's user (or of the session, with `scope: 'session'`), as `beforeRun`
   * would show it: the stored one, else `{}` or the template. Undefined for a user-scoped memory of
   * a session without a user.
   */
  async recordOf(
    session: Pick<SessionView, 'sessionId' | 'metadata'>,
    options: WorkingMemoryCallOptions = {},
  ): Promise<JsonValue | undefined> {
    const key = this.keyOf(session);
    return key && this.#recordIn(key, await this.#store.get(key, options));
  }

  /** The store key of a session's record, or undefined for a user-scoped memory of a session without a user. */
  keyOf(session: Pick<SessionView, 'sessionId' | 'metadata'>): WorkingMemoryKey | undefined {
    const { userId } = session.metadata;
    if (this.scope === 'user') return userId === undefined ? undefined : { userId };
    return userId === undefined ? { sessionId: session.sessionId } : { userId, sessionId: session.sessionId };
  }

  /**
   * Changes a record as the tool does, for apps (an admin screen, an import): `change` is merged into
   * the record (objects key by key, arrays and other values replace, `null` removes a key), or, with
   * a template, is the new markdown. Re-reads and re-applies the change when another writer wrote
   * meanwhile.
   * @throws InvalidInputError when the result would not pass the schema, or would be over
   *   `maxBytes` (`limit: 'maxBytes'`), or `change` is of the wrong kind; nothing is written.
   * @throws ConcurrencyError when other writers changed the record on every one of 10 tries (a random pause
   *   of up to 10, 20, 40 ... 500 ms between tries spreads writers that met).
   */
  async update(key: WorkingMemoryKey, change: JsonObject | string, options: WorkingMemoryCallOptions = {}): Promise<WorkingMemoryUpdate> {
    return this.#update(key, change, options.signal, undefined);
  }

  /** `update`, with the run's storage redaction applied to the change's text first (see `redactChange`). */
  async #update(
    key: WorkingMemoryKey,
    change: JsonObject | string,
    signal: AbortSignal | undefined,
    redact: Redact | undefined,
  ): Promise<WorkingMemoryUpdate> {
    const options: WorkingMemoryCallOptions = signal ? { signal } : {};
    const checked = checkWorkingMemoryKey(key);
    const what = `The working memory of ${describeWorkingMemoryKey(checked)}`;
    if (this.#template !== undefined ? typeof change !== 'string' : !isPlainObject(change)) {
      throw new InvalidInputError(
        `${what} was not changed: ${this.#template !== undefined ? 'the update must be the whole record as markdown text' : 'the update must be a JSON object of the fields to change'}.`,
      );
    }
    if (redact) change = await redactChange(change, redact);
    for (let attempt = 1; ; attempt++) {
      const stored = await this.#store.get(checked, options);
      const current = this.#recordIn(checked, stored);
      const next = typeof change === 'string' ? change : mergeRecord(current as JsonObject, change);
      if (stored && jsonEqual(next, current)) return { record: current, etag: stored.etag, changed: false };
      await this.#validate(next, what);
      try {
        const etag = await this.#store.put(checked, next, {
          ifMatch: stored?.etag ?? null,
          ...(options.signal ? { signal: options.signal } : {}),
        });
        return { record: next, etag, changed: true };
      } catch (error) {
        if (!ConcurrencyError.isInstance(error)) throw error;
        if (attempt >= MAX_WRITE_ATTEMPTS) {
          throw new ConcurrencyError(
            error.sessionId,
            `${what} was changed by other writers during each of ${MAX_WRITE_ATTEMPTS} tries; the update was not applied. Retry.`,
            { cause: error },
          );
        }
        // Writers that met spread out before they read again, so a burst of them does not collide in lock step.
        await abortable(new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(500, 5 * 2 ** attempt))), signal);
      }
    }
  }

  /** Shows the record as stable instructions, and offers the tool in tool mode. */
  async beforeRun(args: ProviderRunArgs): Promise<void> {
    const { session, context, signal, report, redact } = args;
    if (!(await this.#gate.enter(args))) return;
    if (redact) this.#redactors.set(context, redact);
    const key = this.keyOf(session);
    if (!key) {
      report({
        code: 'working-memory-no-user',
        message: `Working memory "${this.sourceId}" is per user, and session ${JSON.stringify(session.sessionId)} has no userId: it was left out of this run. Create the session with a userId.`,
      });
      return;
    }
    const record = this.#recordIn(key, await this.#store.get(key, { signal }));
    const instructions = this.#instructions(record);
    if (this.#budget) {
      const { maxTokens, tokenizer } = this.#budget;
      const tokens = tokenizer.countTokens(instructions);
      const fits = tokens <= maxTokens;
      recordBudget(context.metadata, this.sourceId, { maxTokens, tokens: fits ? tokens : 0, dropped: fits ? 0 : 1 });
      if (!fits)
        report({
          code: 'working-memory-over-budget',
          message: `The working memory record of "${this.sourceId}" takes ${tokens} tokens, over its budget of ${maxTokens}: it was left out of this run. Raise budget.maxTokens or lower maxBytes.`,
          data: { tokens, maxTokens },
        });
      else context.extendInstructions(this.sourceId, instructions);
    } else context.extendInstructions(this.sourceId, instructions);
    if (this.#tool) context.extendTools(this.sourceId, [this.#tool]);
  }

  /**
   * Background mode, after a successful run: sends the record and the newest turn to the update
   * model and applies its answer. @throws CtxError for an answer that is not what was asked, and
   * InvalidInputError for a change the schema or `maxBytes` refuses; the record is left as it was.
   */
  async afterRun({ agent, session, context, signal, redact }: ProviderRunArgs): Promise<void> {
    if (this.mode !== 'background' || context.error !== undefined || !context.response) return;
    const key = this.keyOf(session);
    if (!key) return;
    const turn = turnText(context);
    if (!turn) return;
    const record = this.#recordIn(key, await this.#store.get(key, { signal }));
    const client = this.#client ?? agent.client;
    const template = this.#template !== undefined;
    const ask = template
      ? 'Answer {"memory": "<the whole working memory as markdown, following its current layout>"} when the turn changes it, or {"memory": null} when it does not.'
      : `Answer {"update": {<only the fields that change>}}: objects are merged into the record, arrays and other values replace what is there, null removes a field; {"update": {}} when nothing changes.${this.#recordSchema ? `\nJSON Schema of the record:\n${JSON.stringify(this.#recordSchema)}` : ''}`;
    const shown = template ? String(record) : JSON.stringify(record, null, 2);
    const response = await client.getResponse([Message.user(`Current working memory:\n${shown}\n\nNewest turn:\n${turn}\n\n${ask}`)], {
      instructions: this.#updateInstructions,
      responseFormat: template
        ? { type: 'json', name: 'working_memory_update', schema: TEMPLATE_ANSWER_SCHEMA }
        : { type: 'json', name: 'working_memory_update' },
      store: false,
      signal,
    });
    const change = this.#parseAnswer(response.messages.map((m) => Message.text(m)).join(''));
    if (change === undefined) return;
    try {
      await this.#update(key, change, signal, redact);
    } catch (error) {
      // The model's change is at fault, not the caller's input: a failure of this provider, not of the run.
      if (!InvalidInputError.isInstance(error)) throw error;
      throw new CtxError(`The working memory "${this.sourceId}" was not updated from the model's answer: ${error.message}`, {
        cause: error,
      });
    }
  }

  /** `agent.deleteSession`: deletes a session's record (scope `'session'`). */
  async onSessionDeleted({ session, signal }: SessionHookArgs): Promise<void> {
    if (this.scope !== 'session') return;
    const key = this.keyOf(session);
    if (key) await this.#store.delete(key, { signal });
  }

  /**
   * `agent.exportUserData`: the user's records of this provider's scope (the user's own, or those of
   * their sessions), or undefined when none.
   */
  async exportUserData({ userId, signal }: UserDataArgs): Promise<JsonValue | undefined> {
    const entries = (await this.#store.listUser(userId, { signal })).filter(
      (e) => (e.sessionId !== undefined) === (this.scope === 'session'),
    );
    if (!entries.length) return undefined;
    return {
      records: entries.map((e) => ({
        ...(e.sessionId === undefined ? {} : { sessionId: e.sessionId }),
        record: e.record,
        updatedAt: e.updatedAt,
      })),
    };
  }

  /** `agent.deleteUserData`: deletes every record of the user. */
  async deleteUserData({ userId, signal }: UserDataArgs): Promise<void> {
    await this.#store.deleteUser(userId, { signal });
  }

  /** The record a stored value holds, or the starting record. @throws SessionStateError when the stored value is of the wrong kind. */
  #recordIn(key: WorkingMemoryKey, stored: { record: JsonValue } | undefined): JsonValue {
    if (!stored) return this.#template ?? {};
    const { record } = stored;
    if (this.#template !== undefined ? typeof record !== 'string' : !isPlainObject(record)) {
      throw new SessionStateError(
        `working-memory(${describeWorkingMemoryKey(key)})`,
        `the stored record must be ${this.#template !== undefined ? 'markdown text (this memory has a template)' : 'a JSON object (this memory has a schema)'}; delete it or use another store`,
      );
    }
    return record;
  }

  /** @throws InvalidInputError when `record` is over `maxBytes` or does not pass the schema. */
  async #validate(record: JsonValue, what: string): Promise<void> {
    if (jsonByteLength(record, this.maxBytes) > this.maxBytes) {
      throw new InvalidInputError(
        `${what} was not changed: it would be over the limit of maxBytes (${this.maxBytes} bytes of JSON, ${formatBytes(this.maxBytes)}). Keep it shorter: drop or condense what matters least.`,
        { limit: 'maxBytes' },
      );
    }
    if (!this.#check) return;
    const issues = await this.#check(record as JsonObject);
    if (issues.length) {
      throw new InvalidInputError(
        `${what} was not changed: the update would make it invalid: ${issues.join('; ')}. The record is as it was.`,
      );
    }
  }

  #instructions(record: JsonValue): string {
    const whose = this.scope === 'user' ? 'about the user, kept across conversations' : 'of this conversation';
    const how =
      this.mode === 'tool'
        ? this.#template !== undefined
          ? `When you learn something worth keeping, call ${WORKING_MEMORY_TOOL} with the whole memory as markdown, following the same layout.`
          : `When you learn something worth keeping, call ${WORKING_MEMORY_TOOL} with only the fields that change: objects are merged, arrays and other values replace what is there, null removes a field.`
        : 'It is updated after each turn; use it, do not repeat it back.';
    const body = this.#template !== undefined ? String(record) : JSON.stringify(record, null, 2);
    return `Working memory (${whose}). ${how}\n<working_memory>\n${body}\n</working_memory>`;
  }

  #makeTool(): Tool {
    const template = this.#template !== undefined;
    const parameters: JsonObject = template
      ? {
          type: 'object',
          additionalProperties: false,
          required: ['memory'],
          properties: { memory: { type: 'string', description: 'The whole working memory as markdown; replaces the current one.' } },
        }
      : {
          type: 'object',
          additionalProperties: false,
          required: ['update'],
          properties: {
            update: {
              ...(this.#recordSchema ? changeSchema(this.#recordSchema) : { type: 'object' }),
              description: 'Only the fields that change: objects are merged, arrays and other values replace, null removes a field.',
            },
          },
        };
    return {
      name: WORKING_MEMORY_TOOL,
      description: template
        ? 'Replaces the working memory (markdown) shown in your instructions.'
        : 'Changes the working memory shown in your instructions; the result must still fit its schema.',
      parameters,
      execute: async (args: unknown, { session, signal, context }) => {
        const key = this.keyOf(session);
        if (!key) throw new InvalidInputError('This conversation has no user, so it has no working memory to update.');
        const change = isPlainObject(args) ? (template ? args.memory : args.update) : undefined;
        const { record, changed } = await this.#update(key, change as JsonObject | string, signal, this.#redactors.get(context));
        return changed
          ? `Working memory updated. It is now:\n${template ? String(record) : JSON.stringify(record, null, 2)}`
          : 'Working memory unchanged: the update changes nothing.';
      },
    };
  }

  /** The change the update model asked for, or undefined for none. @throws CtxError for an answer that is not what was asked. */
  #parseAnswer(text: string): JsonObject | string | undefined {
    const fail = (problem: string): never => {
      throw new CtxError(
        `The working memory "${this.sourceId}" was not updated: the model's answer ${problem}. The record was left as it was.`,
      );
    };
    const value = parseJsonAnswer(text, fail);
    if (this.#template !== undefined) {
      if (value.memory === null || value.memory === undefined) return undefined;
      return typeof value.memory === 'string' ? value.memory : fail('has a "memory" that is neither text nor null');
    }
    if (value.update === undefined) return fail('has no "update" object');
    if (!isPlainObject(value.update)) return fail('has an "update" that is not a JSON object');
    return Object.keys(value.update).length ? (value.update as JsonObject) : undefined;
  }
}

/** A run's storage redaction. */
type Redact = NonNullable<ProviderRunArgs['redact']>;

/**
 * The change with the run's storage redaction (`AgentOptions.redact`) applied to its text, as to
 * any message written: markdown as one user message; in an object, each string value (not the
 * keys) as one user message, all in one call.
 */
async function redactChange(change: JsonObject | string, redact: Redact): Promise<JsonObject | string> {
  if (typeof change === 'string') return Message.text((await redact([Message.user(change)]))[0]!);
  const slots: Array<{ holder: JsonObject | JsonValue[]; key: string | number; text: string }> = [];
  const copy = JSON.parse(JSON.stringify(change)) as JsonObject;
  const visit = (node: JsonValue): void => {
    if (Array.isArray(node)) node.forEach((v, i) => (typeof v === 'string' ? slots.push({ holder: node, key: i, text: v }) : visit(v)));
    else if (isPlainObject(node))
      for (const [k, v] of Object.entries(node))
        typeof v === 'string' ? slots.push({ holder: node as JsonObject, key: k, text: v }) : visit(v as JsonValue);
  };
  visit(copy);
  if (!slots.length) return copy;
  const redacted = await redact(slots.map((slot) => Message.user(slot.text)));
  slots.forEach((slot, i) => {
    Object.defineProperty(slot.holder, slot.key, {
      value: Message.text(redacted[i]!),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  });
  return copy;
}

/** What the update model answers in template mode (strict-mode compatible). */
const TEMPLATE_ANSWER_SCHEMA: JsonObject = {
  type: 'object',
  additionalProperties: false,
  required: ['memory'],
  properties: { memory: { type: ['string', 'null'] } },
};
