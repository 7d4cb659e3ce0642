import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';

/** One ```ts block of a README. */
export interface DocBlock {
  /** The README, relative to the repository root. */
  readme: string;
  /** Line of the block's first code line in the README (1-based). */
  line: number;
  /** The code. */
  code: string;
  /** Marked ```ts runnable: the test runs it against the local servers. */
  runnable: boolean;
  /** Names its `// uses: a, b (from above)` comment takes from earlier blocks of the same README. */
  uses: string[];
  /** Top-level names the block declares (imports included), and whether each is a type only. */
  declares: Map<string, 'value' | 'type'>;
  /** The generated module, absolute. */
  file: string;
  /** Lines put before the code in the generated module (imports of the names it uses). */
  offset: number;
}

/** A README's blocks and the packages its install lines install. */
export interface DocReadme {
  readme: string;
  blocks: DocBlock[];
  /** Packages named by `npm install` / `pnpm add` / `yarn add` lines in its ```sh blocks. */
  installs: Set<string>;
  /** Packages its blocks import (bare specifiers, `node:` built-ins left out). */
  imports: Set<string>;
  /** What is wrong with its `// uses:` comments. */
  problems: string[];
}

const FENCE = /^```(\w+)?([^\n]*)$/;
const USES = /^\/\/\s*uses:\s*([^(\n]*)/;
const INSTALL = /\b(?:npm (?:install|i|add)|pnpm add|yarn add)\s+([^\n#]+)/g;

/** Every README.md of the repository: the root's and those one folder below packages/, examples/, tooling/ and bench/. */
export function findReadmes(root: string): string[] {
  const found = ['README.md'];
  for (const group of ['packages', 'examples', 'tooling']) {
    const dir = join(root, group);
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir).sort()) {
      if (existsSync(join(dir, name, 'README.md'))) found.push(`${group}/${name}/README.md`);
    }
  }
  if (existsSync(join(root, 'bench', 'README.md'))) found.push('bench/README.md');
  return found;
}

/** Reads a README's blocks and install lines; `out` is where its generated modules go. */
export function readReadme(root: string, readme: string, out: string): DocReadme {
  const lines = readFileSync(join(root, readme), 'utf8').split('\n');
  const slug = readme.replace(/\/?README\.md$/, '').replace(/[^\w-]+/g, '_') || 'root';
  const blocks: DocBlock[] = [];
  const installs = new Set<string>();
  for (let i = 0; i < lines.length; i++) {
    const fence = FENCE.exec(lines[i] ?? '');
    if (!fence) continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && !/^```\s*$/.test(lines[end] ?? '')) end++;
    const code = lines.slice(start, end).join('\n');
    const lang = fence[1] ?? '';
    if (lang === 'ts' || lang === 'typescript') {
      const uses =
        USES.exec(code.trimStart())?.[1]
          ?.split(',')
          .map((name) => name.trim())
          .filter(Boolean) ?? [];
      blocks.push({
        readme,
        line: start + 1,
        code,
        runnable: /\brunnable\b/.test(fence[2] ?? ''),
        uses,
        declares: topLevelNames(code),
        file: join(out, slug, `block-${start + 1}.ts`),
        offset: 0,
      });
    } else if (lang === 'sh' || lang === 'bash' || lang === 'shell') {
      for (const match of code.matchAll(INSTALL)) {
        for (const word of (match[1] ?? '').trim().split(/\s+/)) {
          if (!word.startsWith('-')) installs.add(packageName(word.replace(/(.)@[^/@]*$/, '$1')));
        }
      }
    }
    i = end;
  }
  const imports = new Set<string>();
  for (const block of blocks) for (const specifier of importedSpecifiers(block.code)) imports.add(packageName(specifier));
  return { readme, blocks, installs, imports, problems: [] };
}

/** Writes each block as a module: the names it uses imported from the earlier blocks that declare them, and what later blocks use exported. */
export function writeModules(doc: DocReadme): void {
  const exported = new Map<DocBlock, Set<string>>();
  const headers = new Map<DocBlock, string[]>();
  for (const [index, block] of doc.blocks.entries()) {
    const from = new Map<DocBlock, string[]>();
    for (const name of block.uses) {
      const source = doc.blocks
        .slice(0, index)
        .reverse()
        .find((b) => b.declares.has(name));
      if (!source) {
        doc.problems.push(`${doc.readme}:${block.line}: uses \`${name}\`, but no earlier block declares it`);
        continue;
      }
      from.set(source, [...(from.get(source) ?? []), name]);
      exported.set(source, (exported.get(source) ?? new Set()).add(name));
    }
    const header = [...from].map(([source, names]) => {
      const list = names.map((name) => (source.declares.get(name) === 'type' ? `type ${name}` : name)).join(', ');
      return `import { ${list} } from './${relative(dirname(block.file), source.file).replace(/\.ts$/, '.js')}';`;
    });
    block.offset = header.length;
    headers.set(block, header);
  }
  for (const block of doc.blocks) {
    // A name the block exports itself (a module shown whole) is not exported twice.
    const own = exportedNames(block.code);
    const names = [...(exported.get(block) ?? [])].filter((name) => !own.has(name));
    const list = names.map((name) => (block.declares.get(name) === 'type' ? `type ${name}` : name)).join(', ');
    const text = [...(headers.get(block) ?? []), block.code, names.length > 0 ? `export { ${list} };` : 'export {};', ''].join('\n');
    mkdirSync(dirname(block.file), { recursive: true });
    writeFileSync(block.file, text);
  }
}

