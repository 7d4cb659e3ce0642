import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport, isToolUIPart, lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage } from 'ai';
import { type FormEvent, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';

/** The page's conversation: its id from the address, its messages as the server stored them. */
const chatId = location.pathname.split('/')[2]!;
const stored = (await (await fetch(`/api/chats/${chatId}`)).json()) as { messages: UIMessage[] };

function ChatPage({ id, initialMessages }: { id: string; initialMessages: UIMessage[] }) {
  const { messages, sendMessage, addToolApprovalResponse, status, error } = useChat({
    id,
    messages: initialMessages,
    // A reply still streaming when the page loads (a reload, a second tab) is resumed: GET /api/chats/:id/stream.
    resume: true,
    // ctx keeps the conversation: send only the new message (or the answered approvals).
    transport: new DefaultChatTransport({
      api: '/api/chats',
      prepareSendMessagesRequest: ({ id, messages }) => ({ api: `/api/chats/${id}`, body: { messages: messages.slice(-1) } }),
    }),
    // Once every waiting call is answered, the answers go to the server, which runs the calls.
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const [text, setText] = useState('');
  useEffect(() => {
    // What the browser test compares before and after a reload.
    (window as unknown as { chatMessages: UIMessage[] }).chatMessages = messages;
  }, [messages]);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!text.trim()) return;
    void sendMessage({ text });
    setText('');
  };

  return (
    <main>
      <ul>
        {messages.map((message) => (
          <li key={message.id} data-message-id={message.id} data-role={message.role}>
            {message.parts.map((part, i) => {
              if (part.type === 'text') return <p key={i}>{part.text}</p>;
              if (!isToolUIPart(part)) return null;
              const name = part.type.slice('tool-'.length);
              return (
                <div key={i} className="tool" data-tool-state={part.state}>
                  {name} {JSON.stringify(part.input)}: {part.state}
                  {part.state === 'approval-requested' && (
                    <>
                      {' '}
                      <button type="button" onClick={() => addToolApprovalResponse({ id: part.approval.id, approved: true })}>
                        Approve
                      </button>{' '}
                      <button
                        type="button"
                        onClick={() => addToolApprovalResponse({ id: part.approval.id, approved: false, reason: 'The user said no.' })}
                      >
                        Deny
                      </button>
                    </>
                  )}
                </div>
              );
            })}
          </li>
        ))}
      </ul>
      {error && <p role="alert">{refusalText(error)}</p>}
      <form onSubmit={submit}>
        <input aria-label="Message" value={text} onChange={(e) => setText(e.target.value)} placeholder="Ask about the weather, or book a table for 4" />
        <button type="submit" disabled={status !== 'ready' && status !== 'error'}>
          Send
        </button>
        {(status === 'submitted' || status === 'streaming') && (
          // The server stops the reply (on whichever instance runs it) and stores what was said; the stream then ends.
          <button type="button" onClick={() => void fetch(`/api/chats/${id}/stop`, { method: 'POST' })}>
            Stop
          </button>
        )}
      </form>
      <p data-testid="status">{status}</p>
    </main>
  );
}

/**
 * What the page shows for a failed request: a refusal's JSON body (`{ error: { message } }`, which
 * `useChat` hands over as `error.message`) says what to fix; a failed stream's `error` chunk is text.
 */
function refusalText(error: Error): string {
  try {
    const body = JSON.parse(error.message) as { error?: { message?: unknown } };
    if (typeof body.error?.message === 'string') return body.error.message;
  } catch {
    // not a JSON body: the stream's own error text
  }
  return error.message;
}

createRoot(document.getElementById('root')!).render(<ChatPage id={chatId} initialMessages={stored.messages} />);
