import { relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CtxError, SessionStateError } from '@ctx/core';
import { createInspector } from '@ctx/inspector';
import { chooseClient } from './agent.js';
import { runDemo } from './demo.js';

const HELP = `Usage: pnpm --filter @example/quickstart start [-- --reset] [-- --inspect]

Runs a few scripted turns of a conversation that is kept in a FileSessionStore, so every run
continues the last one.

  --reset   delete the stored session and start over
  --inspect open the ctx inspector: a page on 127.0.0.1 that shows what each model call received
            (CTX_INSPECTOR_PORT, default 4777); stays up until Ctrl+C
  --help    show this text

Environment:
  CTX_DEMO_DIR                     where sessions are kept (default: examples/quickstart/.ctx-demo)
  OPENAI_API_KEY / OPENAI_BASE_URL use a real model through @ctx/openai (OPENAI_MODEL, default gpt-4o-mini)`;

const args = process.argv.slice(2).filter((a) => a !== '--');
const unknown = args.filter((a) => !['--reset', '--inspect', '--help', '-h'].includes(a));
if (args.includes('--help') || args.includes('-h') || unknown.length) {
  if (unknown.length) console.error(`Unknown option ${unknown.join(' ')}\n`);
  console.log(HELP);
  process.exit(unknown.length ? 2 : 0);
}

const directory = resolve(process.env.CTX_DEMO_DIR ?? fileURLToPath(new URL('../.ctx-demo', import.meta.url)));
const label = relative(process.cwd(), directory);
const { client, note } = await chooseClient();
if (note) console.log(note);
// The two lines that add the inspector to an agent: create it, pass its onEvent (below, to runDemo).
const inspector = args.includes('--inspect')
  ? await createInspector({ port: Number(process.env.CTX_INSPECTOR_PORT ?? 4777), showText: true })
  : undefined;

try {
  await runDemo({
    directory,
    client,
    reset: args.includes('--reset'),
    print: (line) => console.log(line),
    directoryLabel: label && !label.startsWith('..') ? `${label}/` : directory,
    ...(inspector ? { onEvent: inspector.onEvent } : {}),
  });
  if (inspector) {
    console.log(`\nThe inspector shows these turns at ${inspector.url} (Ctrl+C to stop).`);
    await new Promise<void>((resolve) => process.once('SIGINT', resolve));
  }
} catch (error) {
  if (!CtxError.isInstance(error)) throw error;
  console.error(`\n${error.name}: ${error.message}`);
  if (SessionStateError.isInstance(error)) console.error('Run with --reset to discard the stored session and start over.');
  process.exitCode = 1;
} finally {
  await inspector?.close();
}
