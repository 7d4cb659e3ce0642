import { randomUUID } from 'node:crypto';
import { chooseModel, runDemo } from './demo.js';
import { startMemoryBackend } from './memory-backend.js';

const backend = await startMemoryBackend();
console.log(`Memory: ${backend.label}`);
console.log(process.env.OPENAI_API_KEY ? 'Model: OpenAI through @ctx/openai' : 'Model: offline (answers only from what it is sent)');
try {
  await runDemo({ backend, client: await chooseModel(), userId: `ada-${randomUUID()}`, print: (line) => console.log(line) });
} finally {
  await backend.close();
}
