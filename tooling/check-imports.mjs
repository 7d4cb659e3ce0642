#!/usr/bin/env node
// Checks the import graph of @ctx/core's sources (or of the directory given as the first
// argument) and exits 1 with a readable list when:
//   - files import each other in a cycle (type-only imports count: a cycle of types is still a
//     cycle in the design). Each strongly connected component is listed with cycles that cover
//     every import inside it, so each import that has to go is named at least once;
//   - a file under contracts/ imports anything outside contracts/ (relative or bare, node: modules too):
//     the contracts are a leaf that the rest of core builds on;
//   - a relative import resolves to no file (the graph would be missing an edge).
// Tests (*.test.ts, *.test-d.ts) are left out. Usage: node tooling/check-imports.mjs [src-dir]
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DEFAULT_ROOT = join(repoRoot, 'packages', 'core', 'src');
const SOURCE = /\.(ts|tsx|mts|cts)$/;
const TEST = /\.test(-d)?\.(ts|tsx|mts|cts)$/;

/** Every source file under `dir`, as absolute paths, sorted; node_modules and tests left out. */
function listSources(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules') out.push(...listSources(path));
    } else if (SOURCE.test(entry.name) && !TEST.test(entry.name)) {
      out.push(path);
    }
  }
  return out.sort();
}

/**
 * The module specifiers a file imports: `import`, `import type`, `export ... from`, `import()`
 * calls and `import('...')` types, `require`, triple-slash references. Each is marked
 * type-only when every mention of it is erased at run time (`import type`, `export type`,
 * `import('...')` in a type); `import { type A }` keeps a runtime import under
 * verbatimModuleSyntax, so it counts as a value import.
 */
