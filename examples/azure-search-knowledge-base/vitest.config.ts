import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../tooling/vitest.shared.js';

export default defineConfig({
  test: { ...sharedTestConfig, include: ['src/**/*.test.ts'] },
});
