import { join } from 'node:path';
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
  esbuildPlugins: [
    {
      // The CommonJS build loads the optional peer of @ctx/core/json-schema with require() (no top-level await there).
      name: 'json-schema-peer-cjs',
      setup(build) {
        // tsup builds CommonJS with splitting as ESM then converts it, so the format tells nothing: the extension does.
        if (build.initialOptions.outExtension?.['.js'] !== '.cjs') return;
        build.onResolve({ filter: /^\.\/load-peer\.js$/ }, (args) => ({ path: join(args.resolveDir, 'load-peer.cjs.ts') }));
      },
    },
  ],
});
