import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { startCosmosStandIn } from '@ctx/cosmos-stand-in';
import { chooseClient, type CosmosTarget, createHostedAgent, runTurns } from './agent.js';

/** What a demo run did, for the smoke test. */
export interface DemoResult {
  sessionId: string;
  /** Every line printed, by both processes. */
  lines: string[];
  /** The stored conversation at the end, oldest first (role: text). */
  stored: string[];
}

/**
 * Starts a conversation in this process, continues it in a second Node process that knows only the
 * session id, then reads the stored history. Uses Cosmos DB at `COSMOS_ENDPOINT` / `COSMOS_KEY`, or
 * else starts the local stand-in on 127.0.0.1 for the length of the demo.
 */
export async function runDemo(print: (line: string) => void = console.log, env: NodeJS.ProcessEnv = process.env): Promise<DemoResult> {
  const lines: string[] = [];
  const say = (line: string) => {
    lines.push(line);
    print(line);
  };
  const standIn = env.COSMOS_ENDPOINT && env.COSMOS_KEY ? undefined : await startCosmosStandIn();
  const target: CosmosTarget = standIn
    ? { endpoint: standIn.endpoint, key: standIn.key, local: true }
    : { endpoint: env.COSMOS_ENDPOINT!, key: env.COSMOS_KEY!, local: false };
  say(standIn ? `Cosmos DB stand-in on ${standIn.endpoint}` : `Cosmos DB at ${new URL(target.endpoint).host}`);
  const sessionId = `demo-${randomUUID()}`;
  const hosted = createHostedAgent(target, await chooseClient(env), (line) => say(`[process ${process.pid}] ${line}`));
  try {
    await runTurns(hosted, sessionId, ['Hi! My name is Ada.', 'Remind me to water the plants.'], (line) =>
      say(`[process ${process.pid}] ${line}`),
    );
    say(`-- session ${sessionId} saved; a second process takes over --`);
    await runChild(target, sessionId, env, say);
    const page = await hosted.history.listMessages(sessionId, { limit: 100 });
    const stored = page.messages.map((m) => `${m.role}: ${m.contents.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('')}`);
    say(`-- Cosmos DB now holds ${stored.length} messages of session ${sessionId} --`);
    return { sessionId, lines, stored };
  } finally {
    hosted.close();
    await standIn?.stop();
  }
}

/** Runs `continue.ts` in a new Node process (through tsx) and relays its output. */
function runChild(target: CosmosTarget, sessionId: string, env: NodeJS.ProcessEnv, say: (line: string) => void): Promise<void> {
  const script = fileURLToPath(new URL('./continue.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    env: {
      ...env,
      COSMOS_EXAMPLE_ENDPOINT: target.endpoint,
      COSMOS_EXAMPLE_KEY: target.key,
      COSMOS_EXAMPLE_LOCAL: target.local ? '1' : '0',
      COSMOS_EXAMPLE_SESSION: sessionId,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let buffered = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    const done = buffered.split('\n');
    buffered = done.pop()!;
    for (const line of done) say(line);
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      if (buffered) say(buffered);
      code === 0 ? resolve() : reject(new Error(`the second process exited with code ${code}`));
    });
  });
}
