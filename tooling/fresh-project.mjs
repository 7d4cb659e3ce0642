// A new user's project: packs every published package, installs the tarballs with the newest
// published release of every SDK the READMEs import into a fresh npm project outside the workspace,
// type-checks every README block there with that project's `tsc` (strict, `moduleResolution: nodenext`)
// and runs the blocks marked runnable against local servers, importing from the installed tarballs.
//
// The blocks are read and written as modules the way tooling/doc-test does (its src/blocks.ts, loaded
// through tsx), so both check the same code; the servers are the ones doc-test starts (a real
// `redis-server` and the OpenAI-protocol test server, on loopback). The newest release is npm's
// `latest` of each SDK, except where a peer range caps it: ours (`@openai/agents`: the newest in the
// range `@ctx/openai-agents` claims) or another SDK's (`@opentelemetry/sdk-trace-node` caps
// `@opentelemetry/api`); each such choice is printed. `mem0ai` is installed with the `overrides` block
// packages/mem0/README.md tells users to copy. Install scripts are skipped (no native addon is built;
// no runnable block loads one). Installing, type-checking and each block's run have time limits.
//
//   bash tooling/with-node.sh 22 node tooling/fresh-project.mjs
//   node tooling/fresh-project.mjs --keep     leave the project in the OS tmpdir and print its path
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { pnpm } from './pnpm.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const keep = process.argv.includes('--keep');
const started = Date.now();
const INSTALL_TIMEOUT_MS = 300_000;
const TSC_TIMEOUT_MS = 180_000;
const RUN_TIMEOUT_MS = 60_000;

// doc-test's block reader and the local servers are TypeScript of the workspace: load them through tsx.
const fromDocTest = createRequire(join(root, 'tooling', 'doc-test', 'package.json'));
const { register } = await import(pathToFileURL(fromDocTest.resolve('tsx/esm/api')).href);
register();
const { findReadmes, readReadme, runBlock, writeModules } = await import(
  pathToFileURL(join(root, 'tooling', 'doc-test', 'src', 'blocks.ts')).href
);

/** The workspace's packages by name: published (packed and installed) or private (not on the registry). */
const workspace = new Map();
for (const group of ['packages', 'tooling', 'examples']) {
  const dir = join(root, group);
  if (!existsSync(dir)) continue;
  for (const name of readdirSync(dir)) {
    const manifest = join(dir, name, 'package.json');
    if (!existsSync(manifest)) continue;
    const pkg = JSON.parse(readFileSync(manifest, 'utf8'));
    workspace.set(pkg.name, { dir: join(dir, name), manifest: pkg, published: group === 'packages' && !pkg.private });
  }
}

