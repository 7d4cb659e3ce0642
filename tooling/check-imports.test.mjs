// Tests of tooling/check-imports.mjs on small trees written to a temp directory.
// Run: node --test tooling/check-imports.test.mjs
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { checkImports, listImports } from './check-imports.mjs';

const script = join(dirname(fileURLToPath(import.meta.url)), 'check-imports.mjs');
const base = mkdtempSync(join(tmpdir(), 'check-imports-'));
after(() => rmSync(base, { recursive: true, force: true }));

let trees = 0;
/** Writes `files` (path -> contents) into a fresh directory and returns its path. */
function tree(files) {
  const root = join(base, `tree-${trees++}`);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

function run(root) {
  const result = spawnSync(process.execPath, [script, root], { encoding: 'utf8' });
  return { status: result.status, output: result.stdout + result.stderr };
}

describe('listImports', () => {
  test('finds every kind of import and tells type-only ones apart', () => {
    const text = [
      "import type { A } from './a.js';",
      "import { type B } from './b.js';",
      "import C from './c.js';",
      "export * from './d.js';",
      "export type { E } from './e.js';",
      "const f = await import('./f.js');",
      "type G = import('./g.js').G;",
      "import './h.js';",
      "import { I } from 'node:events';",
      "import type { J } from './j.js';",
      "import { K } from './j.js';",
    ].join('\n');
    const found = Object.fromEntries(listImports(text).map((i) => [i.specifier, i.typeOnly]));
    assert.deepEqual(found, {
      './a.js': true,
      './b.js': false, // kept as a runtime import under verbatimModuleSyntax
      './c.js': false,
      './d.js': false,
      './e.js': true,
      './f.js': false,
      './g.js': true,
      './h.js': false,
      'node:events': false,
      './j.js': false, // one value import of the module is enough
    });
  });
});

describe('cycles', () => {
  test('a two-file cycle fails with the cycle printed', () => {
    const root = tree({
      'a.ts': "import { b } from './b.js';\nexport const a = () => b;\n",
      'b.ts': "import { a } from './a.js';\nexport const b = () => a;\n",
      'c.ts': "import { a } from './a.js';\nexport const c = a;\n",
    });
    const result = checkImports(root);
    assert.equal(result.ok, false);
    assert.equal(result.cycles.length, 1);
    assert.deepEqual(result.cycles[0].files, ['a.ts', 'b.ts']);
    assert.deepEqual(
      result.cycles[0].cycles.map((c) => c.path.join(' -> ')),
      ['a.ts -> b.ts -> a.ts'],
    );
    const { status, output } = run(root);
    assert.equal(status, 1);
    assert.match(output, /^ {4}a\.ts -> b\.ts -> a\.ts$/m);
    assert.doesNotMatch(output, /c\.ts ->/);
  });

  test('a cycle made only of type imports still fails, and says so', () => {
    const root = tree({
      'agent.ts': "import type { Provider } from './provider.js';\nexport interface Agent { providers: Provider[] }\n",
      'provider.ts': "import type { Agent } from './agent.js';\nexport interface Provider { agent: Agent }\n",
    });
    const { status, output } = run(root);
    assert.equal(status, 1);
    assert.match(output, /agent\.ts -> provider\.ts -> agent\.ts {3}\[every import type-only\]/);
  });

  test('cycles through export-from, import() types, dynamic import() and dir/index.js are found', () => {
    const root = tree({
      'a.ts': "export * from './dir/index.js';\n",
      'dir/index.ts': "export type X = import('../b.js').B;\n",
      'b.ts': "export type B = 1;\nexport const load = () => import('./a.js');\n",
    });
    const result = checkImports(root);
    assert.equal(result.cycles.length, 1);
    assert.deepEqual(result.cycles[0].cycles[0].path, ['a.ts', 'dir/index.ts', 'b.ts', 'a.ts']);
    assert.deepEqual(result.cycles[0].cycles[0].typeOnly, ['dir/index.ts -> b.ts']);
  });

  test('every import inside a group appears in some printed cycle', () => {
    // a -> b -> c -> a, plus b -> a and c -> b: three imports that each close a cycle.
    const root = tree({
      'a.ts': "import './b.js';\n",
      'b.ts': "import './c.js';\nimport './a.js';\n",
      'c.ts': "import './a.js';\nimport './b.js';\n",
      'd.ts': "import './a.js';\n",
    });
    const result = checkImports(root);
    assert.equal(result.cycles.length, 1);
    assert.deepEqual(result.cycles[0].files, ['a.ts', 'b.ts', 'c.ts']);
    const edges = new Set(result.cycles[0].cycles.flatMap((c) => c.path.slice(1).map((to, i) => `${c.path[i]}>${to}`)));
    assert.deepEqual([...edges].sort(), ['a.ts>b.ts', 'b.ts>a.ts', 'b.ts>c.ts', 'c.ts>a.ts', 'c.ts>b.ts']);
  });

  test('separate groups and a self-import are each reported, with extensionless and directory specifiers', () => {
    const root = tree({
      'x/a.ts': "import './b.js';\n",
      'x/b.ts': "import './a.js';\n",
      'y/c.ts': "import './d';\n",
      'y/d.ts': "import './c.ts';\n",
      'z/e.ts': "export * from './sub';\n",
      'z/sub/index.ts': "export type { E } from '../e.js';\n",
      'self.ts': "import './self.js';\n",
    });
    const result = checkImports(root);
    assert.deepEqual(
      result.cycles.map((g) => g.cycles.map((c) => c.path.join(' -> '))),
      [['self.ts -> self.ts'], ['x/a.ts -> x/b.ts -> x/a.ts'], ['y/c.ts -> y/d.ts -> y/c.ts'], ['z/e.ts -> z/sub/index.ts -> z/e.ts']],
    );
  });

  test('tests are not part of the graph', () => {
    const root = tree({
      'a.ts': 'export const a = 1;\n',
      'a.test.ts': "import { a } from './a.js';\nimport './a.test.js';\n",
      'types.test-d.ts': "import { a } from './a.js';\n",
    });
    const result = checkImports(root);
    assert.equal(result.ok, true);
    assert.equal(result.files, 1);
  });
});

describe('contracts/ is a leaf', () => {
  test('a contract file importing outside contracts/ fails, bare and node: specifiers included', () => {
    const root = tree({
      'contracts/v1/message.ts': "import type { Part } from './part.js';\nexport interface Message { parts: Part[] }\n",
      'contracts/v1/part.ts': 'export interface Part { text: string }\n',
      'contracts/v1/agent.ts': [
        "import type { Runner } from '../../run/runner.js';",
        "import { EventEmitter } from 'node:events';",
        "import type { z } from 'zod';",
        "import type { Message } from '../index.js';",
        'export interface Agent { runner: Runner; events: EventEmitter; m: Message; s: z.ZodType }',
      ].join('\n'),
      'contracts/index.ts': "export type * from './v1/message.js';\n",
      'run/runner.ts': "import type { Message } from '../contracts/index.js';\nexport interface Runner { last: Message }\n",
    });
    const result = checkImports(root);
    assert.equal(result.ok, false);
    assert.equal(result.cycles.length, 0);
    assert.deepEqual(result.specViolations, [
      { file: 'contracts/v1/agent.ts', specifier: '../../run/runner.js', target: 'run/runner.ts' },
      { file: 'contracts/v1/agent.ts', specifier: 'node:events', target: undefined },
      { file: 'contracts/v1/agent.ts', specifier: 'zod', target: undefined },
    ]);
    const { status, output } = run(root);
    assert.equal(status, 1);
    assert.match(output, /contracts\/v1\/agent\.ts imports '\.\.\/\.\.\/run\/runner\.js' \(run\/runner\.ts\)/);
    assert.match(output, /contracts\/v1\/agent\.ts imports 'node:events'/);
  });
});

describe('a clean tree', () => {
  test('passes with a one-line summary', () => {
    const root = tree({
      'contracts/message.ts': 'export interface Message { text: string }\n',
      'run/agent.ts':
        "import type { Message } from '../contracts/message.js';\nimport { join } from './util.js';\nexport const run = (m: Message) => join(m);\n",
      'run/util.ts': "import { EventEmitter } from 'node:events';\nexport const join = (m: object) => new EventEmitter() && m;\n",
    });
    const { status, output } = run(root);
    assert.equal(status, 0);
    assert.match(
      output.trim(),
      /^check-imports: OK .*: 3 files, 2 import edges \(1 type-only\), no cycles, contracts\/ imports nothing outside contracts\/$/,
    );
  });

  test('an import of a missing file fails rather than leaving a hole in the graph', () => {
    const root = tree({ 'a.ts': "import { b } from './b.js';\nexport const a = b;\n" });
    const result = checkImports(root);
    assert.equal(result.ok, false);
    assert.deepEqual(result.unresolved, [{ file: 'a.ts', specifier: './b.js' }]);
  });
});
