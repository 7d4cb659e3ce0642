/**
 * The parts of the AI SDK's UI message types that ctx writes, declared here so the package needs no
 * runtime dependency on `ai`. They are the shapes `ai` 5, 6 and 7 define (`UIMessage`,
 * `UIMessageChunk`); the approval members exist from `ai` 6 on.
 */

/** What every tool part holds, whatever its state. */
interface UIToolPartBase {
  /** `tool-` and the tool's name. */
  type: `tool-${string}`;
  /** The ctx `callId`. */
  toolCallId: string;
  /** The arguments, parsed from the model's JSON (the text itself when it is not JSON). */
  input: unknown;
}

/**
 * A tool call and its result, as one part (`tool-<name>`), by state, as the AI SDK's `ToolUIPart`
 * (`ai` 6 and 7): `output` with `output-available`, `errorText` with `output-error`, `approval`
 * (its `id` the call's `callId`) from `approval-requested` on, for a call that needed approval.
 */
export type UIToolPart = UIToolPartBase &
  (
    | { state: 'input-streaming' | 'input-available'; output?: undefined; errorText?: undefined; approval?: undefined }
    | {
        state: 'approval-requested';
        approval: { id: string; approved?: undefined; reason?: undefined };
        output?: undefined;
        errorText?: undefined;
      }
    | {
        state: 'approval-responded';
        approval: { id: string; approved: boolean; reason?: string };
        output?: undefined;
        errorText?: undefined;
      }
    | { state: 'output-available'; output: unknown; errorText?: undefined; approval?: { id: string; approved: true; reason?: string } }
    | { state: 'output-error'; errorText: string; output?: undefined; approval?: { id: string; approved: true; reason?: string } }
    | { state: 'output-denied'; approval: { id: string; approved: false; reason?: string }; output?: undefined; errorText?: undefined }
  );

/** The state names of a tool part. */
export type UIToolState = UIToolPart['state'];

/** A part of a UI message. */
export type UIMessagePart =
  | {
      /** Text. */
      type: 'text';
      /** The text. */
      text: string;
      /** `done` once complete. */
      state?: 'streaming' | 'done';
    }
  | {
      /** A file: an image or document. */
      type: 'file';
      /** The IANA media type. */
      mediaType: string;
      /** A `data:` or `https:` URL. */
      url: string;
      /** Its name, when known. */
      filename?: string;
    }
  | {
      /** Where a model call (a step) begins. */
      type: 'step-start';
    }
  | UIToolPart;

/** A message as the AI SDK's `useChat` holds it: one user message, or one assistant turn with all its steps. */
export interface UIMessage {
  /** The id ctx stores: the user message's, or the turn's first assistant message's. */
  id: string;
  /** `user` or `assistant` (ctx does not show system messages). */
  role: 'user' | 'assistant' | 'system';
  /** Message metadata, when `messageMetadata` gave some. */
  metadata?: unknown;
  /** The parts, in order. */
  parts: UIMessagePart[];
}

/** A chunk of the AI SDK's UI message stream protocol (the kinds ctx sends). */
export type UIMessageChunk =
  | { type: 'start'; messageId?: string; messageMetadata?: unknown }
  | { type: 'start-step' }
  | { type: 'finish-step' }
  | { type: 'text-start'; id: string }
  | { type: 'text-delta'; id: string; delta: string }
  | { type: 'text-end'; id: string }
  | { type: 'file'; url: string; mediaType: string }
  | { type: 'tool-input-start'; toolCallId: string; toolName: string }
  | { type: 'tool-input-delta'; toolCallId: string; inputTextDelta: string }
  | { type: 'tool-input-available'; toolCallId: string; toolName: string; input: unknown }
  | { type: 'tool-approval-request'; approvalId: string; toolCallId: string }
  | { type: 'tool-output-available'; toolCallId: string; output: unknown }
  | { type: 'tool-output-error'; toolCallId: string; errorText: string }
  | { type: 'tool-output-denied'; toolCallId: string }
  | { type: 'error'; errorText: string }
  | { type: 'finish'; finishReason?: 'stop' | 'length' | 'content-filter' | 'tool-calls' | 'error' | 'other'; messageMetadata?: unknown };

/**
 * How a call waiting for approval is shown. `'request'` (default; `ai` 6 and later): a
 * `tool-approval-request` chunk puts the part in `approval-requested`, with `approval.id` the call's
 * id; the page answers with `addToolApprovalResponse({ id, approved, reason? })`. `'input-available'`
 * (`ai` 5, which has no approval chunk and refuses one): the part stays in `input-available`, as a
 * call the page must answer; the page answers with `addToolResult({ tool, toolCallId, output: {
 * approved, reason? } })`.
 */
export type UIApprovalMode = 'request' | 'input-available';

/** The text core gives a denied call's error result; the UI shows such a call as denied. */
const DENIED = /^Not run: the call was denied(?:: ([\s\S]*)|\.)$/;

/** Whether an error result is a denial, and its reason. */
export function deniedReason(result: unknown): { reason?: string } | undefined {
  const match = DENIED.exec(errorTextOf(result));
  if (!match) return undefined;
  return match[1] === undefined ? {} : { reason: match[1] };
}

/** A call's arguments as the page shows them: parsed JSON, `{}` for none, the text itself when it is not JSON. */
export function parseInput(args: string): unknown {
  if (args.trim() === '') return {};
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}

/** A tool result's failure as text: ctx's `{ error: text }`, a string as is, anything else as JSON. */
export function errorTextOf(result: unknown): string {
  if (typeof result === 'string') return result;
  if (typeof result === 'object' && result !== null && !Array.isArray(result)) {
    const { error } = result as { error?: unknown };
    if (typeof error === 'string' && Object.keys(result).length === 1) return error;
  }
  return JSON.stringify(result);
}

/** A data content's URL. */
export function dataUrl(content: { mediaType: string; uri?: string; data?: string }): string {
  return content.uri ?? `data:${content.mediaType};base64,${content.data ?? ''}`;
}