const project = mkdtempSync(join(tmpdir(), 'ctx-fresh-project-'));
const failures = [];
const servers = [];
try {
  // 1. The blocks, as doc-test writes them; READMEs whose blocks import a private workspace package
  //    (the test servers' own READMEs) cannot be installed by a user, so they are listed and left out.
  const docs = [];
  const leftOut = [];
  for (const readme of findReadmes(root)) {
    const doc = readReadme(root, readme, join(project, 'blocks'));
    if (doc.blocks.length === 0) continue;
    const unpublished = [...doc.imports].filter((name) => workspace.has(name) && !workspace.get(name).published);
    if (unpublished.length > 0) {
      leftOut.push(`${readme}:${doc.blocks.map((b) => b.line).join(',')}: imports ${unpublished.join(', ')} (private, not published)`);
      continue;
    }
    writeModules(doc);
    failures.push(...doc.problems);
    docs.push(doc);
  }
  const blocks = docs.flatMap((doc) => doc.blocks);

  // 2. The tarballs, and the newest SDKs the blocks import.
  const tarballs = join(project, 'tarballs');
  mkdirSync(tarballs);
  const dependencies = {};
  for (const [name, { dir, published }] of workspace) {
    if (!published) continue;
    const dest = join(tarballs, name.replace(/^@ctx\//, ''));
    mkdirSync(dest);
    const packed = run(...pnpm(['pack', '--pack-destination', dest]), { cwd: dir, capture: true });
    const file = readdirSync(dest).find((f) => f.endsWith('.tgz'));
    if (packed.status !== 0 || !file) throw new Error(`pnpm pack failed in ${relative(root, dir)}:\n${packed.stderr}`);
    dependencies[name] = `file:./${relative(project, join(dest, file))}`;
  }
  const sdks = new Set(docs.flatMap((doc) => [...doc.imports]).filter((name) => !workspace.has(name)));
  for (const extra of ['openai', 'js-tiktoken', '@opentelemetry/api']) sdks.add(extra); // peers of @ctx/openai and @ctx/otel
  // @ctx/postgres's optional peer, with pgvector for it: what `PgVectorIndex` runs on embedded (no block imports them).
  for (const extra of ['@electric-sql/pglite', '@electric-sql/pglite-pgvector']) sdks.add(extra);
  if (sdks.has('@openai/agents')) sdks.add('@openai/agents-core');
  if (sdks.has('pg')) sdks.add('@types/pg'); // pg ships no types: a TypeScript app installs them beside it
  const agentsRange = workspace.get('@ctx/openai-agents')?.manifest.peerDependencies?.['@openai/agents-core'];
  for (const sdk of [...sdks].sort()) {
    dependencies[sdk] = sdk.startsWith('@openai/agents') && agentsRange ? newestIn(sdk, agentsRange) : newestIn(sdk, 'latest');
  }
  // The newest of one SDK may not accept the newest of another as its peer (`@opentelemetry/sdk-trace-node`
  // caps `@opentelemetry/api`): take the newest the other's peer range accepts, as npm would have to,
  // unless the README's overrides block gives that SDK the app's copy (mem0ai's `@azure/search-documents`).
  const mem0 = mem0Overrides();
  for (const sdk of sdks) {
    const peers = run('npm', ['view', `${sdk}@${dependencies[sdk]}`, 'peerDependencies', '--json'], { capture: true });
    for (const [peer, range] of Object.entries(peers.stdout.trim() ? JSON.parse(peers.stdout) : {})) {
      if (!sdks.has(peer) || mem0[sdk]?.[peer]) continue;
      const fits = newestIn(peer, range);
      if (compareVersions(fits, dependencies[peer]) < 0) {
        console.log(`fresh-project: ${peer} ${fits}, not ${dependencies[peer]}: ${sdk}@${dependencies[sdk]} wants ${range}`);
        dependencies[peer] = fits;
      }
    }
  }
  for (const name of ['typescript', 'tsx']) dependencies[name] = newestIn(name, 'latest');
  dependencies['@types/node'] = newestIn('@types/node', `^${process.versions.node.split('.')[0]}`);
  writeFileSync(
    join(project, 'package.json'),
    `${JSON.stringify({ name: 'ctx-fresh-project', private: true, type: 'module', dependencies, overrides: mem0 }, null, 2)}\n`,
  );
  console.log(`fresh-project: installing ${Object.keys(dependencies).length} packages in ${project}`);
  const install = run('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: project,
    capture: true,
    timeout: INSTALL_TIMEOUT_MS,
  });
  if (install.status !== 0) throw new Error(`npm install failed:\n${install.stdout}${install.stderr}`);
  const installed = Object.keys(dependencies)
    .filter((name) => !name.startsWith('@ctx/'))
    .map((name) => `${name}@${JSON.parse(readFileSync(join(project, 'node_modules', name, 'package.json'), 'utf8')).version}`);

  // 3. Type-check every block with the project's tsc, as a user's strict Node project would.
  writeFileSync(
    join(project, 'tsconfig.json'),
    `${JSON.stringify(
      {
        compilerOptions: {
          target: 'ES2022',
          lib: ['ES2022'],
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          verbatimModuleSyntax: true,
          types: ['node'],
        },
        include: ['blocks'],
      },
      null,
      2,
    )}\n`,
  );
  const tsc = run(join(project, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.json', '--pretty', 'false'], {
    cwd: project,
    capture: true,
    timeout: TSC_TIMEOUT_MS,
  });
  const byFile = new Map(blocks.map((block) => [block.file, block]));
  const failedBlocks = new Set();
  for (const line of `${tsc.stdout}${tsc.stderr}`.split('\n').filter(Boolean)) {
    const at = /^(.+?)\((\d+),\d+\): (.*)$/.exec(line);
    const block = at ? byFile.get(resolve(project, at[1])) : undefined;
    if (!at || !block) {
      if (/error/.test(line)) failures.push(`tsc: ${line}`);
      continue;
    }
    failedBlocks.add(block);
    failures.push(`${block.readme}:${block.line + Number(at[2]) - 1 - block.offset}: ${at[3]}`);
  }
  if (tsc.status !== 0 && failedBlocks.size === 0 && !failures.some((f) => f.startsWith('tsc:')))
    failures.push(`tsc exited with ${tsc.status}`);

  // 4. Run the runnable blocks against a real redis-server and the OpenAI-protocol test server.
  const runnable = blocks.filter((block) => block.runnable);
  const { startRedisServer } = await import(pathToFileURL(fromDocTest.resolve('@ctx/redis-test-server')).href);
  const { startOpenAITestServer } = await import(pathToFileURL(fromDocTest.resolve('@ctx/openai-test-server')).href);
  const redis = await startRedisServer({ dir: join(project, 'redis') });
  servers.push(() => redis.stop());
  const openai = await startOpenAITestServer();
  servers.push(() => openai.close());
  const env = {
    ...process.env,
    REDIS_URL: `redis://127.0.0.1:${redis.port}`,
    OPENAI_BASE_URL: openai.url,
    OPENAI_API_KEY: openai.apiKey,
    MEM0_TELEMETRY: 'false',
  };
  let ran = 0;
  for (const block of runnable) {
    const { code, output } = await runBlock(block.file, { cwd: project, env, timeoutMs: RUN_TIMEOUT_MS });
    if (code === 0) ran++;
    else failures.push(`${block.readme}:${block.line}: the block exited with ${code}\n${output.trim()}`);
  }

  const seconds = Math.round((Date.now() - started) / 1000);
  console.log(`\nFresh npm project on Node ${process.versions.node}, ${seconds} s:`);
  console.log(`  type-checked ${blocks.length - failedBlocks.size} of ${blocks.length} README blocks (${docs.length} READMEs)`);
  console.log(`  ran ${ran} of ${runnable.length} runnable blocks against redis-server and the OpenAI test server`);
  console.log(
    `  installed ${Object.keys(dependencies).filter((n) => n.startsWith('@ctx/')).length} packed @ctx packages and ${installed.join(', ')}`,
  );
  if (leftOut.length > 0) console.log(`  left out:\n${leftOut.map((l) => `    ${l}`).join('\n')}`);
} catch (error) {
  failures.push(error instanceof Error ? error.message : String(error));
} finally {
  for (const stop of servers.reverse()) await stop().catch((error) => failures.push(`stopping a server: ${error.message}`));
  if (keep) console.log(`fresh-project: kept ${project}`);
  else rmSync(project, { recursive: true, force: true });
}

if (failures.length > 0) {
  console.error(`\nfresh-project: ${failures.length} failure(s):\n${failures.map((f) => `  ${f}`).join('\n')}`);
  process.exit(1);
}
console.log('fresh-project: OK');

/** The newest published version of `name` that `range` (a semver range or a dist-tag) names. */
function newestIn(name, range) {
  const listed = run('npm', ['view', `${name}@${range}`, 'version', '--json'], { capture: true });
  if (listed.status !== 0) throw new Error(`npm view ${name}@${range} failed:\n${listed.stderr}`);
  const versions = [JSON.parse(listed.stdout)].flat().filter((v) => /^\d+\.\d+\.\d+$/.test(v));
  const newest = versions.sort(compareVersions)[versions.length - 1];
  if (!newest) throw new Error(`no release of ${name} fits ${range}`);
  return newest;
}

function compareVersions(a, b) {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number));
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
}

/** The `overrides` block packages/mem0/README.md tells users to copy (mem0ai beside @azure/search-documents 13). */
function mem0Overrides() {
  const readme = readFileSync(join(root, 'packages', 'mem0', 'README.md'), 'utf8');
  const block = [...readme.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => m[1]).find((text) => text.includes('"overrides"'));
  if (!block) throw new Error('packages/mem0/README.md has no ```json block with "overrides"');
  return JSON.parse(block).overrides;
}

function run(command, args, { cwd = root, capture = false, timeout } = {}) {
  const result = spawnSync(command, args, {
    cwd,
    stdio: capture ? ['ignore', 'pipe', 'pipe'] : 'inherit',
    encoding: 'utf8',
    timeout,
    killSignal: 'SIGKILL',
  });
  if (result.error) throw result.error;
  return result;
}
