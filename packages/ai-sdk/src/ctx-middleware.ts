import type { JSONObject, SharedV2ProviderMetadata, SharedV3ProviderMetadata } from '@ai-sdk/provider';
import {
  type Agent,
  type AgentInput,
  type AgentOptions,
  type AgentResponse,
  type AgentRunOptions,
  type AgentSession,
  type ChatClient,
  type ChatOptions,
  type ChatResponse,
  type ChatResponseUpdate,
  ConcurrencyError,
  ConfigurationError,
  type Contribution,
  createAgent,
  findProvider,
  HistoryProvider,
  InMemoryHistoryProvider,
  InMemorySessionStore,
  type JsonObject,
  Message,
  type SessionStore,
  type Tool,
} from '@ctx/core';
import { checkSessionId, describeError, isAbortError, isPlainObject } from '@ctx/core/backend';
import {
  type AiSdkLanguageModel,
  type CallOptions,
  type ContentPart,
  doGenerate,
  type GenerateResult,
  nestedResults,
  type ModelFinishReason,
  type ModelUsage,
  type StreamPart,
  type StreamResult,
} from './language-model.js';
import { streamModel, toCallOptions, toFunctionTool } from './model-call.js';
import { fromPromptMessage, type PromptMessage, toPrompt } from './prompt.js';
import { toChatResponse } from './results.js';
import { SessionTurns, type Step } from './session-turns.js';
import { answerKey, newMessages, type Recognised, TURN_SLOT } from './turn.js';
import { sumUsage } from './usage.js';

/** Options of `ctxMiddleware`: those of `createAgent` except the client (the wrapped model is it), and where sessions come from. */
export interface CtxMiddlewareOptions extends Omit<AgentOptions, 'client' | 'sessionStore'> {
  /**
   * One conversation for every call of the wrapped model (a script, a test, a model wrapped per
   * request). Without it, a call names its session in `providerOptions: { ctx: { sessionId } }`,
   * or runs without one (no history; providers still add context).
   */
  session?: AgentSession;
  /**
   * Where the sessions named by `providerOptions.ctx.sessionId` live; each call loads its session
   * and saves it once the model has answered (`ConcurrencyError` if it changed meanwhile).
   * Default: an `InMemorySessionStore` of this middleware (lost when the process ends).
   */
  sessionStore?: SessionStore;
  /**
   * How long a turn whose model call ended in calls of the app's tools keeps its session for the
   * next step of its tool loop (the AI SDK runs the tools, then calls the model with their
   * results), in milliseconds: meanwhile another turn on the session waits. Set it above the
   * longest your tools take. Default 10000.
   * @throws ConfigurationError (from `ctxMiddleware`) when it is not an integer from 0 to 3,600,000.
   */
  stepGapMs?: number;
}

/**
 * A language model middleware for `wrapLanguageModel` that works with `ai` 5 (middleware and model
 * specification v2), `ai` 6 (v3) and `ai` 7 (v4). Declared by its shape, without the AI SDK's
 * types, so it type-checks against the middleware type of whichever `ai` is installed: each wrapper
 * returns what the model it wraps returns, in that model's version.
 */
export interface CtxMiddleware {
  /** The middleware version `ai` 6 checks (`ai` 7 takes any). */
  readonly specificationVersion: 'v3';
  /** The middleware version of `ai` 5. */
  readonly middlewareVersion: 'v2';
  /** Runs one `generateText` model call as a ctx run. */
  wrapGenerate<Params extends object, Result>(options: {
    model: AiSdkLanguageModel;
    params: Params;
    doGenerate: () => PromiseLike<Result>;
  }): Promise<Result>;
  /** Runs one `streamText` model call as a ctx run. */
  wrapStream<Params extends object, Result>(options: {
    model: AiSdkLanguageModel;
    params: Params;
    doStream: () => PromiseLike<Result>;
  }): Promise<Result>;
}

/** What ctx did in one call of the wrapped model, in the result's `providerMetadata.ctx`. */
export interface CtxCallMetadata {
  /** The session of the call, if it had one. */
  sessionId: string | null;
  /** What each provider added (history included), by `sourceId`. */
  added: Record<string, Contribution>;
  /** Model calls ctx made: more than one when the model called tools the providers contributed. */
  modelCalls: number;
}

