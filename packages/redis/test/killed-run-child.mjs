// A run that a test kills: persistence 'model-call' with the Redis history. The first tool answers;
// the second blocks until the parent sends SIGKILL. Runs the built package.
// argv: <redis url> <key prefix> <session id>
import { createAgent, defineTool, Message } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { RedisHistoryProvider } from '@ctx/redis';

const [url, prefix, sessionId] = process.argv.slice(2);
const client = new ScriptedChatClient({
  replies: [{ toolCalls: [{ name: 'lookup', callId: 'c1' }] }, { toolCalls: [{ name: 'pay', callId: 'c2' }] }, 'Paid.'],
});
const parameters = { type: 'object', properties: {} };
const lookup = defineTool({ name: 'lookup', description: 'Finds the bill.', parameters, execute: () => ({ amount: 42 }) });
const pay = defineTool({
  name: 'pay',
  description: 'Pays the bill.',
  parameters,
  execute: () => {
    process.stdout.write('tool-started\n');
    setInterval(() => {}, 1000); // blocks until killed
    return new Promise(() => {});
  },
});
const history = new RedisHistoryProvider({ url, prefix });
const agent = createAgent({ client, tools: [lookup, pay], contextProviders: [history], persistence: 'model-call' });
await agent.run(Message.user('Pay my bill.', { id: 'turn-1' }), { session: agent.getSessionById(sessionId) });
process.stdout.write('run-finished\n');
