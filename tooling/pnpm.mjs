// The pnpm this repository pins (`packageManager` in the root package.json), run through npx: a
// fresh machine has only Node and npm, so no script may call a global `pnpm`.
import { readFileSync } from 'node:fs';

const { packageManager } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

/** The command and arguments that run `pnpm ...args` with the pinned version: `execFileSync(...pnpm(['pack']))`. */
export function pnpm(args) {
  return ['npx', ['--yes', packageManager, ...args]];
}
