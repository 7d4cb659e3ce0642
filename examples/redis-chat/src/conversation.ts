import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Print } from './agent.js';

/** The turns of the demo, each run by a process of its own. */
export const TURNS = ['Hi, I am Ada.', 'What is my name?'];

const root = fileURLToPath(new URL('..', import.meta.url));
const turnScript = fileURLToPath(new URL('./turn.ts', import.meta.url));

/** Runs each turn of `TURNS` in a new Node process against the same Redis and session; resolves to each process's output. */
export async function runConversation(options: { redisUrl: string; sessionId: string; print: Print }): Promise<string[]> {
  const outputs: string[] = [];
  for (const [index, input] of TURNS.entries()) {
    const output = await runProcess([turnScript, options.sessionId, input], { ...process.env, REDIS_URL: options.redisUrl });
    options.print(`--- process ${index + 1} ---`);
    for (const line of output.trimEnd().split('\n')) options.print(line);
    outputs.push(output);
  }
  return outputs;
}

function runProcess(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', ...args], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let errors = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (errors += chunk));
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolve(output) : reject(new Error(`turn process exited with ${code}:\n${errors || output}`)),
    );
  });
}
