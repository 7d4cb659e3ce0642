// A run that a test kills: persistence 'model-call', the in-memory history inside a FileSessionStore.
// The first tool answers; the second blocks until the parent sends SIGKILL. Runs the built package.
// argv: <store dir> <session id>
import { createAgent, defineTool, FileSessionStore, Message } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';

const [dir, sessionId] = process.argv.slice(2);
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
const agent = createAgent({
  client,
  tools: [lookup, pay],
  sessionStore: new FileSessionStore({ directory: dir }),
  persistence: 'model-call',
});
const session = (await agent.getSession(sessionId)) ?? agent.createSession({ sessionId });
await agent.run(Message.user('Pay my bill.', { id: 'turn-1' }), { session });
process.stdout.write('run-finished\n');