/** Removes the generated modules. */
export function clean(out: string): void {
  rmSync(out, { recursive: true, force: true });
}

/** Type-checks every generated module in one program; the diagnostics of each block, as `README:line: message`. */
export function typeCheck(docs: DocReadme[], tsconfig: string): Map<DocBlock, string[]> {
  const config = ts.getParsedCommandLineOfConfigFile(tsconfig, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
  if (!config) throw new Error(`cannot read ${tsconfig}`);
  const blocks = docs.flatMap((doc) => doc.blocks);
  const program = ts.createProgram({ rootNames: blocks.map((b) => b.file), options: { ...config.options, noEmit: true } });
  const result = new Map<DocBlock, string[]>();
  for (const block of blocks) {
    const source = program.getSourceFile(block.file);
    const diagnostics = source
      ? [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]
      : [{ messageText: 'not in the program', start: undefined } as unknown as ts.Diagnostic];
    result.set(
      block,
      diagnostics.map((d) => {
        const at = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line - block.offset : 0;
        return `${block.readme}:${block.line + at}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
      }),
    );
  }
  return result;
}

/** The npm package a module specifier names (`@scope/name/sub` -> `@scope/name`). */
export function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

function importedSpecifiers(code: string): string[] {
  const source = ts.createSourceFile('block.ts', code, ts.ScriptTarget.ES2022, false, ts.ScriptKind.TS);
  const found: string[] = [];
  for (const statement of source.statements) {
    if ((ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) && statement.moduleSpecifier) {
      const text = (statement.moduleSpecifier as ts.StringLiteral).text;
      if (!text.startsWith('.') && !text.startsWith('node:')) found.push(text);
    }
  }
  return found;
}

function topLevelNames(code: string): Map<string, 'value' | 'type'> {
  const source = ts.createSourceFile('block.ts', code, ts.ScriptTarget.ES2022, false, ts.ScriptKind.TS);
  const names = new Map<string, 'value' | 'type'>();
  const bind = (name: ts.BindingName): void => {
    if (ts.isIdentifier(name)) names.set(name.text, 'value');
    else for (const element of name.elements) if (!ts.isOmittedExpression(element)) bind(element.name);
  };
  for (const statement of source.statements) {
    if (ts.isVariableStatement(statement)) for (const d of statement.declarationList.declarations) bind(d.name);
    else if (
      (ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement) || ts.isEnumDeclaration(statement)) &&
      statement.name
    ) {
      names.set(statement.name.text, 'value');
    } else if ((ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement)) && statement.name) {
      names.set(statement.name.text, 'type');
    } else if (ts.isImportDeclaration(statement) && statement.importClause) {
      const clause = statement.importClause;
      const kind = clause.isTypeOnly ? 'type' : 'value';
      if (clause.name) names.set(clause.name.text, kind);
      const bindings = clause.namedBindings;
      if (bindings && ts.isNamespaceImport(bindings)) names.set(bindings.name.text, kind);
      if (bindings && ts.isNamedImports(bindings)) {
        for (const element of bindings.elements) names.set(element.name.text, element.isTypeOnly ? 'type' : kind);
      }
    }
  }
  return names;
}

/** The top-level names a block declares with an `export` modifier of its own. */
function exportedNames(code: string): Set<string> {
  const source = ts.createSourceFile('block.ts', code, ts.ScriptTarget.ES2022, false, ts.ScriptKind.TS);
  const names = new Set<string>();
  for (const statement of source.statements) {
    if (!ts.canHaveModifiers(statement) || !ts.getModifiers(statement)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) continue;
    if (ts.isVariableStatement(statement)) {
      for (const d of statement.declarationList.declarations) if (ts.isIdentifier(d.name)) names.add(d.name.text);
    } else if (
      (ts.isFunctionDeclaration(statement) ||
        ts.isClassDeclaration(statement) ||
        ts.isEnumDeclaration(statement) ||
        ts.isInterfaceDeclaration(statement) ||
        ts.isTypeAliasDeclaration(statement)) &&
      statement.name
    ) {
      names.add(statement.name.text);
    }
  }
  return names;
}

/**
 * Runs a block's module with tsx (resolved from `cwd`) in a child process; kills it (by its pid)
 * after `timeoutMs`, so a block that hangs fails with its output instead of holding the run.
 */
export function runBlock(
  file: string,
  { cwd, env, timeoutMs }: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<{ code: number | null; output: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, output });
    });
  });
}
