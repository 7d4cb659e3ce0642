// Installs `mem0ai` beside `@azure/search-documents` 13 in a fresh npm project, as a user of
// @ctx/mem0 and @ctx/azure-search would, and imports both.
//
// `mem0ai` names `@azure/search-documents` ^12 as an optional peer (for its own Azure AI Search
// vector store, which it imports only when that store is used), so a plain `npm install` of both
// fails with ERESOLVE. The `overrides` block in packages/mem0/README.md tells npm to give `mem0ai`
// the app's copy; this script takes that block from the README, so what users copy is what is tested:
//   1. without the block: npm must still refuse (else the README's advice is stale, and this says so);
//   2. with it: the install succeeds, `npm ls` finds no invalid peer, and `mem0ai`, `mem0ai/oss`
//      and `@azure/search-documents` import, one copy of the latter.
// Install scripts are skipped (mem0ai's better-sqlite3 is not built; importing does not load it).
//
//   node tooling/check-mem0-beside-azure-search.mjs
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

let dir;
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const readme = readFileSync(join(root, 'packages/mem0/README.md'), 'utf8');
const block = [...readme.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => m[1]).find((text) => text.includes('"overrides"'));
if (!block) fail('packages/mem0/README.md has no ```json block with "overrides"');
const fromReadme = JSON.parse(block);
const dependencies = fromReadme.dependencies;
if (!dependencies?.mem0ai || !dependencies['@azure/search-documents'])
  fail('the README block names no mem0ai and @azure/search-documents dependencies');

dir = mkdtempSync(join(tmpdir(), 'ctx-mem0-azure-'));
const npm = (...args) =>
  spawnSync('npm', [...args, '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir, encoding: 'utf8' });
try {
  const manifest = { name: 'mem0-beside-azure-search', private: true, type: 'module', dependencies };
  writeFileSync(join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
  const plain = npm('install', '--dry-run');
  if (plain.status === 0) {
    console.log(
      'check-mem0-beside-azure-search: mem0ai now installs beside @azure/search-documents 13 without overrides; the README block can go.',
    );
  } else if (!/ERESOLVE/.test(plain.stderr)) {
    fail(`npm install without overrides failed for another reason than ERESOLVE:\n${plain.stderr}`);
  }

  writeFileSync(join(dir, 'package.json'), JSON.stringify({ ...manifest, overrides: fromReadme.overrides }, null, 2));
  const install = npm('install');
  if (install.status !== 0) fail(`npm install with the README's overrides failed:\n${install.stderr}`);
  const ls = spawnSync('npm', ['ls', '--all', '--json'], { cwd: dir, encoding: 'utf8' });
  if (ls.status !== 0) fail(`npm ls reports problems:\n${ls.stdout.slice(0, 2000)}\n${ls.stderr}`);
  const probe = `
    const { MemoryClient } = await import('mem0ai');
    const { Memory } = await import('mem0ai/oss');
    const search = await import('@azure/search-documents');
    const { createRequire } = await import('node:module');
    const fromMem0 = createRequire(createRequire(import.meta.url).resolve('mem0ai')).resolve('@azure/search-documents/package.json');
    const own = createRequire(import.meta.url).resolve('@azure/search-documents/package.json');
    const { readFileSync } = await import('node:fs');
    const version = JSON.parse(readFileSync(own, 'utf8')).version;
    if (typeof MemoryClient !== 'function' || typeof Memory !== 'function' || typeof search.SearchClient !== 'function') throw new Error('an import is missing');
    if (fromMem0 !== own) throw new Error('mem0ai sees another @azure/search-documents: ' + fromMem0);
    if (!version.startsWith('13.')) throw new Error('@azure/search-documents ' + version + ' is not 13');
    console.log('imported mem0ai, mem0ai/oss and @azure/search-documents ' + version + ' (one copy)');
  `;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', probe], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, MEM0_TELEMETRY: 'false' },
  });
  if (run.status !== 0) fail(`importing both failed:\n${run.stdout}${run.stderr}`);
  console.log(`check-mem0-beside-azure-search: OK, ${run.stdout.trim()}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

function fail(message) {
  if (dir) rmSync(dir, { recursive: true, force: true });
  console.error(`check-mem0-beside-azure-search: ${message}`);
  process.exit(1);
}
