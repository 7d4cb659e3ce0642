import { describe, isAbortError, ToolExecutionError } from '../errors.js';
import { findNonJson, formatPath, jsonProblem } from '../messages/json.js';
import { Message, RESULT_DEPTH } from '../messages/message.js';
import type { AgentResponse, PendingApproval } from '../contracts/agent-response.js';
import type { ChatOptions, ChatResponse, FinishReason, Usage } from '../contracts/chat-client.js';
import type { CompactionStrategy } from '../contracts/compaction-strategy.js';
import type { AgentEvent } from '../contracts/events.js';
import type { JsonValue } from '../contracts/json.js';
import type { FunctionCallContent, FunctionResultContent } from '../contracts/message.js';
import type { AgentView, SessionContext, SessionView, Tool, ToolExecuteOptions } from '../contracts/run-view.js';
import type { ToolDefinition } from '../contracts/tool-definition.js';
import type { ToolArgumentsCheck, ToolValidator } from '../contracts/tool-validator.js';
import { shortId } from '../backend/checks.js';
import { abortable } from '../backend/deadline.js';
import { runCompaction } from '../compaction/run-compaction.js';
import { compileToolChecks } from '../tools/tool-validator.js';
import { createAgentResponse } from './agent-response.js';
import type { ApprovalRound } from './approvals.js';
import { answerInterruptedCalls } from './interrupted-calls.js';
import { addUsage } from './assemble-response.js';
import { pairResults } from './pair-results.js';
import type { RunAbort } from './run-abort.js';
import type { RunStreamSink } from './run-stream.js';
import { isMarkedSettled } from '../messages/settled-calls.js';
import { toolResultTooLarge } from './limits.js';

/** Everything one tool loop needs. */
export interface ToolLoopRun {
  runId: string;
  agent: AgentView;
  session: SessionView;
  context: SessionContext;
  abort: RunAbort;
  maxToolRoundtrips: number;
  /** Set on the model's messages that carry no `authorName` (the agent's given `name`). */
  authorName?: string | undefined;
  /** A tool result larger than this (bytes of JSON) becomes an error result. Default: no limit. */
  maxMessageBytes?: number | undefined;
  compaction: CompactionStrategy | undefined;
  /** Checks the arguments of tools without their own `validate`. */
  toolValidator: ToolValidator | undefined;
  /** Where events go; undefined when nobody listens (no `onEvent`), so `emit?.({ ... })` builds none. */
  emit: ((event: AgentEvent) => void) | undefined;
  /** Set for streaming runs: where model calls stream and tool messages go. */
  stream: RunStreamSink | undefined;
  /**
   * Set with `persistence: 'model-call'`: stores the run's response messages so far (model replies,
   * function calls, tool results) after each model call, before any tool runs, and again once a
   * batch of tool calls has its results, before the next model call; the loop waits for it.
   */
  onModelCall?: ((produced: readonly Message[]) => Promise<void>) | undefined;
  /** Call ids the session holds open on purpose (pending approvals): never answered as interrupted. */
  leaveOpen?: ReadonlySet<string> | undefined;
  /** The calls the session holds for approval and this run's answers; the loop sets `next`. */
  approvals?: ApprovalRound | undefined;
}

/**
 * Calls the model, runs the function calls it asks for (in parallel), sends the results back, and
 * repeats until the model answers without calls or `maxToolRoundtrips` rounds of results were sent.
 * A failing tool, or arguments its schema rejects, becomes an error result the model sees; only the
 * model call, an abort, or a tool schema the `toolValidator` cannot compile (`ConfigurationError`,
 * before the first model call) fails the loop. A call whose tool needs approval is not run: once
 * the other calls of that response ran, the loop ends with it in `pendingApprovals`. A run that
 * answers approvals first runs the approved calls and denies the others; it calls the model only
 * when no call waits any more.
 */