export function listImports(text, fileName = 'file.ts') {
  const info = ts.preProcessFile(text, true, true);
  const specifiers = new Set(info.importedFiles.map((f) => f.fileName));
  for (const ref of info.referencedFiles) specifiers.add(ref.fileName.startsWith('.') ? ref.fileName : `./${ref.fileName}`);
  for (const ref of info.typeReferenceDirectives) specifiers.add(ref.fileName);

  const valueUses = new Set();
  const typeUses = new Set();
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const literal = (node) => (node && ts.isStringLiteralLike(node) ? node.text : undefined);
  const visit = (node) => {
    let spec;
    let typeOnly = false;
    if (ts.isImportDeclaration(node)) {
      spec = literal(node.moduleSpecifier);
      typeOnly = node.importClause?.isTypeOnly === true;
    } else if (ts.isExportDeclaration(node)) {
      spec = literal(node.moduleSpecifier);
      typeOnly = node.isTypeOnly;
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      spec = literal(node.moduleReference.expression);
      typeOnly = node.isTypeOnly;
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      spec = literal(node.argument.literal);
      typeOnly = true;
    } else if (
      ts.isCallExpression(node) &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require'))
    ) {
      spec = literal(node.arguments[0]);
    }
    if (spec !== undefined) {
      specifiers.add(spec);
      (typeOnly ? typeUses : valueUses).add(spec);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return [...specifiers].map((specifier) => ({ specifier, typeOnly: typeUses.has(specifier) && !valueUses.has(specifier) }));
}

const isRelative = (specifier) => specifier.startsWith('./') || specifier.startsWith('../') || specifier === '.' || specifier === '..';

/** The file a relative specifier names, as TypeScript with Bundler resolution finds it, or undefined. */
function resolveRelative(fromFile, specifier) {
  const base = resolve(dirname(fromFile), specifier);
  const candidates = [];
  const swapped = base
    .replace(/\.js$/, '.ts')
    .replace(/\.mjs$/, '.mts')
    .replace(/\.cjs$/, '.cts')
    .replace(/\.jsx$/, '.tsx');
  if (swapped !== base) candidates.push(swapped, swapped.replace(/\.ts$/, '.tsx'), swapped.replace(/\.(m|c)?ts$/, '.d.$1ts'));
  candidates.push(
    base,
    `${base}.ts`,
    `${base}.tsx`,
    `${base}.d.ts`,
    join(base, 'index.ts'),
    join(base, 'index.tsx'),
    join(base, 'index.d.ts'),
  );
  return candidates.find((c) => existsSync(c) && statSync(c).isFile());
}

/** Strongly connected components (Tarjan, iterative), each sorted, in a stable order. */
function stronglyConnected(nodes, adjacency) {
  const index = new Map();
  const low = new Map();
  const onStack = new Set();
  const stack = [];
  const components = [];
  let counter = 0;
  for (const start of nodes) {
    if (index.has(start)) continue;
    const work = [{ node: start, next: 0 }];
    index.set(start, counter);
    low.set(start, counter++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const targets = adjacency.get(frame.node);
      if (frame.next < targets.length) {
        const target = targets[frame.next++];
        if (!index.has(target)) {
          index.set(target, counter);
          low.set(target, counter++);
          stack.push(target);
          onStack.add(target);
          work.push({ node: target, next: 0 });
        } else if (onStack.has(target)) {
          low.set(frame.node, Math.min(low.get(frame.node), index.get(target)));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1].node;
        low.set(parent, Math.min(low.get(parent), low.get(frame.node)));
      }
      if (low.get(frame.node) === index.get(frame.node)) {
        const component = [];
        let member;
        do {
          member = stack.pop();
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        components.push(component.sort());
      }
    }
  }
  return components.sort((a, b) => (a[0] < b[0] ? -1 : 1));
}

/** Shortest path from `from` to `to` using only nodes of `within` (BFS), as a node list. */
function shortestPath(from, to, adjacency, within) {
  const previous = new Map([[from, null]]);
  const queue = [from];
  while (queue.length > 0) {
    const node = queue.shift();
    if (node === to) break;
    for (const next of adjacency.get(node)) {
      if (within.has(next) && !previous.has(next)) {
        previous.set(next, node);
        queue.push(next);
      }
    }
  }
  const path = [];
  for (let node = to; node !== null; node = previous.get(node)) path.unshift(node);
  return path;
}

/**
 * Cycles that together use every import inside one strongly connected component: for each
 * import a -> b not yet shown, a -> b followed by the shortest way back from b to a.
 */
function coveringCycles(component, adjacency) {
  const within = new Set(component);
  const covered = new Set();
  const cycles = [];
  for (const from of component) {
    for (const to of adjacency.get(from)) {
      if (!within.has(to) || covered.has(`${from}\0${to}`)) continue;
      const cycle = from === to ? [from, from] : [from, ...shortestPath(to, from, adjacency, within)];
      for (let i = 0; i + 1 < cycle.length; i++) covered.add(`${cycle[i]}\0${cycle[i + 1]}`);
      cycles.push(cycle);
    }
  }
  return cycles;
}

/**
 * Builds the import graph of the sources under `root` and checks it. Returns the counts and
 * every problem found; `ok` is true when there is none.
 */
export function checkImports(root, { specDir = 'contracts' } = {}) {
  const absoluteRoot = resolve(root);
  const spec = join(absoluteRoot, specDir);
  const name = (path) => relative(absoluteRoot, path).split(sep).join('/');
  const inside = (path, dir) => path === dir || path.startsWith(dir + sep);

  const files = listSources(absoluteRoot);
  const nodes = new Set(files);
  const adjacency = new Map(files.map((f) => [f, []]));
  const typeOnlyEdges = new Set();
  const unresolved = [];
  const specViolations = [];
  let edges = 0;

  for (const file of files) {
    const inSpec = inside(file, spec);
    for (const { specifier, typeOnly } of listImports(readFileSync(file, 'utf8'), file)) {
      const target = isRelative(specifier) ? resolveRelative(file, specifier) : undefined;
      if (isRelative(specifier) && target === undefined) unresolved.push({ file: name(file), specifier });
      if (inSpec) {
        const landing = isRelative(specifier) ? (target ?? resolve(dirname(file), specifier)) : undefined;
        if (landing === undefined || !inside(landing, spec)) {
          specViolations.push({
            file: name(file),
            specifier,
            target: landing && inside(landing, absoluteRoot) ? name(landing) : undefined,
          });
        }
      }
      if (target !== undefined && nodes.has(target) && !adjacency.get(file).includes(target)) {
        adjacency.get(file).push(target);
        if (typeOnly) typeOnlyEdges.add(`${file}\0${target}`);
        edges++;
      }
    }
  }
  for (const targets of adjacency.values()) targets.sort();

  const cycles = stronglyConnected(files, adjacency)
    .filter((component) => component.length > 1 || adjacency.get(component[0]).includes(component[0]))
    .map((component) => ({
      files: component.map(name),
      cycles: coveringCycles(component, adjacency).map((cycle) => ({
        path: cycle.map(name),
        typeOnly: cycle
          .slice(0, -1)
          .flatMap((from, i) => (typeOnlyEdges.has(`${from}\0${cycle[i + 1]}`) ? [`${name(from)} -> ${name(cycle[i + 1])}`] : [])),
      })),
    }));

  return {
    ok: cycles.length === 0 && specViolations.length === 0 && unresolved.length === 0,
    files: files.length,
    edges,
    typeOnlyEdges: typeOnlyEdges.size,
    cycles,
    specViolations,
    unresolved,
  };
}

/** The report `checkImports` results print as, one problem per line. */
export function formatReport(result, label) {
  const lines = [];
  const counts = `${result.files} files, ${result.edges} import edges (${result.typeOnlyEdges} type-only)`;
  if (result.ok) return `check-imports: OK ${label}: ${counts}, no cycles, contracts/ imports nothing outside contracts/`;
  lines.push(`check-imports: FAIL ${label}: ${counts}`);
  if (result.cycles.length > 0) {
    const cycleCount = result.cycles.reduce((n, c) => n + c.cycles.length, 0);
    lines.push('', `Import cycles: ${result.cycles.length} group(s) of files that import each other, ${cycleCount} cycle(s) shown`);
    lines.push('(type imports count too; break each cycle by moving what both sides need into a module both import)');
    result.cycles.forEach((group, i) => {
      lines.push(`  group ${i + 1}, ${group.files.length} file(s): ${group.files.join(', ')}`);
      for (const cycle of group.cycles) {
        const all = cycle.typeOnly.length === cycle.path.length - 1;
        const note = all ? '   [every import type-only]' : cycle.typeOnly.length > 0 ? `   [type-only: ${cycle.typeOnly.join(', ')}]` : '';
        lines.push(`    ${cycle.path.join(' -> ')}${note}`);
      }
    });
  }
  if (result.specViolations.length > 0) {
    lines.push(
      '',
      `contracts/ imports from outside contracts/ (${result.specViolations.length}): the contracts must import nothing else, not even node: modules`,
    );
    for (const v of result.specViolations) lines.push(`  ${v.file} imports '${v.specifier}'${v.target ? ` (${v.target})` : ''}`);
  }
  if (result.unresolved.length > 0) {
    lines.push('', `Relative imports that resolve to no file (${result.unresolved.length}):`);
    for (const u of result.unresolved) lines.push(`  ${u.file} imports '${u.specifier}'`);
  }
  return lines.join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const root = process.argv[2] ? resolve(process.argv[2]) : DEFAULT_ROOT;
  if (!existsSync(root) || !statSync(root).isDirectory()) {
    console.error(`check-imports: ${root} is not a directory. Usage: node tooling/check-imports.mjs [src-dir]`);
    process.exit(2);
  }
  const result = checkImports(root);
  const label = root.startsWith(repoRoot + sep) ? relative(repoRoot, root).split(sep).join('/') : root;
  const report = formatReport(result, label);
  if (result.ok) console.log(report);
  else console.error(report);
  process.exit(result.ok ? 0 : 1);
}
