import { shortId } from '../backend/checks.js';
import { ConfigurationError, CtxError, InvalidInputError, type SessionStateError } from '../errors.js';
import { generateId } from '../messages/id.js';
import { Message } from '../messages/message.js';
import { AgentSession } from '../session/agent-session.js';
import type { AgentResponse, Contribution } from '../contracts/agent-response.js';
import type { AgentEvent } from '../contracts/events.js';
import type { AgentView, ContextProvider, ProviderRunArgs } from '../contracts/run-view.js';
import { type CheckedAgentOptions, checkContextProviders } from './agent-options.js';
import type { AgentInput, AgentRunOptions } from './agent.js';
import { approvalRound, pendingCallIds } from './approvals.js';
import { type DefaultHistory, defaultHistory } from './default-history.js';
import { persistModelCalls } from './persist-model-calls.js';
import { type CheckedLimits, checkInputSize } from './limits.js';
import { redactorFor } from './redact.js';
import { runPipeline } from './pipeline.js';
import { RunAbort } from './run-abort.js';
import { RunContext } from './run-context.js';
import type { RunStreamSink } from './run-stream.js';
import { runToolLoop } from './tool-loop.js';
import { noteTurn, oweTurnStored } from './turn-stored.js';
import { isoNow } from '../messages/iso-now.js';

/** What every run of one agent shares. */
export interface AgentRuntime {
  options: CheckedAgentOptions;
  history: DefaultHistory;
  /** Where events go; undefined when nobody listens (no `onEvent`), so `emit?.({ ... })` builds none. */
  emit: ((event: AgentEvent) => void) | undefined;
}

/**
 * One run, step by step: a fresh context, the run's providers (the default history added when the
 * rule says so), the pipeline around the tool loop, then the response or the first failure.
 * Streaming runs pass their `stream` and their own `controller`.
 */