export async function runToolLoop(run: ToolLoopRun): Promise<AgentResponse> {
  const { agent, context, emit, runId } = run;
  const signal = run.abort.cancel;
  const { client } = agent;
  const tools = context.tools;
  const byName = new Map(tools.map((t) => [t.name, t]));
  const checks = compileToolChecks(tools, run.toolValidator);
  const base: ChatOptions = { ...context.options };
  if (signal) base.signal = signal;
  const instructions = context.getInstructions();
  // Instructions of per-run providers travel as a message before the input, not as instructions.
  const perRun = agent.contextProviders.filter((p) => p.stability === 'per-run').map((p) => p.sourceId);
  const sentInstructions = perRun.length
    ? context.instructions.filter((i) => !perRun.includes(i.sourceId)).length
    : context.instructions.length;
  if (instructions !== undefined) base.instructions = instructions;
  if (tools.length) base.tools = tools;
  // What the events' content shows; built once per run, only for a listener.
  const instructionSources = emit
    ? context.instructions.filter((i) => !perRun.includes(i.sourceId)).map((i) => ({ sourceId: i.sourceId, text: i.text }))
    : undefined;
  const toolDefinitions = emit ? tools.map(toolDefinitionOf) : undefined;

  const produced: Message[] = [];
  const round = run.approvals;
  let first = context.getMessages({ includeInput: true });
  if (round?.pending) {
    const resumed = await resumeApprovals(round, first, produced, byName, checks, run);
    if (!resumed) return createAgentResponse(produced, { finishReason: 'tool-calls', pendingApprovals: round.next!.approvals });
    first = resumed;
  }
  // A stored conversation may end with calls a killed run never answered: no request carries them open.
  // Settled messages (every call answered in place) need neither pass: most runs skip both.
  const repaired = isMarkedSettled(first) ? { messages: first, answered: 0 } : answerInterruptedCalls(pairResults(first), run.leaveOpen);
  if (repaired.answered > 0) {
    emit?.({
      type: 'warning',
      runId,
      code: 'interrupted-calls',
      message: `${repaired.answered} function call(s) of an earlier, interrupted run had no result; each is answered with an error result saying so.`,
    });
  }
  let pending = repaired.messages;
  let sent: Message[] = [];
  let conversationId = context.serviceSessionId;
  let usage: Usage | undefined;
  let finishReason: FinishReason | undefined;
  let serviceConversation: string | undefined;
  let pendingApprovals: PendingApproval[] | undefined;
  /** Whether the model answered at least once (a run that only answers approvals may not call it). */
  let answered = false;

  for (let roundtrip = 0; ; roundtrip++) {
    const options: ChatOptions = { ...base };
    if (conversationId !== undefined) options.conversationId = conversationId;
    if (roundtrip >= run.maxToolRoundtrips) options.toolChoice = 'none';
    // A service that keeps the conversation has seen everything up to its last response.
    const serviceKeeps = conversationId !== undefined && serviceConversation !== undefined;
    let messages = serviceKeeps || sent.length === 0 ? pending : [...sent, ...pending];
    if (run.compaction) {
      const report = (d: { code: string; message: string }) =>
        emit?.({ type: 'warning', runId, code: 'compaction-failed', message: `${d.code}: ${d.message}` });
      messages = await runCompaction(run.compaction, messages, { signal, report });
    }
    emit?.({
      type: 'model-call',
      runId,
      roundtrip,
      messages: messages.length,
      instructions: sentInstructions,
      tools: tools.length,
      content:
        instructions === undefined
          ? { messages, tools: toolDefinitions }
          : { messages, instructions, instructionSources, tools: toolDefinitions },
    });
    const started = emit ? performance.now() : 0;
    const response = run.stream
      ? await run.stream.pipe(client.getStreamingResponse(messages, options))
      : await abortable(client.getResponse(messages, options), signal);
    signal?.throwIfAborted(); // a client that ignored the signal must not complete an aborted run
    const calls = openCalls(response);
    emit?.({
      type: 'model-response',
      runId,
      roundtrip,
      durationMs: performance.now() - started,
      functionCalls: calls.length,
      ...(response.usage ? { usage: response.usage } : {}),
      ...(response.finishReason ? { finishReason: response.finishReason } : {}),
      content: { messages: response.messages },
    });

    answered = true;
    const answer = run.authorName === undefined ? response.messages : withAuthor(response.messages, run.authorName);
    produced.push(...answer);
    if (run.onModelCall) await run.onModelCall(produced);
    pending = [];
    usage = addUsage(usage, response.usage);
    finishReason = response.finishReason ?? finishReason;
    if (response.conversationId !== undefined) conversationId = serviceConversation = response.conversationId;
    if (calls.length === 0) break;
    // What was sent, compacted if it was, is the base of the next call: a summary is made once, not per call.
    sent = [...messages, ...answer];

    const limitReached = roundtrip >= run.maxToolRoundtrips;
    if (limitReached) {
      emit?.({
        type: 'warning',
        runId,
        code: 'tool-roundtrip-limit',
        message: `The model asked for tools after ${run.maxToolRoundtrips} roundtrips; the calls were answered with errors and the run ended.`,
      });
    } else if (calls.some((c) => !byName.get(c.name)?.execute && byName.has(c.name))) {
      // A declared tool without `execute` is the caller's to run: end here and hand the calls over.
      finishReason = 'tool-calls';
      break;
    }
    const outcomes = limitReached
      ? calls.map((c) => errorResult(c, `Not run: the limit of ${run.maxToolRoundtrips} tool roundtrips was reached.`))
      : await Promise.all(calls.map((call) => executeTool(call, byName.get(call.name), checks.get(call.name), run)));
    const results = outcomes.filter(isResult);
    const resultMessage = results.length ? await addResults(results, produced, run) : undefined;
    // Results are paid for: stored before the next model call, which may fail.
    if (resultMessage && run.onModelCall) await run.onModelCall(produced);
    pending = resultMessage ? [resultMessage] : [];
    if (results.length < outcomes.length) {
      // Some calls wait for approval: the model is sent nothing until every call of this response has a result.
      pendingApprovals = outcomes.filter((o): o is PendingApproval => !isResult(o));
      if (round) round.next = { approvals: pendingApprovals, messages: pending };
      finishReason = 'tool-calls';
      break;
    }
    if (limitReached) break;
  }
  if (context.serviceSessionId !== undefined && serviceConversation === undefined && answered) {
    emit?.({
      type: 'warning',
      runId,
      code: 'conversation-id-missing',
      message: `The session continues the service's conversation ${shortId(context.serviceSessionId)}, but the ${client.provider} client's response carried no conversation id; the session keeps the old id, so the service's copy of the conversation may not hold this turn.`,
    });
  }
  const extra: Parameters<typeof createAgentResponse>[1] = {};
  if (usage) extra.usage = usage;
  if (serviceConversation !== undefined) extra.conversationId = serviceConversation;
  if (finishReason) extra.finishReason = finishReason;
  if (pendingApprovals) extra.pendingApprovals = pendingApprovals;
  return createAgentResponse(produced, extra);
}

