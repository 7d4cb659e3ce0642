import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigurationError, ProviderError } from '../errors.js';
import { InMemoryHistoryProvider } from '../history/in-memory-history-provider.js';
import { Message } from '../messages/message.js';
import { FileSessionStore } from '../session/file-session-store.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { defineTool } from '../tools/define-tool.js';
import type { RedactInfo, Redactor } from './agent.js';
import { createAgent } from './create-agent.js';
import { redactorFor } from './redact.js';

const EMAIL = /[\w.+-]+@[\w-]+(?:\.[\w-]+)+/g;

/** Masks e-mail addresses in texts and in tool results given as text. */
const maskEmails = (m: Message): Message => ({
  ...m,
  contents: m.contents.map((c) => {
    if (c.type === 'text') return { ...c, text: c.text.replace(EMAIL, '[email]') };
    if (c.type === 'function-result' && typeof c.result === 'string') return { ...c, result: c.result.replace(EMAIL, '[email]') };
    return c;
  }),
});

/** A redactor that masks e-mail addresses and records what it was told. */
function recordingRedactor() {
  const seen: Array<Omit<RedactInfo, 'signal'> & { count: number; signal: boolean }> = [];
  const redact: Redactor = (messages, info) => {
    seen.push({ sessionId: info.sessionId, sourceId: info.sourceId, count: messages.length, signal: info.signal instanceof AbortSignal });
    return messages.map(maskEmails);
  };
  return { redact, seen };
}

const texts = (messages: readonly unknown[] | undefined) => (messages ?? []).map((m) => Message.text(m as Message));

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** A FileSessionStore in a fresh folder, and a function reading every file in it as one text. */
async function fileStore() {
  const directory = await mkdtemp(join(tmpdir(), 'ctx-redact-'));
  dirs.push(directory);
  const store = new FileSessionStore({ directory });
  const written = async () => {
    const names = await readdir(directory);
    return (await Promise.all(names.map((n) => readFile(join(directory, n), 'utf8').catch(() => '')))).join('\n');
  };
  return { store, written };
}

describe('redactorFor', () => {
  it("returns the messages unchanged without a redact, and checks the redact's answer: one message per message, same ids, in order", async () => {
    const signal = new AbortController().signal;
    const [a, b] = [Message.user('a'), Message.user('b')];
    expect(await redactorFor(undefined, 's', 'memory', signal)([a, b])).toEqual([a, b]);

    let calls = 0;
    const counting: Redactor = (messages) => {
      calls++;
      return messages;
    };
    expect(await redactorFor(counting, 's', 'memory', signal)([])).toEqual([]);
    expect(calls).toBe(0); // nothing to write, nothing to ask

    const wrong: Array<[string, Redactor]> = [
      ['one message short', (messages) => messages.slice(1)],
      ['another id', (messages) => messages.map((m) => ({ ...m, id: `${m.id}-x` }))],
      ['another order', (messages) => [...messages].reverse()],
      ['not a list', () => 'redacted' as never],
    ];
    for (const [what, redact] of wrong) {
      const error = await redactorFor(redact, 's', 'memory', signal)([a, b]).catch((e: unknown) => e);
      expect(ConfigurationError.isInstance(error), what).toBe(true);
      expect(String(error), what).toMatch(/must return one message per message, with the same ids, in order/);
    }
  });
});

