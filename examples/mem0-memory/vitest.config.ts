import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../tooling/vitest.shared.js';

export default defineConfig({
  // mem0ai reads MEM0_TELEMETRY when it is loaded: no telemetry calls from the tests.
  test: { ...sharedTestConfig, include: ['src/**/*.test.ts'], env: { MEM0_TELEMETRY: 'false' } },
});
