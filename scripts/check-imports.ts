// Checks the import graph of lib/ (run by `npm run lint`):
//
//   npm run lint:imports
//
// 1. No cycles: every import between two files of lib/ counts (`import`, `import type`,
//    `export … from`, `import()`, `require()`), so a cycle through types is one too: it ties the
//    files together as much as a runtime one does.
// 2. The framework-free folders (lib/core, lib/stores, lib/http, lib/config, lib/metrics,
//    lib/client, lib/cli, lib/board) never load NestJS: no file they import at run time, directly or
//    through other files of lib/, imports `@nestjs/*` for more than types (ESLint's
//    `no-restricted-imports` in eslint.config.mjs sees direct imports only), so they run without
//    Nest installed.
//
// Every problem is printed as one line; exit 1 on any.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';

/** The folders of lib/ that must never reach NestJS, directly or through other files. */
export const FRAMEWORK_FREE = [
  'core',
  'stores',
  'http',
  'config',
  'metrics',
  'client',
  'cli',
  'board',
] as const;

/** Package names a framework-free file must never reach. */
export const NEST_PACKAGE = /^@nestjs\//;

/** One file of the graph and what it imports. */
export interface ModuleNode {
  /** Files of the graph it imports (paths relative to the root, `/`-separated). */
  readonly files: string[];
  /** Packages it imports (bare specifiers as written, e.g. `@nestjs/common`). */
  readonly packages: string[];
  /** The part of {@link ModuleNode.files} imported for more than types (loaded at run time). */
  readonly runtimeFiles: string[];
  /** The part of {@link ModuleNode.packages} imported for more than types. */
  readonly runtimePackages: string[];
}

/** A module a file imports, and whether only types come from it (erased from the JavaScript). */
export interface ImportSpecifier {
  /** The specifier as written. */
  readonly specifier: string;
  /** `import type`, `export type`, every name marked `type`, or an `import('…')` type. */
  readonly typeOnly: boolean;
}

/** Whether an import or export declaration brings in types only. */
function isTypeOnly(node: ts.ImportDeclaration | ts.ExportDeclaration): boolean {
  if (ts.isExportDeclaration(node)) {
    if (node.isTypeOnly) return true;
    const clause = node.exportClause;
    return (
      !!clause &&
      ts.isNamedExports(clause) &&
      clause.elements.length > 0 &&
      clause.elements.every((element) => element.isTypeOnly)
    );
  }
  const clause = node.importClause;
  if (!clause) return false; // a side-effect import
  if (clause.isTypeOnly) return true;
  const bindings = clause.namedBindings;
  return (
    !clause.name &&
    !!bindings &&
    ts.isNamedImports(bindings) &&
    bindings.elements.length > 0 &&
    bindings.elements.every((element) => element.isTypeOnly)
  );
}

/** The modules a file imports: static, type-only, re-exports, `import()` and `require()`. */
export function importSpecifiers(source: string, fileName: string): ImportSpecifier[] {
  const sourceFile = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true);
  const specifiers: ImportSpecifier[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      specifiers.push({ specifier: node.moduleSpecifier.text, typeOnly: isTypeOnly(node) });
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      ts.isStringLiteral(node.moduleReference.expression)
    ) {
      specifiers.push({
        specifier: node.moduleReference.expression.text,
        typeOnly: node.isTypeOnly,
      });
    } else if (
      ts.isCallExpression(node) &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(node.expression) && node.expression.text === 'require')) &&
      node.arguments.length === 1 &&
      ts.isStringLiteralLike(node.arguments[0]!)
    ) {
      specifiers.push({ specifier: node.arguments[0].text, typeOnly: false });
    } else if (ts.isImportTypeNode(node)) {
      const argument = node.argument;
      if (ts.isLiteralTypeNode(argument) && ts.isStringLiteral(argument.literal)) {
        specifiers.push({ specifier: argument.literal.text, typeOnly: true });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sourceFile);
  return specifiers;
}

/** Every `.ts` file under `dir` (relative to `root`), sorted. */
export function listSources(root: string, dir: string): string[] {
  const found: string[] = [];
  const walk = (relative: string): void => {
    for (const entry of fs.readdirSync(path.join(root, relative), { withFileTypes: true })) {
      const child = path.posix.join(relative, entry.name);
      if (entry.isDirectory()) walk(child);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) found.push(child);
    }
  };
  walk(dir);
  return found.sort();
}

/**
 * The import graph of the given files: a relative specifier resolves to `x.ts` or `x/index.ts`
 * among them; anything else that is not a Node built-in is a package.
 */
