import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'backend/index': 'src/backend/index.ts',
    'testing/index': 'src/testing/index.ts',
    'json-schema/index': 'src/json-schema/index.ts',
  },
  format: ['esm', 'cjs'],
  // Shared code (the error classes above all) lives in one chunk, in CommonJS too, so every entry
  // point throws the same classes and `instanceof` holds across them.
  splitting: true,
  dts: true,
  clean: true,
  // No source maps in the tarball: dist is unminified, so stack traces already read as the source
  // (maps were 55% of the bytes, and the CommonJS ones named the build directory).
  sourcemap: false,
  target: 'node20',
});
