import { relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CtxError, SessionStateError } from '@ctx/core';
import { chooseClient } from './agent.js';
import { runDemo } from './demo.js';

const HELP = `Usage: pnpm --filter @example/quickstart start [-- --reset]

Runs a few scripted turns of a conversation that is kept in a FileSessionStore, so every run
continues the last one.

  --reset   delete the stored session and start over
  --help    show this text

Environment:
  CTX_DEMO_DIR                     where sessions are kept (default: examples/quickstart/.ctx-demo)
  OPENAI_API_KEY / OPENAI_BASE_URL use a real model through @ctx/openai (OPENAI_MODEL, default gpt-4o-mini)`;

const args = process.argv.slice(2).filter((a) => a !== '--');
const unknown = args.filter((a) => !['--reset', '--help', '-h'].includes(a));
if (args.includes('--help') || args.includes('-h') || unknown.length) {
  if (unknown.length) console.error(`Unknown option ${unknown.join(' ')}\n`);
  console.log(HELP);
  process.exit(unknown.length ? 2 : 0);
}

const directory = resolve(process.env.CTX_DEMO_DIR ?? fileURLToPath(new URL('../.ctx-demo', import.meta.url)));
const label = relative(process.cwd(), directory);
const { client, note } = await chooseClient();
if (note) console.log(note);

try {
  await runDemo({
    directory,
    client,
    reset: args.includes('--reset'),
    print: (line) => console.log(line),
    directoryLabel: label && !label.startsWith('..') ? `${label}/` : directory,
  });
} catch (error) {
  if (!CtxError.isInstance(error)) throw error;
  console.error(`\n${error.name}: ${error.message}`);
  if (SessionStateError.isInstance(error)) console.error('Run with --reset to discard the stored session and start over.');
  process.exitCode = 1;
}
