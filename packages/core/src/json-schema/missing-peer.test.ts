import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { peerLoadError } from './missing-peer.js';

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'json-schema');

// The built entry, imported (ESM) or required (CommonJS) by a Node whose resolver hides the peer, as
// in an app that never installed it. Prints the error's name and message.
const ESM_HIDING = `
import { register } from 'node:module';
register('data:text/javascript,' + encodeURIComponent(\`
  export async function resolve(specifier, context, next) {
    if (specifier === '@cfworker/json-schema') {
      const error = new Error("Cannot find package '@cfworker/json-schema' imported from " + context.parentURL);
      error.code = 'ERR_MODULE_NOT_FOUND';
      throw error;
    }
    return next(specifier, context);
  }\`));
try { await import(process.argv[1]); console.log('loaded'); } catch (e) { console.log(e.name + ': ' + e.message); }
`;
const CJS_HIDING = `
const Module = require('node:module');
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request === '@cfworker/json-schema') {
    const error = new Error("Cannot find module '@cfworker/json-schema'");
    error.code = 'MODULE_NOT_FOUND';
    throw error;
  }
  return resolve.call(this, request, ...rest);
};
try { require(process.argv[1]); console.log('loaded'); } catch (e) { console.log(e.name + ': ' + e.message); }
`;

const run = (args: string[]) => execFileSync(process.execPath, args, { encoding: 'utf8', timeout: 30_000 }).trim();

describe('@ctx/core/json-schema without its optional peer', () => {
  it.runIf(existsSync(join(dist, 'index.js')))('the ESM build throws a ConfigurationError saying what to install', () => {
    const out = run(['--input-type=module', '--eval', ESM_HIDING, join(dist, 'index.js')]);
    expect(out).toMatch(
      /^ConfigurationError: @ctx\/core\/json-schema needs its optional peer dependency @cfworker\/json-schema, which is not installed\. Install it beside @ctx\/core \(npm install @cfworker\/json-schema@\^4\.1\.6\)/,
    );
    // With the peer there, the same file loads.
    expect(
      run([
        '--input-type=module',
        '--eval',
        'try { await import(process.argv[1]); console.log("loaded") } catch (e) { console.log(String(e)) }',
        join(dist, 'index.js'),
      ]),
    ).toBe('loaded');
  });

  it.runIf(existsSync(join(dist, 'index.cjs')))('the CommonJS build throws the same ConfigurationError', () => {
    const out = run(['--eval', CJS_HIDING, join(dist, 'index.cjs')]);
    expect(out).toMatch(
      /^ConfigurationError: @ctx\/core\/json-schema needs its optional peer dependency @cfworker\/json-schema, which is not installed/,
    );
    expect(
      run([
        '--eval',
        'try { require(process.argv[1]); console.log("loaded") } catch (e) { console.log(String(e)) }',
        join(dist, 'index.cjs'),
      ]),
    ).toBe('loaded');
  });

  it('a peer that is installed but broken fails as it is, not as a missing one', () => {
    const broken = new SyntaxError('Unexpected token in @cfworker/json-schema/dist/esm/index.js');
    expect(peerLoadError(broken)).toBe(broken);
    const other = Object.assign(new Error("Cannot find module './validate.js'"), { code: 'ERR_MODULE_NOT_FOUND' });
    expect(peerLoadError(other)).toBe(other);
  });
});
