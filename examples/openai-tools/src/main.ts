import { CtxError } from '@ctx/core';
import { OpenAIChatClient } from '@ctx/openai';
import { startOpenAITestServer } from '@ctx/openai-test-server';
import { runExample, scriptLocalModel } from './example.js';

// With OPENAI_API_KEY set: the real service (OPENAI_BASE_URL, OPENAI_MODEL optional).
// Without it: a local OpenAI-protocol server on 127.0.0.1, started here and scripted to use the tools.
const real = Boolean(process.env.OPENAI_API_KEY);
const server = real ? undefined : await startOpenAITestServer();
if (server) scriptLocalModel(server);
const client = new OpenAIChatClient({
  model: process.env.OPENAI_MODEL ?? 'gpt-4o-mini',
  ...(server ? { baseURL: server.url, apiKey: server.apiKey } : {}),
});
console.log(real ? `Using ${client.modelId} at ${client.client.baseURL}` : `Using the local OpenAI-protocol server at ${server!.url}`);
try {
  await runExample(client, (text) => process.stdout.write(text));
} catch (error) {
  if (!CtxError.isInstance(error)) throw error;
  console.error(`\n${error.name}: ${error.message}`);
  process.exitCode = 1;
} finally {
  await server?.close();
}
