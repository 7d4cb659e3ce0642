import { CtxError } from '@ctx/core';
import { createScriptedModel, knowledgeBaseTarget, runKnowledgeBase } from './knowledge-base.js';

const target = await knowledgeBaseTarget();
let client = createScriptedModel();
if (process.env.OPENAI_API_KEY) {
  const { OpenAIChatClient } = await import('@ctx/openai');
  const model = process.env.OPENAI_MODEL ?? 'gpt-4o-mini';
  client = new OpenAIChatClient({ model });
  console.log(`Using ${model} through @ctx/openai.`);
}
console.log(
  target.local
    ? 'Using the local Azure AI Search server on 127.0.0.1.'
    : `Using the knowledge base ${target.knowledgeBaseName} at ${target.endpoint}.`,
);
try {
  await runKnowledgeBase({ client, target, print: (line) => console.log(line) });
} catch (error) {
  if (!CtxError.isInstance(error)) throw error;
  console.error(`\n${error.name}: ${error.message}`);
  process.exitCode = 1;
} finally {
  await target.close();
}