export function buildGraph(root: string, files: readonly string[]): Map<string, ModuleNode> {
  const known = new Set(files);
  const graph = new Map<string, ModuleNode>();
  for (const file of files) {
    const node: ModuleNode = { files: [], packages: [], runtimeFiles: [], runtimePackages: [] };
    const add = (list: string[], item: string) => {
      if (!list.includes(item)) list.push(item);
    };
    const source = fs.readFileSync(path.join(root, file), 'utf8');
    for (const { specifier, typeOnly } of importSpecifiers(source, file)) {
      if (specifier.startsWith('.')) {
        const base = path.posix.join(path.posix.dirname(file), specifier);
        const target = [base, `${base}.ts`, `${base}/index.ts`].find((c) => known.has(c));
        if (!target) continue;
        add(node.files, target);
        if (!typeOnly) add(node.runtimeFiles, target);
      } else if (!specifier.startsWith('node:')) {
        add(node.packages, specifier);
        if (!typeOnly) add(node.runtimePackages, specifier);
      }
    }
    graph.set(file, node);
  }
  return graph;
}

/**
 * The cycles of the graph: each strongly connected component of more than one file (or a file
 * importing itself), as one cycle through it, starting at its first file in sorted order.
 */
export function findCycles(graph: ReadonlyMap<string, ModuleNode>): string[][] {
  // Tarjan's algorithm, iterative enough for a source tree (recursion depth = longest chain).
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const connect = (file: string): void => {
    index.set(file, counter);
    low.set(file, counter);
    counter += 1;
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file)?.files ?? []) {
      if (!index.has(next)) {
        connect(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file)!, index.get(next)!));
      }
    }
    if (low.get(file) === index.get(file)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== file);
      const selfLoop = graph.get(file)?.files.includes(file) ?? false;
      if (component.length > 1 || selfLoop) components.push(component.sort());
    }
  };
  for (const file of [...graph.keys()].sort()) if (!index.has(file)) connect(file);
  return components.map((component) => cycleThrough(graph, component)).sort();
}

/** One cycle inside a strongly connected component, as a path that ends where it starts. */
function cycleThrough(graph: ReadonlyMap<string, ModuleNode>, component: string[]): string[] {
  const inside = new Set(component);
  const start = component[0]!;
  // Breadth-first from start's successors back to start: the shortest cycle through it.
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const file = queue.shift()!;
    for (const next of graph.get(file)?.files ?? []) {
      if (!inside.has(next)) continue;
      if (next === start) {
        const between: string[] = [];
        for (let at = file; at !== start; at = previous.get(at)!) between.unshift(at);
        return [start, ...between, start];
      }
      if (!previous.has(next)) {
        previous.set(next, file);
        queue.push(next);
      }
    }
  }
  return [start, start];
}

/**
 * The files of `folders` (under `lib/`) that load a package matching `forbidden` at run time,
 * directly or through other files (imports of types only are erased, so they are not followed),
 * each with the chain of imports that gets there (the file, the files between, the package).
 */
export function forbiddenReaches(
  graph: ReadonlyMap<string, ModuleNode>,
  folders: readonly string[],
  forbidden: RegExp,
): string[][] {
  const chains: string[][] = [];
  const prefixes = folders.map((folder) => `lib/${folder}/`);
  for (const start of [...graph.keys()].sort()) {
    if (!prefixes.some((prefix) => start.startsWith(prefix))) continue;
    const previous = new Map<string, string>([[start, start]]);
    const queue = [start];
    let chain: string[] | undefined;
    while (queue.length > 0 && !chain) {
      const file = queue.shift()!;
      const node = graph.get(file);
      const hit = node?.runtimePackages.find((name) => forbidden.test(name));
      if (hit) {
        chain = [hit];
        for (let at = file; ; at = previous.get(at)!) {
          chain.unshift(at);
          if (at === start) break;
        }
        break;
      }
      for (const next of node?.runtimeFiles ?? []) {
        if (!previous.has(next)) {
          previous.set(next, file);
          queue.push(next);
        }
      }
    }
    if (chain) chains.push(chain);
  }
  return chains;
}

/** Runs both checks on `root`'s lib/ and returns the problems, one line each. */
export function checkImports(root: string): string[] {
  const graph = buildGraph(root, listSources(root, 'lib'));
  const problems: string[] = [];
  for (const cycle of findCycles(graph)) problems.push(`import cycle: ${cycle.join(' -> ')}`);
  for (const chain of forbiddenReaches(graph, FRAMEWORK_FREE, NEST_PACKAGE)) {
    problems.push(`framework-free file loads NestJS: ${chain.join(' -> ')}`);
  }
  return problems;
}

if (require.main === module) {
  const root = path.resolve(__dirname, '..');
  const problems = checkImports(root);
  for (const problem of problems) console.error(problem);
  if (problems.length > 0) {
    console.error(`lint:imports: ${problems.length} problem(s)`);
    process.exit(1);
  }
  console.log(
    `lint:imports: ${listSources(root, 'lib').length} files of lib/, no cycle, no NestJS in ${FRAMEWORK_FREE.map((f) => `lib/${f}`).join(', ')}`,
  );
}
