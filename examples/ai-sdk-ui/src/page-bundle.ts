import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/**
 * The chat page's script (`page/chat-page.tsx`: React, `useChat` from `@ai-sdk/react`), bundled in
 * memory with esbuild when the server starts, so the example has no build step. Takes a second or so.
 */
export async function buildPageScript(): Promise<string> {
  const result = await build({
    entryPoints: [fileURLToPath(new URL('./page/chat-page.tsx', import.meta.url))],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    jsx: 'automatic',
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  });
  return result.outputFiles[0]!.text;
}