export async function executeRun(
  runtime: AgentRuntime,
  input: AgentInput,
  runOptions: AgentRunOptions,
  stream?: RunStreamSink,
  controller: AbortController | undefined = runOptions.signal ? new AbortController() : undefined,
): Promise<AgentResponse> {
  const { options, emit } = runtime;
  const { client, name, maxToolRoundtrips, compaction, toolValidator } = options;
  const history = runOptions.contextProviders
    ? defaultHistory(client, checkContextProviders(runOptions.contextProviders))
    : runtime.history;
  const runId = generateId();
  // A run without a session gets one of its own, named after the run: one random id for both.
  const session = runOptions.session ?? new AgentSession({ sessionId: runId });
  if (session.serviceSessionId !== undefined && client.continuesConversations === false) {
    throw new ConfigurationError(
      `Session ${shortId(session.sessionId)} continues a conversation the service keeps (serviceSessionId ${shortId(session.serviceSessionId)}), but the ${client.provider} client for ${client.modelId} cannot continue one, so the model would see no history. Run it on a client that can (e.g. OpenAIResponsesClient), or start a new session.`,
    );
  }
  // Answers to calls waiting for approval are checked before anything runs.
  const hasInput = typeof input === 'string' || !Array.isArray(input) || input.length > 0;
  const approvals = approvalRound(runOptions.session, runOptions.approvals, hasInput);
  const inputMessages = toMessages(input, options.limits);
  const started = emit ? performance.now() : 0;
  const onAbort = () => controller?.abort(runOptions.signal?.reason);
  if (runOptions.signal?.aborted) onAbort();
  runOptions.signal?.addEventListener('abort', onAbort, { once: true });
  const abort = new RunAbort(controller);
  const signal = abort.cancel;

  const { instructions: runInstructions, tools: runTools, ...chatOptions } = runOptions.options ?? NO_OPTIONS;
  const instructions =
    options.instructions && runInstructions ? `${options.instructions}\n\n${runInstructions}` : options.instructions || runInstructions;
  const providers = history.providersFor(runOptions.session, chatOptions);
  const context = new RunContext({
    sessionId: session.sessionId,
    serviceSessionId: session.serviceSessionId,
    inputMessages,
    options: chatOptions,
    instructions: instructions || undefined,
    tools: options.tools ?? [],
    runTools: runTools ?? [],
    stability: stabilityOf(providers),
  });
  const agent: AgentView = { name, client, contextProviders: providers };
  const slotsBefore = new Set(Object.keys(session.state));
  const created = new Set<ContextProvider>();
  emit?.({
    type: 'run-start',
    runId,
    sessionId: session.sessionId,
    agentName: name,
    providers: providers.map((p) => p.sourceId),
    provider: client.provider,
    modelId: client.modelId,
  });
  const { loaders } = history;
  if (loaders.length > 1) {
    emit?.({
      type: 'warning',
      runId,
      code: 'multiple-history-loaders',
      message: `${loaders.length} history providers load messages (${loaders.map((p) => p.sourceId).join(', ')}); the model sees each one's copy of the conversation.`,
    });
  }
  // Plain data properties only: a getter in an object literal made per run gives V8 a new hidden
  // class per run, which keeps each run's garbage alive through minor GCs (they took 5x as long).
  const args = (provider: ContextProvider): ProviderRunArgs => ({
    agent,
    session,
    context,
    signal: abort.signal,
    state: session.stateOf(provider.sourceId),
    report: (d) => emit?.({ type: 'provider-diagnostic', runId, sourceId: provider.sourceId, ...d }),
    redact: redactorFor(options.redact, session.sessionId, provider.sourceId, abort.signal),
  });
  const invoke = async (inside: readonly ContextProvider[]): Promise<void> => {
    const timeoutMs = options.providerTimeoutMs;
    const onModelCall =
      options.persistence === 'model-call'
        ? persistModelCalls({ runId, inside, args, signal, timeoutMs, emit, session: runOptions.session, store: options.sessionStore })
        : undefined;
    try {
      context.response = await runToolLoop({
        runId,
        agent,
        session,
        context,
        abort,
        maxToolRoundtrips,
        authorName: options.authorName,
        maxMessageBytes: options.limits.maxMessageBytes,
        compaction,
        toolValidator,
        emit,
        stream,
        onModelCall,
        approvals,
        leaveOpen: pendingCallIds(session),
      });
    } catch (error) {
      context.error = error;
    }
    context.finishResponse();
  };
  try {
    await runPipeline(providers, {
      runId,
      signal,
      emit,
      timeoutMs: options.providerTimeoutMs,
      args,
      isNewTo: (provider) => !slotsBefore.has(provider.sourceId),
      created: (provider) => created.add(provider),
      invoke,
    });
  } finally {
    runOptions.signal?.removeEventListener('abort', onAbort);
    // A slot made for this run is kept when the provider's onSessionCreated ran on it (even empty,
    // so it is not called again), else when it holds something (a gated-off provider's stays out).
    for (const p of providers) {
      if (slotsBefore.has(p.sourceId)) continue;
      const keep = p.onSessionCreated ? created.has(p) : Object.keys(session.state[p.sourceId] ?? {}).length > 0;
      if (!keep) delete session.state[p.sourceId];
    }
  }
  const { response, error } = context;
  emit?.({
    type: 'run-end',
    runId,
    sessionId: session.sessionId,
    durationMs: performance.now() - started,
    ...(error !== undefined ? { error } : {}),
    ...(response?.usage ? { usage: response.usage } : {}),
  });
  if (error !== undefined) throw error;
  if (!response) throw new CtxError(`Run ${runId} ended without a response: a wrap provider did not call next().`);
  const added: Record<string, Contribution> = {};
  for (const p of providers) added[p.sourceId] = context.contributionOf(p.sourceId);
  response.added = added;
  session.pending = approvals.next; // calls waiting for approval, kept once the run succeeded
  oweTurnStored(response, { runId, providers, args, signal: runOptions.signal, timeoutMs: options.providerTimeoutMs, emit });
  if (runOptions.session) {
    session.metadata.updatedAt = isoNow();
    response.sessionId = session.sessionId;
    noteTurn(session, providers, context);
  }
  if (response.conversationId !== undefined) {
    session.serviceSessionId = response.conversationId;
    history.dropLocalCopy(session, providers); // the service keeps the conversation from now on
  }
  return response;
}

const NO_OPTIONS: NonNullable<AgentRunOptions['options']> = Object.freeze({});

/**
 * The run's input as validated messages, within the agent's `limits`.
 * @throws InvalidInputError naming the offending path, or the limit, the size and the message.
 */
export function toMessages(input: AgentInput, limits: CheckedLimits): Message[] {
  const list = typeof input === 'string' ? [Message.user(input)] : Array.isArray(input) ? [...input] : [input as Message];
  if (typeof input !== 'string') {
    list.forEach((m, i) => {
      try {
        Message.parse(m, `$.input[${i}]`);
      } catch (error) {
        const { path, problem } = error as SessionStateError;
        throw new InvalidInputError(`Invalid run input at ${path}: ${problem}`, { cause: error });
      }
    });
  }
  // A question made here weighs at most its text escaped (6 bytes a UTF-16 unit, as \u00XX) plus
  // the fields around it (an id and a time of ctx's own, under 200 bytes): well within the limits, it is not counted.
  if (typeof input !== 'string' || input.length * 6 + STRING_INPUT_FIELDS > Math.min(limits.maxMessageBytes, limits.maxInputBytes)) {
    checkInputSize(list, limits);
  }
  return list;
}

/** More than the JSON of a user message without its text weighs (the fields, an id of ctx's own and an ISO time). */
const STRING_INPUT_FIELDS = 256;

/** The providers that declare their `stability`, by `sourceId`. */
function stabilityOf(providers: readonly ContextProvider[]): Map<string, 'stable' | 'per-run'> {
  const out = new Map<string, 'stable' | 'per-run'>();
  for (const p of providers) if (p.stability !== undefined) out.set(p.sourceId, p.stability);
  return out;
}