/**
 * ctx's context pipeline inside `generateText` and `streamText`: every call of the wrapped model
 * is one ctx run of `contextProviders` with a session. History is loaded before the call and
 * the turn stored after it (a stream once it has finished), each message once even across the
 * steps of a tool loop; retrieved documents and memories go into the prompt attributed to their
 * provider; tools providers contribute are offered to the model and run by ctx inside the call
 * (the app's tools stay the app's: their calls go back to the AI SDK); `compaction` runs before
 * every model call. With a session, pass the new messages only: ctx keeps the conversation.
 * The AI SDK's own errors (`APICallError`...) pass through unchanged, so its retries still apply.
 * @throws ConfigurationError for what `createAgent` refuses, or a provider using the reserved
 *   sourceId `ai-sdk`. Per call: a `ConfigurationError` for a `providerOptions.ctx` that is not
 *   `{ sessionId: string }`, or that names a session while `session` is set.
 */
export function ctxMiddleware(options: CtxMiddlewareOptions = {}): CtxMiddleware {
  const { session: fixedSession, sessionStore = new InMemorySessionStore(), stepGapMs = 10_000, ...agentOptions } = options;
  if (!Number.isInteger(stepGapMs) || stepGapMs < 0 || stepGapMs > MAX_STEP_GAP_MS) {
    throw new ConfigurationError(
      `ctxMiddleware: stepGapMs must be an integer from 0 to ${MAX_STEP_GAP_MS} (ms), got ${String(stepGapMs)}.`,
    );
  }
  if (agentOptions.contextProviders?.some((p) => p?.sourceId === TURN_SLOT)) {
    throw new ConfigurationError(
      `The sourceId "${TURN_SLOT}" is where ctxMiddleware keeps its place in a session; give the provider another.`,
    );
  }
  // Checks the options once, so a mistake shows when the middleware is made; loads and saves sessions.
  const sessions = createAgent({ ...agentOptions, sessionStore, client: PLACEHOLDER });
  /** One agent per wrapped model, made on its first call; each call's own state travels in its chat options. */
  const agents = new WeakMap<AiSdkLanguageModel, Agent>();
  const agentOf = (model: AiSdkLanguageModel): Agent => {
    let agent = agents.get(model);
    if (!agent) agents.set(model, (agent = createAgent({ ...agentOptions, sessionStore, client: bind(model) })));
    return agent;
  };
  const { onEvent } = agentOptions;
  const warn = (code: 'turn-lease-failed' | 'corrupt-state', message: string) => onEvent?.({ type: 'warning', code, message });
  const turns = new SessionTurns(
    {
      waitMs: agentOptions.runningTurns?.waitMs ?? 60_000,
      leaseMs: agentOptions.runningTurns?.leaseMs ?? 15_000,
      gapMs: stepGapMs,
      warn: (message) => warn('turn-lease-failed', message),
    },
    fixedSession ? undefined : sessionStore,
  );
  /** The histories a run of the middleware stores in: its history providers, else the in-memory default. */
  const histories: HistoryProvider[] = (agentOptions.contextProviders ?? []).flatMap(
    (p) => findProvider([p], HistoryProvider.isInstance) ?? [],
  );
  if (!histories.some((h) => h.loadMessages !== false)) histories.push(new InMemoryHistoryProvider());

  /**
   * Stores the tool results a failed or aborted step brought (its input, when it goes on from a
   * stored turn and holds only tool messages), so that no stored call lacks the result the tool
   * really returned. The step's partial answer is not stored.
   */
  async function storeResults(session: AgentSession, input: readonly PromptMessage[]): Promise<boolean> {
    if (input.length === 0 || input.some((m) => m.role !== 'tool')) return false;
    const messages: Message[] = [];
    for (const m of input) {
      const message = fromPromptMessage(m);
      if (message) messages.push(Message.withSource(message, 'input', 'input'));
    }
    const { redact } = agentOptions;
    for (const history of histories) {
      if (!history.storeInputs) continue;
      const state = (session.state[history.sourceId] ??= {}) as JsonObject;
      const info = { sessionId: session.sessionId, sourceId: history.sourceId, signal: NEVER };
      const toStore = redact ? await redact(messages, info) : messages;
      await history.saveMessages(session.sessionId, toStore, { state, turn: { inputIds: messages.map((m) => m.id), opens: false } });
    }
    return true;
  }

  /** Saves a stored session; a conflict after which the turn is stored anyway is a warning, not a failure: the answer goes back. */
  async function save(session: AgentSession, signal: AbortSignal | undefined) {
    try {
      await sessions.saveSession(session, signal ? { signal } : {});
    } catch (error) {
      if (!(ConcurrencyError.isInstance(error) && error.turnStored === true)) throw error;
      warn(
        'corrupt-state',
        `Session ${session.sessionId}: ${describeError(error)} The answer was returned; the next call may not recognise the messages of this one (send only new messages).`,
      );
    }
  }

  async function prepare(model: AiSdkLanguageModel, params: CallOptions) {
    const { sessionId, params: modelParams } = takeSessionId(params);
    if (sessionId !== undefined && fixedSession) {
      throw new ConfigurationError(
        'This ctxMiddleware has a fixed `session`; remove providerOptions.ctx.sessionId, or make the middleware without `session`.',
      );
    }
    const calls = record();
    const signal = params.abortSignal;
    const system: string[] = [];
    const conversation: PromptMessage[] = [];
    for (const m of params.prompt) {
      if (m.role === 'system') system.push(m.content);
      else conversation.push(m);
    }
    let recognised: Recognised | undefined;
    let step: Step | undefined;
    const named = fixedSession?.sessionId ?? sessionId;
    if (named !== undefined) {
      // The last recognition `enter` makes is of the session it hands over.
      step = await turns.enter(
        named,
        signal,
        async () =>
          fixedSession ?? (await sessions.getSession(named, signal ? { signal } : {})) ?? sessions.createSession({ sessionId: named }),
        (candidate) => (recognised = newMessages(candidate, conversation)),
      );
    }
    const session = step?.session;
    const turn = recognised ?? newMessages(undefined, conversation);
    /** Keys of the visible answer, and whether it calls the app's tools (then the AI SDK runs them and calls again). */
    const answer = { text: '', calls: [] as string[], appCalls: false };
    let ended = false;
    let failing: Promise<void> | undefined;
    /** Ends the step: keeps the session for the turn's next step, or frees it. */
    const leave = (hold: boolean) => {
      if (ended) return;
      ended = true;
      step?.leave(hold, session!);
    };
    const failed = async (error: unknown): Promise<void> => {
      const aborted = isAbortError(error, signal);
      const hold = !aborted && step !== undefined && turn.continues && turn.holder === step.holder;
      try {
        if (session && turn.continues && (await storeResults(session, turn.input))) {
          turn.commit([], hold ? step!.holder : undefined);
          if (!fixedSession) await save(session, undefined);
        }
      } catch (failure) {
        warn(
          'corrupt-state',
          `Session ${session!.sessionId}: the tool results of a failed call could not be stored (its tool calls stay without results): ${describeError(failure)}.`,
        );
      } finally {
        leave(hold);
      }
    };
    try {
      const appTools = params.tools?.length ? new Set(params.tools.map((t) => t.name)) : NO_TOOLS;
      const runTools: Tool[] = [];
      for (const t of params.tools ?? []) {
        if (t.type === 'function') {
          runTools.push({
            name: t.name,
            parameters: t.inputSchema as JsonObject,
            ...(t.description ? { description: t.description } : {}),
          });
        }
      }
      const state: CallState = { params: modelParams, appTools, calls, observer: {} };
      const runOptions: AgentRunOptions = {
        options: { instructions: system.join('\n\n') || undefined, tools: runTools, additional: { [CALL]: state } },
      };
      if (session) runOptions.session = session;
      if (signal) runOptions.signal = signal;
      const visible = (part: { toolName: string; providerExecuted?: boolean }) =>
        part.providerExecuted === true || appTools.has(part.toolName);
      return {
        calls,
        runOptions,
        input: toInput(turn.input),
        answer,
        /** Starts the call's run (streamed or not) on the model's agent, `observer` told of the model's stream. */
        start<T>(go: (agent: Agent) => T, observer: CallState['observer'] = {}): T {
          state.observer = observer;
          return go(agentOf(model));
        },
        /**
         * Keeps the turn (with the key of the answer the AI SDK gets) and saves a stored session; the
         * answer goes to the AI SDK only after this. An answer that calls the app's tools keeps the
         * session for the next step.
         */
        async finish() {
          const hold = answer.appCalls && step !== undefined;
          try {
            turn.commit([answerKey(answer.text, answer.calls)], hold ? step!.holder : undefined);
            if (session && !fixedSession) await save(session, signal);
          } finally {
            leave(hold);
          }
        },
        /**
         * After a failed or aborted run: stores the tool results the step brought (a call is never
         * left without the result its tool returned), then frees the session, or keeps it for the
         * AI SDK's retry of a step of a running tool loop.
         */
        fail(error: unknown): Promise<void> {
          if (ended) return Promise.resolve();
          failing ??= failed(error);
          return failing;
        },
        /** The session this call holds until it ends, if any. */
        held: step ? session!.sessionId : undefined,
        metadata: (response: AgentResponse): JSONObject => {
          const metadata: CtxCallMetadata = {
            sessionId: session?.sessionId ?? null,
            added: response.added ?? {},
            modelCalls: calls.modelCalls,
          };
          return metadata as unknown as JSONObject;
        },
        /** Whether a tool call goes to the AI SDK: the app's tools and the provider's own do, those ctx runs do not. */
        visible,
        /** Notes a part the AI SDK gets, for the key of the answer. */
        shown(part: ContentPart | StreamPart) {
          if (part.type === 'text') answer.text += part.text;
          else if (part.type === 'text-delta') answer.text += part.delta;
          else if (part.type === 'tool-call') {
            answer.calls.push(part.toolCallId);
            if (part.providerExecuted !== true) answer.appCalls = true;
          }
        },
      };
    } catch (error) {
      leave(false);
      throw error;
    }
  }

  const middleware = {
    specificationVersion: 'v3',
    middlewareVersion: 'v2',
    async wrapGenerate({ model, params }: { model: AiSdkLanguageModel; params: CallOptions }): Promise<GenerateResult> {
      const call = await prepare(model, params);
      let response: AgentResponse;
      try {
        response = await call.start((agent) => agent.run(call.input, call.runOptions));
      } catch (error) {
        await call.fail(error);
        throw error;
      }
      const { results } = call.calls;
      const last = results[results.length - 1];
      let result: GenerateResult;
      if (!last) result = answerWithoutModel(model, response, call.metadata(response));
      else {
        const providerMetadata = { ...last.providerMetadata, ctx: call.metadata(response) };
        const shown = (part: ContentPart) => part.type !== 'tool-call' || call.visible(part);
        // One model call whose tool calls all go to the app (the usual case) is its result as it came.
        result =
          results.length === 1 && last.content.every(shown)
            ? ({ ...last, providerMetadata } as GenerateResult)
            : ({
                ...last,
                content: results.flatMap((r) => r.content.filter(shown)),
                usage: sumUsage(results.map((r) => r.usage)) ?? last.usage,
                warnings: results.flatMap((r): unknown[] => r.warnings),
                providerMetadata,
              } as GenerateResult);
      }
      for (const part of result.content) call.shown(part);
      await call.finish();
      return result;
    },
    async wrapStream({ model, params }: { model: AiSdkLanguageModel; params: CallOptions }): Promise<StreamResult> {
      const call = await prepare(model, params);
      const hidden = new Set<string>();
      let output: ReadableStreamDefaultController<StreamPart> | undefined;
      let started: (result: StreamResult) => void = () => {};
      const firstCall = new Promise<StreamResult>((resolve) => (started = resolve));
      const emit = (part: StreamPart) => {
        try {
          output?.enqueue(part);
        } catch {
          // the AI SDK stopped reading; the run is being aborted
        }
      };
      const run = call.start((agent) => agent.runStream(call.input, call.runOptions), {
        onStart: (result) => started(result),
        onPart(part) {
          if (part.type === 'finish' || part.type === 'error') return; // one finish at the end; errors fail the run
          if (part.type === 'stream-start' && call.calls.modelCalls > 1) return;
          if (part.type === 'tool-input-start' && !call.visible(part)) return void hidden.add(part.id);
          if ((part.type === 'tool-input-delta' || part.type === 'tool-input-end') && hidden.has(part.id)) return;
          if (part.type === 'tool-call' && !call.visible(part)) return;
          call.shown(part);
          emit(part);
        },
      });
      const updates = run[Symbol.asyncIterator]();
      /**
       * While the AI SDK does not read (`ai` 7 reads only as the app reads `streamText`'s result), the
       * call holds its session; after `runningTurns.leaseMs` unread, it gives the turn up: the run
       * stops, the session is freed, and a later read gets a `ConcurrencyError`.
       */
      let unread: ReturnType<typeof setTimeout> | undefined;
      const waitForRead = (controller: ReadableStreamDefaultController<StreamPart>) => {
        const sessionId = call.held;
        if (sessionId === undefined) return;
        const { leaseMs } = turns.options;
        unread = setTimeout(() => {
          unread = undefined;
          const error = new ConcurrencyError(
            sessionId,
            `Session ${sessionId}: the stream of this streamText call was not read for ${leaseMs} ms (runningTurns.leaseMs), so it gave up its turn on the session: the model call was stopped and nothing of it was stored (a tool loop's tool results excepted). Read streamText's result (or call its consumeStream()) as it comes, and send the call again.`,
            { turnRunning: false, turnStored: false },
          );
          void (async () => {
            await Promise.resolve(updates.return?.()).catch(() => {}); // the run's own failure is not this call's to report
            await call.fail(error);
            try {
              controller.enqueue({ type: 'error', error });
              controller.close();
            } catch {
              // the AI SDK cancelled the stream meanwhile
            }
          })();
        }, leaseMs);
        (unread as { unref?: () => void }).unref?.();
      };
      const stream = new ReadableStream<StreamPart>({
        start(controller) {
          output = controller;
        },
        async pull(controller) {
          clearTimeout(unread);
          unread = undefined;
          try {
            // Reads on while the AI SDK takes parts as they come (a read of it is waiting), so a part costs no pull of its own.
            while (!(await updates.next()).done) if ((controller.desiredSize ?? 0) <= 0) return waitForRead(controller);
            const response = await run.response;
            const answered = call.calls.modelCalls === 0 ? textParts(response.text) : [];
            for (const part of answered) call.shown(part);
            await call.finish();
            const { finish } = call.calls;
            for (const part of answered) controller.enqueue(part);
            controller.enqueue({
              type: 'finish',
              usage: (sumUsage(call.calls.usages) ?? emptyUsage(model)) as never,
              finishReason: (finish?.finishReason ?? finishReason(model, response)) as never,
              providerMetadata: { ...finish?.providerMetadata, ctx: call.metadata(response) },
            });
            controller.close();
          } catch (error) {
            await call.fail(error);
            if (params.abortSignal?.aborted) return controller.error(params.abortSignal.reason);
            controller.enqueue({ type: 'error', error });
            controller.close();
          }
        },
        async cancel(reason) {
          clearTimeout(unread);
          unread = undefined;
          await updates.return?.();
          await call.fail(params.abortSignal?.aborted ? params.abortSignal.reason : (reason ?? new Error('cancelled')));
        },
      });
      let first: StreamResult | undefined;
      try {
        first = await Promise.race([firstCall, run.response.then(() => undefined)]);
      } catch (error) {
        await call.fail(error);
        throw error;
      }
      return { ...first, stream } as StreamResult;
    },
  };
  return middleware as unknown as CtxMiddleware;
}

