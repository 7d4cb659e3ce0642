import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  // `import.meta.url` in the CommonJS build too: the server reads the page from `page/` beside `dist/`.
  shims: true,
});
