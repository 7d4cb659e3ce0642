import { readFileSync } from 'node:fs';
import * as backend from '@ctx/core/backend';
import { describe, expect, it } from 'vitest';
import { ExampleDatabase, ExampleHistoryProvider, ExampleSessionStore } from './example-backend.js';
import { describeHistoryProvider, describeHostedConcurrency, describeSessionStore } from './index.js';

// The template of the README's guide passes every suite, as a third party's backend would.
const database = new ExampleDatabase();
describeHistoryProvider('ExampleHistoryProvider (the README template)', {
  create: (options) => new ExampleHistoryProvider({ ...options, database }),
  capabilities: { popMessages: true, clearMessages: true },
});
describeSessionStore('ExampleSessionStore (the README template)', {
  create: () => new ExampleSessionStore({ database }),
  capabilities: { list: true, total: false, leases: false },
});
describeHostedConcurrency('ExampleSessionStore with ExampleHistoryProvider (the README template)', {
  createStore: () => new ExampleSessionStore({ database }),
  createHistory: (options) => new ExampleHistoryProvider({ ...options, database }),
  capabilities: { leases: false },
});

describe('the README template', () => {
  it('is shown in the README exactly as this package tests it', () => {
    const source = readFileSync(new URL('./example-backend.ts', import.meta.url), 'utf8');
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const block = /```ts\n(\/\/ example-backend\.ts:[\s\S]*?)```/.exec(readme)?.[1];
    expect(block, 'a ```ts block starting with "// example-backend.ts:" in README.md').toBeDefined();
    expect(block).toBe(source);
  });

  it('names every export of @ctx/core/backend in the guide', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const guide = readme.slice(readme.indexOf('## Publish your own backend'), readme.indexOf('## What the history suite checks'));
    const missing = Object.keys(backend).filter((name) => !guide.includes(`\`${name}`));
    expect(missing, 'exports of @ctx/core/backend the guide does not name').toEqual([]);
  });
});