/** A tool as the model sees it, without its functions. */
function toolDefinitionOf(tool: Tool): ToolDefinition {
  const out: { -readonly [K in keyof ToolDefinition]: ToolDefinition[K] } = { name: tool.name, parameters: tool.parameters };
  if (tool.description !== undefined) out.description = tool.description;
  if (tool.metadata !== undefined) out.metadata = tool.metadata;
  return out;
}

/** `messages`, each without an `authorName` given `name`. */
function withAuthor(messages: readonly Message[], name: string): Message[] {
  return messages.map((m) => (m.authorName === undefined ? { ...m, authorName: name } : m));
}

/**
 * Answers the calls the session holds with this run's approvals: approved calls run, denied ones
 * get an error result with the reason, in one tool message the run produces. A call whose result
 * is already in `request` (stored by an earlier attempt of this resume) is not run again. Resolves
 * to the first request, with the results the model has not seen yet, when no call waits any more;
 * to undefined when some still wait (`round.next` says which; the model is not called).
 */
async function resumeApprovals(
  round: ApprovalRound,
  request: Message[],
  produced: Message[],
  byName: ReadonlyMap<string, Tool>,
  checks: ReadonlyMap<string, ToolArgumentsCheck>,
  run: ToolLoopRun,
): Promise<Message[] | undefined> {
  const held = round.pending!;
  const answered = new Set(request.flatMap((m) => m.contents.flatMap((c) => (c.type === 'function-result' ? [c.callId] : []))));
  const results = await Promise.all(
    held.approvals
      .filter((a) => round.answers.has(a.callId) && !answered.has(a.callId))
      .map((a) => {
        const call: FunctionCallContent = { type: 'function-call', callId: a.callId, name: a.toolName, arguments: a.arguments };
        const { approved, reason } = round.answers.get(a.callId)!;
        if (!approved) return errorResult(call, `Not run: the call was denied${reason ? `: ${reason}` : '.'}`);
        return executeTool(call, byName.get(a.toolName), checks.get(a.toolName), run, true) as Promise<FunctionResultContent>;
      }),
  );
  const resultMessage = results.length ? await addResults(results, produced, run) : undefined;
  if (resultMessage && run.onModelCall) await run.onModelCall(produced);
  const kept = resultMessage ? [...held.messages, resultMessage] : held.messages;
  const waiting = held.approvals.filter((a) => !round.answers.has(a.callId) && !answered.has(a.callId));
  if (waiting.length > 0) {
    round.next = { approvals: waiting, messages: kept };
    return undefined;
  }
  round.next = undefined;
  const ids = new Set(request.map((m) => m.id));
  const unseen = kept.filter((m) => !ids.has(m.id));
  if (unseen.length === 0) return request;
  // Results follow their calls (`pairResults` places them); when the service keeps the conversation
  // they open the request; when the calls are not in it (outside the history window), they are not sent.
  const calls = new Set(held.approvals.map((a) => a.callId));
  if (request.some((m) => m.contents.some((c) => c.type === 'function-call' && calls.has(c.callId)))) return [...request, ...unseen];
  return run.context.serviceSessionId !== undefined ? [...unseen, ...request] : request;
}

