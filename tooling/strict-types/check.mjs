// Compiles src/ (every entry point of every published package, through `import` and `require`)
// with tsconfig.json's strictest options and skipLibCheck false, and fails on any error in a
// declaration file of ours (packages/*/dist) or in src/. Errors inside third-party SDKs' own
// declaration files are listed but do not fail the check: no change of ours can fix them, and an
// app that hits them sets skipLibCheck for that SDK's sake, not ours. Then the Standard Schema type
// tests (src/standard-schema.test-d.mts, tsconfig.standard-schema.json) with TypeScript 5.9 and 7.
import { execFile } from 'node:child_process';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const config = ts.getParsedCommandLineOfConfigFile(
  join(here, 'tsconfig.json'),
  {},
  { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} },
);
if (!config) throw new Error('cannot read tsconfig.json');

// The Standard Schema type tests with TypeScript 7, the native compiler, which has no compiler API:
// its tsc binary, started now so that it runs beside the programs below.
const ts7 = join(here, 'node_modules', 'typescript-7');
const ts7Version = JSON.parse(ts.sys.readFile(join(ts7, 'package.json')) ?? '{}').version;
if (!ts7Version?.startsWith('7.')) throw new Error(`expected TypeScript 7 in ${ts7}, found ${ts7Version}`);
const ts7Run = new Promise((resolve) => {
  const args = [join(ts7, 'bin', 'tsc'), '-p', join(here, 'tsconfig.standard-schema.json'), '--pretty', 'false'];
  execFile(process.execPath, args, { cwd: here, encoding: 'utf8' }, (error, stdout, stderr) =>
    resolve({ code: error ? (error.code ?? error.signal ?? error.message) : 0, output: `${stdout}${stderr}` }),
  );
});

// Every program below reads mostly the same declaration files with the same options: parse each once.
const parsed = new Map();
const compilerHost = (options) => {
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile;
  host.getSourceFile = (fileName, target, ...rest) => {
    const key = `${fileName}\0${typeof target === 'object' ? `${target.languageVersion}:${target.impliedNodeFormat}` : target}`;
    let file = parsed.get(key);
    if (file === undefined) {
      file = getSourceFile(fileName, target, ...rest);
      if (file !== undefined) parsed.set(key, file);
    }
    return file;
  };
  return host;
};
for (const [name, expected] of [
  ['exactOptionalPropertyTypes', true],
  ['noUncheckedIndexedAccess', true],
  ['skipLibCheck', false],
]) {
  if (config.options[name] !== expected) throw new Error(`tsconfig.json must set ${name}: ${expected}`);
}
const program = ts.createProgram(config.fileNames, config.options, compilerHost(config.options));
const ours = (file) => {
  const path = relative(root, file).split(sep).join('/');
  return !path.includes('node_modules/.pnpm/') && (/^packages\/[^/]+\/dist\//.test(path) || path.startsWith('tooling/strict-types/src/'));
};
const checked = program.getSourceFiles().filter((f) => ours(f.fileName));
const packages = new Set(checked.map((f) => relative(root, f.fileName).split(sep).slice(0, 2).join('/')));
const all = ts.getPreEmitDiagnostics(program);
const host = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => root, getNewLine: () => '\n' };
const mine = all.filter((d) => d.file === undefined || ours(d.file.fileName));
const theirs = all.filter((d) => d.file !== undefined && !ours(d.file.fileName));
if (theirs.length) {
  const files = [...new Set(theirs.map((d) => relative(root, d.file.fileName).replace(/.*node_modules\//, '')))];
  console.log(`${theirs.length} error(s) in third-party declaration files, not ours (ignored):\n  ${files.join('\n  ')}`);
}
if (mine.length) {
  console.error(process.stdout.isTTY ? ts.formatDiagnosticsWithColorAndContext(mine, host) : ts.formatDiagnostics(mine, host));
  console.error(`${mine.length} error(s) in the declaration files of ctx packages under the strictest options.`);
  process.exit(1);
}

// @ctx/ai-sdk's peer range takes @ai-sdk/provider 2, 3 and 4, and its declaration files resolve
// `@ai-sdk/provider` to whichever major the app installed: compile them against each (the
// program above reads them with the package's own devDependency, the newest major).
const aiSdk = join(root, 'packages', 'ai-sdk');
for (const [major, dir] of [
  ['2', join(aiSdk, 'node_modules', '@ai-sdk', 'provider-v2')],
  ['3', join(here, 'node_modules', '@ai-sdk', 'provider')],
]) {
  const version = JSON.parse(ts.sys.readFile(join(dir, 'package.json')) ?? '{}').version;
  if (!version?.startsWith(`${major}.`)) throw new Error(`expected @ai-sdk/provider ${major} in ${dir}, found ${version}`);
  const roots = ['index.d.ts', 'index.d.cts'].map((file) => join(aiSdk, 'dist', file));
  const options = { ...config.options, paths: { '@ai-sdk/provider': [join(dir, 'dist', 'index.d.ts')] } };
  const errors = ts
    .getPreEmitDiagnostics(ts.createProgram(roots, options, compilerHost(options)))
    .filter((d) => d.file === undefined || ours(d.file.fileName));
  if (errors.length) {
    console.error(ts.formatDiagnostics(errors, host));
    console.error(`${errors.length} error(s) in @ctx/ai-sdk's declaration files with @ai-sdk/provider ${version}.`);
    process.exit(1);
  }
  console.log(`@ctx/ai-sdk's declaration files compile with @ai-sdk/provider ${version}.`);
}
// The Standard Schema type tests: every schema library's schemas go where ctx takes a Standard
// Schema, under tsconfig.json's options (skipLibCheck aside: the libraries' own declaration files
// are not what they test), with this TypeScript and with TypeScript 7.
const schemaConfig = ts.getParsedCommandLineOfConfigFile(
  join(here, 'tsconfig.standard-schema.json'),
  {},
  { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} },
);
if (!schemaConfig) throw new Error('cannot read tsconfig.standard-schema.json');
const schemaErrors = ts.getPreEmitDiagnostics(
  ts.createProgram(schemaConfig.fileNames, schemaConfig.options, compilerHost(schemaConfig.options)),
);
if (schemaErrors.length) {
  console.error(
    process.stdout.isTTY ? ts.formatDiagnosticsWithColorAndContext(schemaErrors, host) : ts.formatDiagnostics(schemaErrors, host),
  );
  console.error(`${schemaErrors.length} error(s) in the Standard Schema type tests with TypeScript ${ts.version}.`);
  process.exit(1);
}
const { code, output } = await ts7Run;
if (code !== 0) {
  console.error(output);
  console.error(`The Standard Schema type tests fail with TypeScript ${ts7Version} (exit ${code}).`);
  process.exit(1);
}
console.log(`The Standard Schema type tests (zod 4 and 3, valibot, arktype) compile with TypeScript ${ts.version} and ${ts7Version}.`);
console.log(
  `${checked.length} declaration files of ${packages.size - 1} packages compile under exactOptionalPropertyTypes, noUncheckedIndexedAccess and skipLibCheck false.`,
);
