// Packs every published package (`pnpm pack`, after the build) and checks what a user would
// install: README.md, LICENSE and CHANGELOG.md present, every `exports`, `main` and `types`
// target present, no source maps, no absolute path of the machine that built it, no `workspace:`
// range left, no devDependencies (the workspace's test servers are private `0.0.0` packages a user
// cannot install: .pnpmfile.cjs drops the field at pack time), and `publishConfig` asking for
// public access with provenance.
// Run: node --test tooling/pack-contents.test.mjs (after `pnpm build`)
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { pnpm } from './pnpm.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = mkdtempSync(join(tmpdir(), 'ctx-pack-'));
after(() => rmSync(out, { recursive: true, force: true }));

/** Every string leaf of an `exports` map. */
function targets(value) {
  if (typeof value === 'string') return [value];
  if (value && typeof value === 'object') return Object.values(value).flatMap(targets);
  return [];
}

/** Every file under `dir`, relative to it. */
function walk(dir, prefix = '') {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path, `${prefix}${name}/`) : [`${prefix}${name}`];
  });
}

/** Absolute paths of this machine that must not be in a tarball. */
// The clone's own path, the home folder and the build folder; not the clone's parent, which may be /tmp, a path READMEs name.
const machinePaths = [...new Set([root, homedir(), '/work/'])].filter((p) => p.length > 1);

for (const name of readdirSync(join(root, 'packages'))) {
  const dir = join(root, 'packages', name);
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  if (manifest.private) continue;
  test(`${manifest.name}: the tarball holds what it promises and nothing of the build machine`, () => {
    const dest = mkdtempSync(join(out, `${name}-`));
    execFileSync(...pnpm(['pack', '--pack-destination', dest]), { cwd: dir, stdio: 'ignore' });
    const tarball = readdirSync(dest).find((f) => f.endsWith('.tgz'));
    execFileSync('tar', ['xzf', tarball], { cwd: dest });
    const unpacked = join(dest, 'package');
    const files = walk(unpacked);
    for (const required of ['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md']) {
      assert.ok(files.includes(required), `${manifest.name}: ${required} is not in the tarball`);
    }
    const packed = JSON.parse(readFileSync(join(unpacked, 'package.json'), 'utf8'));
    const wanted = [...targets(packed.exports), packed.main, packed.module, packed.types].filter(Boolean);
    for (const target of wanted) {
      assert.ok(files.includes(target.replace(/^\.\//, '')), `${manifest.name}: ${target} (exports, main or types) is not in the tarball`);
    }
    assert.deepEqual(
      files.filter((f) => f.endsWith('.map')),
      [],
      `${manifest.name}: source maps are not shipped`,
    );
    for (const file of files) {
      const text = readFileSync(join(unpacked, file), 'utf8');
      for (const path of machinePaths) assert.ok(!text.includes(path), `${manifest.name}: ${file} names ${path}`);
    }
    assert.ok(!JSON.stringify(packed).includes('workspace:'), `${manifest.name}: a workspace: range is left in package.json`);
    assert.equal(
      packed.devDependencies,
      undefined,
      `${manifest.name}: devDependencies are published (${Object.keys(packed.devDependencies ?? {}).join(', ')}); .pnpmfile.cjs drops them at pack time`,
    );
    assert.deepEqual(packed.publishConfig, { access: 'public', provenance: true }, `${manifest.name}: publishConfig`);
  });
}
