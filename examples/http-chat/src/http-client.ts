import type { MessageView } from './chat-server.js';

/** One server-sent event of a streamed turn. */
export interface TurnEvent {
  event: 'text' | 'tool-call' | 'tool-result' | 'done' | 'error';
  data: Record<string, unknown>;
}

/** What a request answered: its status, and its JSON body or the events it streamed. */
export interface Answer {
  status: number;
  body: Record<string, unknown>;
  events: TurnEvent[];
}

/**
 * The chat server's API as a page calls it, for one user: every request carries the user's
 * `x-user-id` (the example's stand-in for a session cookie).
 */
export function chatApi(baseUrl: string, userId: string) {
  const request = async (method: string, path: string, body?: unknown): Promise<Answer> => {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { 'x-user-id': userId, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await response.text();
    if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
      const events = parseEvents(text);
      const last = events.at(-1);
      return { status: last?.event === 'error' ? Number(last.data.status) : response.status, body: last?.data ?? {}, events };
    }
    return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {}, events: [] };
  };
  return {
    /** A new conversation; resolves to its id. */
    async create(title?: string): Promise<string> {
      const { status, body } = await request('POST', '/conversations', title ? { title } : {});
      if (status !== 201) throw new Error(`create answered ${status}: ${JSON.stringify(body)}`);
      return body.id as string;
    },
    /** The user's conversations, newest first; `cursor` goes on from a page's `nextCursor`. */
    list: (cursor?: string) => request('GET', `/conversations${cursor === undefined ? '' : `?cursor=${encodeURIComponent(cursor)}`}`),
    /** A conversation's messages and waiting approvals. */
    get: (id: string) => request('GET', `/conversations/${id}`),
    /** Sends a message (its id made by the page) and reads the streamed turn. */
    send: (id: string, message: { id: string; text: string }) => request('POST', `/conversations/${id}/messages`, message),
    /** Sends a raw body, as a page with a bug or an attacker might. */
    sendRaw: (id: string, body: string) => request('POST', `/conversations/${id}/messages`, body),
    /** Answers waiting tool calls. */
    approve: (id: string, approvals: { callId: string; approved: boolean; reason?: string }[]) =>
      request('POST', `/conversations/${id}/approvals`, { approvals }),
    /** Deletes a conversation. */
    remove: (id: string) => request('DELETE', `/conversations/${id}`),
    /** Deletes everything of the user's. */
    removeMe: () => request('DELETE', '/me'),
  };
}

/** The messages of a `done` event or of a conversation. */
export function messagesOf(answer: Answer): MessageView[] {
  return (answer.body.messages as MessageView[] | undefined) ?? [];
}

function parseEvents(text: string): TurnEvent[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1] as TurnEvent['event'];
      const data = JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? '{}') as Record<string, unknown>;
      return { event, data };
    });
}
