import { InvalidInputError, Message, type Content, type PendingApproval, type ToolApproval } from '@ctx/core';

/** Options of `runInputFromUIMessages`. */
export interface RunInputFromUIMessagesOptions {
  /**
   * The calls the session holds for approval (`session.pending?.approvals`). Needed for pages on
   * `ai` 5 (`approvals: 'input-available'`), whose answer is a tool result `{ approved, reason? }`:
   * only a result for one of these calls is read as an answer. Answers in the `ai` 6 form
   * (`approval-responded`) are read without it.
   */
  pendingApprovals?: readonly PendingApproval[];
  /** The largest number of UI messages read (a page sends its whole conversation). Default 10000. */
  maxMessages?: number;
}

/** What a `useChat` request asks ctx to run: `agent.runStream(input, { session, approvals })`. */
export interface RunInputFromUIMessages {
  /** The new user message, with the id the page gave it (stored under that id), or `[]` when the request only answers approvals. */
  input: Message[];
  /** The page's answers to calls waiting for approval (empty when it sent a new message). */
  approvals: ToolApproval[];
}

/**
 * Reads what a `useChat` request (`body.messages`, the page's whole conversation) asks for: its last
 * message. A user message is the run's input, with its id kept, so the stored message and the
 * page's have one id (a retry of the same message is stored once). An assistant message is the
 * page answering approvals: each of its tool parts in `approval-responded`
 * (`addToolApprovalResponse`, `ai` 6 and later) becomes `{ callId, approved, reason? }`, and, with
 * `pendingApprovals`, each waiting call the page answered with a tool result `{ approved, reason? }`
 * (`addToolResult`, `ai` 5). The history is ctx's own: earlier messages the page sends are not read.
 * @throws InvalidInputError when `messages` is not an array of UI messages, the last one has no id,
 *   no parts, or is neither a user message nor an assistant message answering an approval.
 */
export function runInputFromUIMessages(messages: unknown, options: RunInputFromUIMessagesOptions = {}): RunInputFromUIMessages {
  const { maxMessages = 10_000 } = options;
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new InvalidInputError('messages must be a non-empty array of UI messages (the body of a useChat request).');
  }
  if (messages.length > maxMessages) {
    throw new InvalidInputError(`messages holds ${messages.length} UI messages; at most ${maxMessages} are read (maxMessages).`, {
      limit: 'maxMessages',
    });
  }
  const index = messages.length - 1;
  const last: unknown = messages[index];
  const path = `messages[${index}]`;
  if (!isObject(last)) throw new InvalidInputError(`${path} must be a UI message object.`);
  const { id, role, parts } = last;
  if (typeof id !== 'string' || id === '') throw new InvalidInputError(`${path}.id must be a non-empty string.`);
  if (!Array.isArray(parts)) throw new InvalidInputError(`${path}.parts must be an array (UI message ${JSON.stringify(id)}).`);
  if (role === 'user') return { input: [userMessage(id, parts, path)], approvals: [] };
  if (role === 'assistant') {
    const approvals = answers(parts, options.pendingApprovals, path);
    if (approvals.length > 0) return { input: [], approvals };
    throw new InvalidInputError(
      `${path} (UI message ${JSON.stringify(id)}) is an assistant message that answers no approval; send a user message, or answer a waiting call.`,
    );
  }
  throw new InvalidInputError(`${path}.role must be "user" or "assistant", got ${JSON.stringify(role)}.`);
}

function userMessage(id: string, parts: unknown[], path: string): Message {
  const contents: Content[] = [];
  parts.forEach((part, i) => {
    if (!isObject(part)) throw new InvalidInputError(`${path}.parts[${i}] must be an object.`);
    if (part.type === 'text') {
      if (typeof part.text !== 'string') throw new InvalidInputError(`${path}.parts[${i}].text must be a string.`);
      contents.push({ type: 'text', text: part.text });
    } else if (part.type === 'file') {
      const { url, mediaType, filename } = part;
      if (typeof url !== 'string' || typeof mediaType !== 'string') {
        throw new InvalidInputError(`${path}.parts[${i}] is a file part without a string url and mediaType.`);
      }
      const data = /^data:[^;,]*;base64,(.*)$/s.exec(url);
      contents.push({
        type: 'data',
        mediaType,
        ...(data ? { data: data[1]! } : { uri: url }),
        ...(typeof filename === 'string' ? { name: filename } : {}),
      });
    }
    // Other parts (step markers, data parts the page added) are the page's own.
  });
  if (contents.length === 0) throw new InvalidInputError(`${path} (UI message ${JSON.stringify(id)}) has no text or file part.`);
  return { ...Message.user('', { id }), contents };
}

function answers(parts: unknown[], pending: readonly PendingApproval[] | undefined, path: string): ToolApproval[] {
  const waiting = new Set(pending?.map((p) => p.callId));
  const out: ToolApproval[] = [];
  parts.forEach((part, i) => {
    if (!isObject(part) || typeof part.type !== 'string' || !(part.type.startsWith('tool-') || part.type === 'dynamic-tool')) return;
    const callId = part.toolCallId;
    if (typeof callId !== 'string') throw new InvalidInputError(`${path}.parts[${i}].toolCallId must be a string.`);
    if (part.state === 'approval-responded') {
      const approval = part.approval;
      if (!isObject(approval) || typeof approval.approved !== 'boolean') {
        throw new InvalidInputError(
          `${path}.parts[${i}] (call ${JSON.stringify(callId)}) is approval-responded without approval.approved.`,
        );
      }
      out.push(answer(callId, approval.approved, approval.reason));
    } else if (part.state === 'output-available' && waiting.has(callId)) {
      const output = part.output;
      if (!isObject(output) || typeof output.approved !== 'boolean') {
        throw new InvalidInputError(
          `${path}.parts[${i}] answers call ${JSON.stringify(callId)}, which waits for approval, with an output that is not { approved: boolean, reason?: string }.`,
        );
      }
      out.push(answer(callId, output.approved, output.reason));
    }
  });
  return out;
}

function answer(callId: string, approved: boolean, reason: unknown): ToolApproval {
  return typeof reason === 'string' && reason !== '' ? { callId, approved, reason } : { callId, approved };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
