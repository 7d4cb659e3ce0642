import type { Message, PendingApproval, ToolDefinition } from '@ctx/core';
import {
  dataUrl,
  deniedReason,
  errorTextOf,
  parseInput,
  type UIApprovalMode,
  type UIMessage,
  type UIMessagePart,
  type UIToolPart,
  type UIToolState,
} from './ui-message.js';

/** A tool part while its call's result is looked for. */
interface ToolPartDraft {
  type: `tool-${string}`;
  toolCallId: string;
  state: UIToolState;
  input: unknown;
  output?: unknown;
  errorText?: string;
  approval?: { id: string; approved?: boolean; reason?: string };
}

/** Options of `uiMessagesFromHistory`. */
export interface UIMessagesFromHistoryOptions {
  /**
   * The calls waiting for approval: `session.pending?.approvals`. Their parts show as waiting
   * (`approval-requested`, or `input-available` with `approvals: 'input-available'`). Default: none.
   */
  pendingApprovals?: readonly PendingApproval[];
  /** How a call waiting for approval is shown; the same as `toUIMessageStream`'s. Default `'request'`. */
  approvals?: UIApprovalMode;
  /**
   * The agent's tools. A call to one whose `needsApproval` is `true` was approved when it has a
   * result, so its part carries `approval: { id, approved: true }`, as on the page that approved it
   * (a denied call is known from its result, with or without this). A tool whose `needsApproval` is
   * a per-call check cannot be decided from history: its parts carry no approval.
   */
  tools?: readonly (Pick<ToolDefinition, 'name'> & { needsApproval?: unknown })[];
  /** Metadata of each UI message, from the stored messages it is made of (the turn's, for an assistant message). Default: none. */
  messageMetadata?: (messages: readonly Message[]) => unknown;
}

/**
 * A stored conversation (`agent.getHistory(session)`) as the AI SDK's `UIMessage[]`, the initial
 * messages of `useChat`: each user message as one UI message with its id; the assistant and tool
 * messages that follow it as one assistant UI message with the id of the first (a step per
 * assistant message, each call's result merged into its tool part); calls still waiting for
 * approval as such (`pendingApprovals`). The same ids and parts `toUIMessageStream` gave the page
 * while the turn streamed. System messages, reasoning and the service's own tools are left out.
 */
export function uiMessagesFromHistory(messages: readonly Message[], options: UIMessagesFromHistoryOptions = {}): UIMessage[] {
  const mode = options.approvals ?? 'request';
  const pending = new Set(options.pendingApprovals?.map((p) => p.callId));
  const approved = new Set(options.tools?.filter((t) => t.needsApproval === true).map((t) => t.name));
  const out: UIMessage[] = [];
  let turn: { message: UIMessage; stored: Message[]; tools: Map<string, ToolPartDraft> } | undefined;
  const close = () => {
    if (turn && options.messageMetadata) setMetadata(turn.message, options.messageMetadata(turn.stored));
    turn = undefined;
  };

  for (const message of messages) {
    if (message.role === 'system') continue;
    if (message.role === 'user') {
      close();
      const ui: UIMessage = { id: message.id, role: 'user', parts: userParts(message) };
      if (options.messageMetadata) setMetadata(ui, options.messageMetadata([message]));
      out.push(ui);
      continue;
    }
    if (!turn) {
      turn = { message: { id: message.id, role: 'assistant', parts: [] }, stored: [], tools: new Map() };
      out.push(turn.message);
    }
    turn.stored.push(message);
    const { parts } = turn.message;
    if (message.role === 'assistant') parts.push({ type: 'step-start' });
    for (const c of message.contents) {
      if ((c.type === 'text' && c.text !== '') || (c.type === 'refusal' && c.refusal !== '')) {
        const text = c.type === 'text' ? c.text : c.refusal;
        parts.push({ type: 'text', text, state: 'done' });
      } else if (c.type === 'data' && message.role === 'assistant') {
        parts.push({ type: 'file', mediaType: c.mediaType, url: dataUrl(c) });
      } else if (c.type === 'function-call') {
        const part: ToolPartDraft = {
          type: `tool-${c.name}`,
          toolCallId: c.callId,
          state: 'input-available',
          input: parseInput(c.arguments),
        };
        if (pending.has(c.callId) && mode === 'request') {
          part.state = 'approval-requested';
          part.approval = { id: c.callId };
        }
        turn.tools.set(c.callId, part);
        parts.push(part as UIToolPart); // set to its final state below, when its result comes
      } else if (c.type === 'function-result') {
        const part = turn.tools.get(c.callId);
        if (!part) continue; // its call is outside the history loaded: nothing to attach it to
        const denied = c.isError ? deniedReason(c.result) : undefined;
        if (denied && mode === 'request') {
          part.state = 'output-denied';
          part.approval = { id: c.callId, approved: false, ...denied };
        } else if (c.isError) {
          part.state = 'output-error';
          part.errorText = errorTextOf(c.result);
          if (approved.has(part.type.slice(5)) && mode === 'request' && !denied) part.approval = { id: c.callId, approved: true };
        } else {
          part.state = 'output-available';
          part.output = c.result;
          if (approved.has(part.type.slice(5)) && mode === 'request') part.approval = { id: c.callId, approved: true };
        }
      }
    }
  }
  close();
  return out;
}

function userParts(message: Message): UIMessagePart[] {
  const parts: UIMessagePart[] = [];
  for (const c of message.contents) {
    if (c.type === 'text' && c.text !== '') parts.push({ type: 'text', text: c.text });
    else if (c.type === 'data')
      parts.push({ type: 'file', mediaType: c.mediaType, url: dataUrl(c), ...(c.name ? { filename: c.name } : {}) });
  }
  return parts;
}

function setMetadata(message: UIMessage, metadata: unknown): void {
  if (metadata !== undefined) message.metadata = metadata;
}