/** The run's input: the prompt messages as ctx messages, or the text of the usual single user text message (made into a message by the agent, unchecked). */
function toInput(prompt: readonly PromptMessage[]): AgentInput {
  const [first] = prompt;
  if (prompt.length === 1 && first?.role === 'user' && first.content.length === 1 && first.content[0]!.type === 'text')
    return first.content[0]!.text;
  const input: Message[] = [];
  for (const m of prompt) {
    const message = fromPromptMessage(m);
    if (message) input.push(message);
  }
  return input;
}

/** The longest `stepGapMs`: an hour, the longest turn lease a store grants. */
const MAX_STEP_GAP_MS = 3_600_000;

/** A signal that never aborts, for a redactor called outside a run. */
const NEVER = new AbortController().signal;

/** A client that stands in where only the agent's session methods are used. */
const PLACEHOLDER: ChatClient = {
  specificationVersion: 'v1',
  provider: 'ai-sdk',
  modelId: 'none',
  getResponse: () => Promise.reject(new Error('not a model')),
  getStreamingResponse: () => ({
    [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(new Error('not a model')) }),
  }),
};

/** What the model calls of one middleware call returned. */
interface CallRecord {
  results: GenerateResult[];
  usages: ModelUsage[];
  finish: { finishReason: ModelFinishReason; providerMetadata?: SharedV2ProviderMetadata | SharedV3ProviderMetadata } | undefined;
  modelCalls: number;
}

