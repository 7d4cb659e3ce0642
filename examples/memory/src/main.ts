import { randomUUID } from 'node:crypto';
import { chooseModels, runDemo } from './demo.js';

const models = await chooseModels();
console.log(`Models: ${models.label}`);
await runDemo({ ...models, userId: `ada-${randomUUID()}`, print: (line) => console.log(line) });
