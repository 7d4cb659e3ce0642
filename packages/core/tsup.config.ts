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
  sourcemap: true,
  target: 'node20',
});