function record(): CallRecord {
  return { results: [], usages: [], finish: undefined, modelCalls: 0 };
}

/** The app's `providerOptions.ctx.sessionId`, and the call options without `providerOptions.ctx`. */
function takeSessionId(params: CallOptions): { sessionId: string | undefined; params: CallOptions } {
  if (params.providerOptions?.ctx === undefined) return { sessionId: undefined, params };
  const { ctx, ...providerOptions } = params.providerOptions;
  const keys = isPlainObject(ctx) ? Object.keys(ctx) : [];
  if (keys.some((k) => k !== 'sessionId')) {
    throw new ConfigurationError(`providerOptions.ctx takes only { sessionId: string }, got the fields ${keys.join(', ')}.`);
  }
  const sessionId = ctx.sessionId === undefined ? undefined : checkSessionId(ctx.sessionId);
  return { sessionId, params: { ...params, providerOptions } as CallOptions };
}

/** The app's tool names of a call without tools. */
const NO_TOOLS: ReadonlySet<string> = new Set();

/** Where a call's state travels in the chat options of its run (`additional` never reaches the model). */
const CALL = Symbol('ctx.ai-sdk.call');

/** One middleware call, as the model's chat client needs it. */
interface CallState {
  /** The app's call options, without `providerOptions.ctx`. */
  params: CallOptions;
  /** The names of the app's tools. */
  appTools: ReadonlySet<string>;
  calls: CallRecord;
  observer: { onStart?(result: StreamResult): void; onPart?(part: StreamPart): void };
}

