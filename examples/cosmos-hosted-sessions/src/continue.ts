// The second process: restores the session from Cosmos DB by its id alone and goes on.
import { chooseClient, createHostedAgent, runTurns } from './agent.js';

const { COSMOS_EXAMPLE_ENDPOINT, COSMOS_EXAMPLE_KEY, COSMOS_EXAMPLE_LOCAL, COSMOS_EXAMPLE_SESSION } = process.env;
if (!COSMOS_EXAMPLE_ENDPOINT || !COSMOS_EXAMPLE_KEY || !COSMOS_EXAMPLE_SESSION) {
  console.error('continue.ts is started by main.ts (it needs COSMOS_EXAMPLE_ENDPOINT, COSMOS_EXAMPLE_KEY, COSMOS_EXAMPLE_SESSION).');
  process.exit(2);
}
const print = (line: string) => console.log(`[process ${process.pid}] ${line}`);
const hosted = createHostedAgent(
  { endpoint: COSMOS_EXAMPLE_ENDPOINT, key: COSMOS_EXAMPLE_KEY, local: COSMOS_EXAMPLE_LOCAL === '1' },
  await chooseClient(),
  print,
);
try {
  await runTurns(hosted, COSMOS_EXAMPLE_SESSION, ['What did I ask you first?', 'Thanks, that is all.'], print);
} finally {
  hosted.close();
}
