import { Message } from '../messages/message.js';
import type { FunctionResultContent } from '../contracts/message.js';

/** The result an interrupted call gets: the model learns the call may or may not have taken effect. */
export const INTERRUPTED_RESULT = 'The run was interrupted before this call returned; it may or may not have taken effect.';

/**
 * `messages` with every function call that has no result anywhere in the list answered by an error
 * result (`INTERRUPTED_RESULT`), in one tool message placed right after the message holding the
 * calls. The message is derived from the calls alone (id `<message id>~interrupted`, no timestamp),
 * so every request repairs a stored conversation the same way and the prompt prefix stays stable.
 * Calls in `leaveOpen` (pending approvals the session holds on purpose) are left as they are.
 * Returns `messages` itself when nothing was open, and how many calls were answered.
 */
export function answerInterruptedCalls(messages: Message[], leaveOpen?: ReadonlySet<string>): { messages: Message[]; answered: number } {
  // One pass without allocations first: every run goes through here with the whole history.
  const answered = new Set<string>();
  let calls = false;
  // Indexed loops: iterating frozen arrays (stored history) with for...of takes V8's slow path.
  for (let i = 0; i < messages.length; i++) {
    const contents = messages[i]!.contents;
    for (let j = 0; j < contents.length; j++) {
      const c = contents[j]!;
      if (c.type === 'function-result') answered.add(c.callId);
      else if (c.type === 'function-call') calls = true;
    }
  }
  if (!calls) return { messages, answered: 0 };
  let out: Message[] | undefined;
  let count = 0;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    out?.push(m);
    let open: FunctionResultContent[] | undefined;
    for (let j = 0; j < m.contents.length; j++) {
      const c = m.contents[j]!;
      if (c.type !== 'function-call' || answered.has(c.callId) || leaveOpen?.has(c.callId)) continue;
      (open ??= []).push({ type: 'function-result', callId: c.callId, name: c.name, result: { error: INTERRUPTED_RESULT }, isError: true });
    }
    if (!open) continue;
    out ??= messages.slice(0, i + 1);
    const source = Message.source(m);
    out.push({ id: `${m.id}~interrupted`, role: 'tool', contents: open, ...(source ? { metadata: { ctx: { ...source } } } : {}) });
    count += open.length;
  }
  return { messages: out ?? messages, answered: count };
}
