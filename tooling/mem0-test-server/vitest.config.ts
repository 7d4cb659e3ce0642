import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../vitest.shared.js';

export default defineConfig({
  test: {
    ...sharedTestConfig,
    include: ['src/**/*.test.ts'],
    // mem0ai reads these when it is loaded: no telemetry, and its config file out of $HOME.
    env: { MEM0_TELEMETRY: 'false', MEM0_DIR: join(tmpdir(), 'ctx-mem0-test-server') },
  },
});
