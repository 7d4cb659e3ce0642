import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chooseModels, firstProcess, openDatabase, secondProcess } from './demo.js';

// One command, two processes: this file starts itself twice, the second time after the first
// exited. Both keep everything in one embedded PostgreSQL (PGlite) in a directory:
// CTX_MEMORY_DIR, default .pglite next to src/.
const here = dirname(fileURLToPath(import.meta.url));
const dataDir = process.env.CTX_MEMORY_DIR ?? join(here, '..', '.pglite');
const [phase, userId] = process.argv.slice(2);

if (phase === undefined) {
  const user = `ada-${randomUUID()}`;
  for (const next of ['first', 'second']) {
    const run = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), next, user], { stdio: 'inherit' });
    if (run.status !== 0) process.exit(run.status ?? 1);
  }
} else {
  const models = await chooseModels();
  const db = await openDatabase(dataDir);
  try {
    const print = (line: string) => console.log(line);
    console.log(`=== ${phase} process (pid ${process.pid}), ${models.label}, data in ${dataDir} ===`);
    if (phase === 'first') await firstProcess({ ...models, db, userId: userId!, print });
    else await secondProcess({ ...models, db, userId: userId!, print });
  } finally {
    await db.close();
  }
}