/** Adds one tool message with `results` to the run's messages (and the stream); returns it. */
async function addResults(results: FunctionResultContent[], produced: Message[], run: ToolLoopRun): Promise<Message> {
  const message = Message.tool(results);
  await run.stream?.push({ messageId: message.id, role: 'tool', contents: results });
  produced.push(message);
  return message;
}

function isResult(outcome: FunctionResultContent | PendingApproval): outcome is FunctionResultContent {
  return 'type' in outcome;
}

/** Function calls in a response that the response does not already answer (server-side tools do). */
function openCalls(response: ChatResponse): FunctionCallContent[] {
  const answered = new Set<string>();
  const calls: FunctionCallContent[] = [];
  for (const m of response.messages) {
    for (const c of m.contents) {
      if (c.type === 'function-call') calls.push(c);
      else if (c.type === 'function-result') answered.add(c.callId);
    }
  }
  return calls.filter((c) => !answered.has(c.callId));
}

/** A call's arguments parsed from JSON and checked (by the tool's `validate`, else the agent's validator), or what is wrong with them. */
async function parseArguments(
  call: FunctionCallContent,
  tool: Tool,
  check: ToolArgumentsCheck | undefined,
): Promise<{ args: unknown } | { problem: string; cause?: unknown }> {
  let args: unknown;
  try {
    args = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
  } catch (error) {
    return { problem: `The arguments for "${call.name}" are not valid JSON: ${(error as Error).message}`, cause: error };
  }
  const checked = tool.validate ? await tool.validate(args) : check ? await check(args) : undefined;
  if (!checked) return { args };
  if (!checked.success) return { problem: `Invalid arguments for "${call.name}": ${checked.issues.join('; ')}` };
  return { args: checked.value };
}

/** Whether a call with these checked arguments waits for approval; a check that ignores the signal does not hold up an aborted run. */
async function needsApproval(tool: Tool, args: unknown, options: ToolExecuteOptions, cancel: AbortSignal | undefined): Promise<boolean> {
  const rule = tool.needsApproval;
  if (typeof rule !== 'function') return rule === true;
  return Boolean(await abortable(new Promise<boolean>((resolve) => resolve(rule(args, options))), cancel));
}

function errorResult(call: FunctionCallContent, message: string): FunctionResultContent {
  return { type: 'function-result', callId: call.callId, name: call.name, result: { error: message }, isError: true };
}