describe('AgentOptions.redact', () => {
  it('stores redacted messages (in-memory history, the session file) while the model and the caller see the originals; the next run loads them redacted', async () => {
    const { store, written } = await fileStore();
    const { redact, seen } = recordingRedactor();
    const client = new ScriptedChatClient({ replies: ['I will write to bob@example.com.', 'Sure.'] });
    const agent = createAgent({ client, redact, sessionStore: store });
    const session = agent.createSession({ sessionId: 's1' });

    const response = await agent.run('My email is alice@example.com', { session });
    expect(texts(client.calls[0]!.messages)).toEqual(['My email is alice@example.com']);
    expect(response.text).toBe('I will write to bob@example.com.');
    expect(texts(session.state.memory!.messages as unknown[])).toEqual(['My email is [email]', 'I will write to [email].']);
    expect(seen).toEqual([{ sessionId: 's1', sourceId: 'memory', count: 2, signal: true }]);

    await agent.saveSession(session);
    const file = await written();
    expect(file).toContain('My email is [email]');
    expect(file).not.toMatch(EMAIL);

    await agent.run('Thanks', { session: (await agent.getSession('s1'))! });
    expect(texts(client.calls[1]!.messages)).toEqual(['My email is [email]', 'I will write to [email].', 'Thanks']);
  });

  it("with persistence 'model-call', every write (and the session file saved after it) is redacted, while the tool loop's next model call still sees the originals", async () => {
    const { store, written } = await fileStore();
    const { redact } = recordingRedactor();
    let fileDuringTool = '';
    const lookup = defineTool({
      name: 'lookup',
      parameters: { type: 'object' },
      execute: async () => {
        fileDuringTool = await written();
        return 'carol@example.com is the owner';
      },
    });
    const client = new ScriptedChatClient({ replies: [{ toolCalls: [{ name: 'lookup', callId: 'c1' }] }, 'Done.'] });
    const agent = createAgent({ client, redact, sessionStore: store, persistence: 'model-call', tools: [lookup] });
    const session = agent.createSession({ sessionId: 's2' });
    await agent.saveSession(session);

    await agent.run('Find the owner; I am alice@example.com', { session });
    expect(fileDuringTool).toContain('I am [email]');
    expect(fileDuringTool).not.toMatch(EMAIL);
    const second = client.calls[1]!.messages;
    expect(Message.text(second[0]!)).toBe('Find the owner; I am alice@example.com');
    expect(JSON.stringify(second)).toContain('carol@example.com is the owner');

    await agent.saveSession(session);
    expect(await written()).not.toMatch(EMAIL);
  });

  it("fails the write as the provider's failure when the redactor breaks the contract: a ProviderError, nothing stored", async () => {
    for (const redact of [() => [], (messages: readonly Message[]) => messages.map((m) => ({ ...m, id: 'other' }))] as Redactor[]) {
      const agent = createAgent({ client: new ScriptedChatClient({ replies: ['ok'] }), redact });
      const session = agent.createSession();
      const error = await agent.run('alice@example.com', { session }).catch((e: unknown) => e);
      expect(ProviderError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ sourceId: 'memory', phase: 'afterRun' });
      expect(ConfigurationError.isInstance((error as ProviderError).cause)).toBe(true);
      expect(session.state.memory?.messages ?? []).toEqual([]);
    }
  });

  it('tells the redactor which provider writes, so an audit log can keep what the chat history masks', async () => {
    const redact: Redactor = (messages, { sourceId }) => (sourceId === 'audit' ? messages : messages.map(maskEmails));
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: ['ok'] }),
      redact,
      contextProviders: [
        new InMemoryHistoryProvider({ sourceId: 'chat' }),
        new InMemoryHistoryProvider({ sourceId: 'audit', loadMessages: false }),
      ],
    });
    const session = agent.createSession();
    await agent.run('alice@example.com', { session });
    expect(texts(session.state.chat!.messages as unknown[])).toEqual(['[email]', 'ok']);
    expect(texts(session.state.audit!.messages as unknown[])).toEqual(['alice@example.com', 'ok']);
  });
});

describe('a retried run with redaction', () => {
  /** A history kept by a backend of its own (the base loader), appending what it is given. */
  class ListHistory extends InMemoryHistoryProvider {
    readonly stored: Message[] = [];
    override async getMessages(): Promise<Message[]> {
      return [...this.stored];
    }
    override async saveMessages(_: string, messages: readonly Message[]): Promise<void> {
      this.stored.push(...messages);
    }
  }

  it('is not sent its own earlier attempt: the stored, redacted input still counts as the same message', async () => {
    for (const history of [new InMemoryHistoryProvider(), new ListHistory({ sourceId: 'list' })]) {
      const client = new ScriptedChatClient({ replies: ['first reply', 'second reply'] });
      const agent = createAgent({ client, contextProviders: [history], redact: (messages) => messages.map(maskEmails) });
      const session = agent.createSession();
      const input = Message.user('write to ann@example.com');
      await agent.run(input, { session });
      await agent.run(input, { session });
      expect(client.calls[1]!.messages.map((m) => Message.text(m))).toEqual(['write to ann@example.com']);
    }
  });
});