/**
 * The chat client of a wrapped model: ctx's prompt and tools over the app's call options (from the
 * call's state in `options.additional`), sent to the next model in the middleware chain. The app's
 * tools keep their own declarations (provider tools included); tools providers added follow them.
 * Records every result.
 */
function bind(model: AiSdkLanguageModel): ChatClient {
  const callFor = (messages: Message[], options: ChatOptions): { call: CallOptions; state: CallState } => {
    const state = options.additional?.[CALL as unknown as string] as CallState;
    const { params, appTools, calls } = state;
    calls.modelCalls++;
    const prompt = toPrompt(messages, options.instructions) as CallOptions['prompt'];
    const added = (options.tools ?? []).filter((t) => !appTools.has(t.name)).map(toFunctionTool);
    const all = added.length ? [...(params.tools ?? []), ...added] : params.tools;
    const call = { ...params, prompt, tools: all?.length ? all : undefined } as CallOptions;
    if (options.toolChoice !== undefined) call.toolChoice = toCallOptions([], { toolChoice: options.toolChoice }).toolChoice;
    if (options.signal) call.abortSignal = options.signal;
    return { call, state };
  };
  return {
    specificationVersion: 'v1',
    provider: model.provider,
    modelId: model.modelId,
    storesByDefault: false,
    async getResponse(messages, options): Promise<ChatResponse> {
      const { call, state } = callFor(messages, options);
      const result = await doGenerate(model, call);
      state.calls.results.push(result);
      return toChatResponse(result);
    },
    getStreamingResponse(messages, options): AsyncIterable<ChatResponseUpdate> {
      let state: CallState | undefined;
      return streamModel(
        model,
        () => {
          const made = callFor(messages, options);
          state = made.state;
          return made.call;
        },
        0,
        options.signal,
        {
          onStart: (result) => {
            if (state!.calls.modelCalls === 1) state!.observer.onStart?.(result);
          },
          onPart: (part) => {
            const { calls, observer } = state!;
            if (part.type === 'finish') {
              calls.usages.push(part.usage);
              calls.finish = {
                finishReason: part.finishReason,
                ...(part.providerMetadata ? { providerMetadata: part.providerMetadata } : {}),
              };
            }
            observer.onPart?.(part);
          },
        },
      );
    },
  };
}

function emptyUsage(model: AiSdkLanguageModel): ModelUsage {
  return nestedResults(model)
    ? {
        inputTokens: { total: 0, noCache: 0, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: 0, text: 0, reasoning: undefined },
      }
    : { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
}

function finishReason(model: AiSdkLanguageModel, response: AgentResponse): ModelFinishReason {
  const reason = response.finishReason === undefined ? 'stop' : response.finishReason;
  return nestedResults(model) ? { unified: reason, raw: undefined } : reason;
}

/** The result of a call a provider answered without the model (a cache, say): its text. */
function answerWithoutModel(model: AiSdkLanguageModel, response: AgentResponse, ctx: JSONObject): GenerateResult {
  return {
    content: response.text ? [{ type: 'text', text: response.text }] : [],
    finishReason: finishReason(model, response),
    usage: emptyUsage(model),
    warnings: [],
    providerMetadata: { ctx },
  } as GenerateResult;
}

function textParts(text: string): StreamPart[] {
  if (!text) return [];
  return [
    { type: 'text-start', id: 'ctx' },
    { type: 'text-delta', id: 'ctx', delta: text },
    { type: 'text-end', id: 'ctx' },
  ];
}
