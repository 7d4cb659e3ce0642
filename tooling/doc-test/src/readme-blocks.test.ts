import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { clean, findReadmes, readReadme, runBlock, typeCheck, writeModules } from './blocks.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../../..');
const out = resolve(here, '../.blocks');
const RUN_TIMEOUT_MS = 60_000;

clean(out);
const docs = findReadmes(root).map((readme) => readReadme(root, readme, out));
for (const doc of docs) writeModules(doc);
const diagnostics = typeCheck(docs, resolve(here, '../tsconfig.json'));
afterAll(() => clean(out));

describe.each(docs.map((doc) => [doc.readme, doc] as const))('%s', (_, doc) => {
  it('every name a block uses comes from an earlier block', () => {
    expect(doc.problems).toEqual([]);
  });

  it.runIf(doc.installs.size > 0)('its install lines install every package its blocks import', () => {
    expect([...doc.imports].filter((name) => !doc.installs.has(name))).toEqual([]);
  });

  it.each(doc.blocks.map((block) => [block.line, block] as const))('block at line %i type-checks', (_, block) => {
    expect(diagnostics.get(block)).toEqual([]);
  });

  const runnable = doc.blocks.filter((block) => block.runnable);
  it.runIf(runnable.length > 0).each(runnable.map((block) => [block.line, block] as const))(
    'block at line %i runs against the local servers',
    async (_, block) => {
      const { code, output } = await runBlock(block.file, {
        cwd: join(here, '..'),
        env: { ...process.env, ...inject('blockEnv') },
        timeoutMs: RUN_TIMEOUT_MS,
      });
      expect(code, `${block.readme}:${block.line}\n${output}`).toBe(0);
    },
    RUN_TIMEOUT_MS + 10_000,
  );
});

it('finds the blocks', () => {
  expect(docs.flatMap((doc) => doc.blocks).length).toBeGreaterThan(20);
});
