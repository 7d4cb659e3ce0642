import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../tooling/vitest.shared.js';

export default defineConfig({
  test: {
    ...sharedTestConfig,
    include: ['src/**/*.test.ts'],
    typecheck: { enabled: true, include: ['src/**/*.test-d.ts'] },
    // mem0ai reads these when it is loaded: no telemetry calls, and its config file out of $HOME.
    // The local servers (tooling/openai-test-server, tooling/mem0-test-server) are started in-process
    // by each test file on loopback with free ports (see test/backends.ts).
    env: { MEM0_TELEMETRY: 'false', MEM0_DIR: join(tmpdir(), 'ctx-mem0-test') },
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