/**
 * Handles one call: checks its arguments, asks the tool's `needsApproval` (unless `approved`), runs
 * `execute`. Resolves to the result (an error result when anything went wrong, which a tool event
 * reports) or, when the call needs approval, to the call as it waits (no tool event then).
 */
async function executeTool(
  call: FunctionCallContent,
  tool: Tool | undefined,
  check: ToolArgumentsCheck | undefined,
  run: ToolLoopRun,
  approved = false,
): Promise<FunctionResultContent | PendingApproval> {
  const { abort } = run;
  const options: ToolExecuteOptions = {
    callId: call.callId,
    signal: abort.signal,
    agent: run.agent,
    session: run.session,
    context: run.context,
  };
  // Asked before the tool events: a call that waits has not started.
  let parsed: Awaited<ReturnType<typeof parseArguments>> | undefined;
  let checkFailed: { error: unknown } | undefined;
  if (!approved && tool?.execute && tool.needsApproval) {
    parsed = await parseArguments(call, tool, check);
    try {
      if (!('problem' in parsed) && (await needsApproval(tool, parsed.args, options, abort.cancel)))
        return { callId: call.callId, toolName: call.name, arguments: call.arguments };
    } catch (error) {
      if (isAbortError(error, abort.cancel)) throw error;
      checkFailed = { error };
    }
  }
  run.emit?.({ type: 'tool-start', runId: run.runId, toolName: call.name, callId: call.callId, content: { arguments: call.arguments } });
  const started = performance.now();
  const fail = (message: string, cause?: unknown): FunctionResultContent => {
    const error = new ToolExecutionError(call.name, call.callId, message, cause === undefined ? undefined : { cause });
    run.emit?.({
      type: 'tool-end',
      runId: run.runId,
      toolName: call.name,
      callId: call.callId,
      durationMs: performance.now() - started,
      error,
    });
    return errorResult(call, message);
  };
  if (!tool?.execute)
    return fail(`Unknown tool "${call.name}". Available tools: ${run.context.tools.map((t) => t.name).join(', ') || 'none'}.`);
  parsed ??= await parseArguments(call, tool, check);
  if ('problem' in parsed) return fail(parsed.problem, parsed.cause);
  if (checkFailed)
    return fail(`Tool "${call.name}" was not run: its needsApproval check failed: ${describe(checkFailed.error)}`, checkFailed.error);
  const { args } = parsed;
  let value: unknown;
  try {
    // A tool that ignores the signal must not hold up an aborted run.
    const execute = tool.execute;
    value = await abortable(new Promise((resolve) => resolve(execute(args, options))), abort.cancel);
  } catch (error) {
    if (isAbortError(error, abort.cancel)) throw error;
    return fail(`Tool "${call.name}" failed: ${describe(error)}`, error);
  }
  const result = toJsonResult(value);
  if (result === undefined)
    return fail(
      `Tool "${call.name}" returned a value that is not JSON (${findNonJson(value) ?? '$'} is a ${typeof value === 'object' ? 'non-plain object' : typeof value}).`,
    );
  // Checked where it will sit in a message, so a result history can store never fails the run later.
  const tooDeep = jsonProblem(result, RESULT_DEPTH);
  if (tooDeep) return fail(`Tool "${call.name}" returned a value that cannot be stored: ${formatPath('$', tooDeep[0])} ${tooDeep[1]}.`);
  const tooLarge = run.maxMessageBytes === undefined ? undefined : toolResultTooLarge(call.name, result, run.maxMessageBytes);
  if (tooLarge) return fail(tooLarge);
  run.emit?.({
    type: 'tool-end',
    runId: run.runId,
    toolName: call.name,
    callId: call.callId,
    durationMs: performance.now() - started,
    content: { result },
  });
  return { type: 'function-result', callId: call.callId, name: call.name, result };
}

/** The JSON form of a tool's return value (`undefined` becomes `null`), or undefined when it has none. */
function toJsonResult(value: unknown): JsonValue | undefined {
  if (value === undefined) return null;
  if (typeof value === 'string') return value;
  try {
    const text = JSON.stringify(value);
    return text === undefined ? undefined : (JSON.parse(text) as JsonValue);
  } catch {
    return undefined;
  }
}
