// One turn in its own process: `tsx src/turn.ts <sessionId> <input>` with REDIS_URL set.
import { chooseModel, runTurn } from './agent.js';

const [sessionId, input] = process.argv.slice(2);
const redisUrl = process.env.REDIS_URL;
if (!sessionId || !input || !redisUrl) {
  console.error('Usage: REDIS_URL=redis://... tsx src/turn.ts <sessionId> <input>');
  process.exit(2);
}
await runTurn({ redisUrl, sessionId, input, client: await chooseModel(), print: (line) => console.log(line) });
