// A hosted run in a process of its own, on Redis (sessions and history), for the turn-lease tests.
// It prints `model-called` when its model is called; the model answers once the parent writes `go`
// on stdin (or never: the parent kills the process). Then it prints `response <AgentResponse JSON>`.
// Runs the built packages.
// argv: <redis url> <key prefix> <session id> <user id> <message id> <message text> <leaseMs>
import { createInterface } from 'node:readline';
import { createAgent, Message } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { RedisHistoryProvider, RedisSessionStore } from '@ctx/redis';

const [url, prefix, sessionId, userId, messageId, text, leaseMs] = process.argv.slice(2);
const go = new Promise((resolve) => {
  createInterface({ input: process.stdin }).on('line', (line) => {
    if (line.trim() === 'go') resolve();
  });
});
const client = new ScriptedChatClient({
  replies: async (messages) => {
    process.stdout.write('model-called\n');
    await go;
    return `re: ${Message.text(messages.at(-1))}`;
  },
});
const sessionStore = new RedisSessionStore({ url, prefix });
const history = new RedisHistoryProvider({ url, prefix });
const agent = createAgent({ client, sessionStore, contextProviders: [history], runningTurns: { leaseMs: Number(leaseMs) } });
const response = await agent.run(Message.user(text, { id: messageId }), { sessionId, userId });
process.stdout.write(`response ${JSON.stringify(response)}\n`);
await Promise.all([sessionStore.close(), history.close()]);
process.exit(0);
