// Type-checks every TypeScript code block of the documentation (README.md and docs/**/*.md, not
// the generated docs/api/):
//
//   npm run build && npm run docs:snippets
//
// Each ```ts / ```typescript block becomes its own module file in .snippets/ (gitignored) and all
// of them are compiled at once with .snippets/tsconfig.json (strict, ES2022, module preserve,
// moduleResolution bundler, legacy decorators with metadata). As .snippets/ sits inside the
// package, `import … from 'redlimit'` and `'redlimit/nest'` resolve through package.json
// "exports" (self-reference) to the BUILT dist/*.d.ts, as they would for a user; every other import
// comes from the repo's node_modules. A block that is deliberately a fragment is skipped when the
// line right above its opening fence (blank lines aside) is
//
//   <!-- snippet: partial -->
//
// Every diagnostic is printed as `docs/x.md:LINE:COL - error TSnnnn: message`, LINE being the
// line of the markdown file. Exit 1 on any diagnostic, on a missing dist/, or when no block is found.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';

/** The comment that, right above an opening fence, exempts its block from the check. */
export const PARTIAL_MARKER = /^<!--\s*snippet:\s*partial\s*-->$/;

/** Compiler options of the generated tsconfig.json (as JSON, the way tsc reads them). */
export const SNIPPET_COMPILER_OPTIONS = {
  strict: true,
  target: 'ES2022',
  module: 'preserve',
  moduleResolution: 'bundler',
  experimentalDecorators: true,
  emitDecoratorMetadata: true,
  skipLibCheck: true,
  noEmit: true,
  types: ['node'],
  lib: ['ES2022'],
} as const;

/** One fenced TypeScript block of a markdown file. */
export interface Snippet {
  /** The markdown file, as given to {@link extractSnippets}. */
  file: string;
  /** 1-based line, in the markdown file, of the block's first code line (the one after the fence). */
  line: number;
  /** The code, with the fence's indentation removed. */
  code: string;
  /** Whether `<!-- snippet: partial -->` marks the block as a fragment (not checked). */
  partial: boolean;
}

/** A compiler diagnostic, placed in the markdown file its snippet came from. */
export interface SnippetDiagnostic {
  /** The markdown file (or, for a diagnostic outside any snippet, the file TypeScript named). */
  file: string;
  /** 1-based line in that file (0 when TypeScript gave no position). */
  line: number;
  /** 1-based column (0 when TypeScript gave no position). */
  column: number;
  /** `TS` and the diagnostic's code, e.g. `TS2304`. */
  code: string;
  /** The message, its chain flattened. */
  message: string;
}

/** What {@link checkSnippets} found. */
export interface CheckResult {
  /** Every block found, checked or partial. */
  snippets: Snippet[];
  /** The errors, sorted by file and line. */
  diagnostics: SnippetDiagnostic[];
}

const FENCE_OPEN = /^([ \t]*)(`{3,}|~{3,})[ \t]*([^\s`{]*)/;

/**
 * Finds the fenced code blocks of `markdown` whose info string starts with `ts` or `typescript`.
 * Blocks of other languages (and anything inside them, such as a ```ts inside a ````md example) are
 * passed over; a block's indentation (inside a list item) is removed from its lines.
 */
export function extractSnippets(markdown: string, file: string): Snippet[] {
  const lines = markdown.split(/\r?\n/);
  const snippets: Snippet[] = [];
  let previousNonEmpty = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const open = FENCE_OPEN.exec(line);
    if (!open) {
      if (line.trim() !== '') previousNonEmpty = line.trim();
      continue;
    }
    const indent = open[1] ?? '';
    const fence = open[2] ?? '```';
    const language = (open[3] ?? '').toLowerCase();
    const closing = new RegExp(`^\\s*${fence[0] === '`' ? '`' : '~'}{${fence.length},}\\s*$`);
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !closing.test(lines[j] ?? ''); j++) {
      const codeLine = lines[j] ?? '';
      body.push(codeLine.startsWith(indent) ? codeLine.slice(indent.length) : codeLine.trimStart());
    }
    if (language === 'ts' || language === 'typescript') {
      snippets.push({
        file,
        line: i + 2,
        code: body.join('\n'),
        partial: PARTIAL_MARKER.test(previousNonEmpty),
      });
    }
    previousNonEmpty = lines[j]?.trim() ?? '';
    i = j;
  }
  return snippets;
}

/** README.md and every docs/**\/*.md except docs/api/ (the generated reference), repo-relative. */
export function findMarkdownFiles(root: string): string[] {
  const files: string[] = [];
  if (fs.existsSync(path.join(root, 'README.md'))) files.push('README.md');
  const walk = (dir: string): void => {
    const entries = fs.readdirSync(path.join(root, dir), { withFileTypes: true });
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      const relative = path.posix.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (relative !== 'docs/api' && entry.name !== 'node_modules') walk(relative);
      } else if (entry.isFile() && entry.name.endsWith('.md')) {
        files.push(relative);
      }
    }
  };
  if (fs.existsSync(path.join(root, 'docs'))) walk('docs');
  return files;
}

/** Where a generated module file came from. */
interface Origin {
  snippet: Snippet;
}

/**
 * Writes each non-partial snippet of `files` (paths relative to `root`) to `outDir` (emptied
 * first) as a module, with a tsconfig.json, compiles them all in one program and returns the
 * errors placed on markdown lines. `outDir` must lie inside the package (for the self-reference)
 * and under a directory whose node_modules holds the imports and @types/node.
 */
export function checkSnippets(root: string, files: string[], outDir: string): CheckResult {
  const snippets = files.flatMap((file) =>
    extractSnippets(fs.readFileSync(path.join(root, file), 'utf8'), file),
  );
  fs.rmSync(outDir, { recursive: true, force: true });
  fs.mkdirSync(outDir, { recursive: true });

  const origins = new Map<string, Origin>();
  const names: string[] = [];
  for (const snippet of snippets) {
    if (snippet.partial) continue;
    const base = snippet.file.replace(/\.md$/, '').replace(/[^A-Za-z0-9]+/g, '_');
    const name = `${base}_L${snippet.line}.ts`;
    const fullPath = path.join(outDir, name);
    // `export {}` last, so that the code keeps its line numbers and a block without imports is
    // still a module (its names do not collide with the other blocks').
    fs.writeFileSync(fullPath, `${snippet.code}\nexport {};\n`);
    origins.set(path.resolve(fullPath), { snippet });
    names.push(name);
  }
  const configPath = path.join(outDir, 'tsconfig.json');
  fs.writeFileSync(
    configPath,
    `${JSON.stringify({ compilerOptions: SNIPPET_COMPILER_OPTIONS, files: names }, null, 2)}\n`,
  );
  if (names.length === 0) return { snippets, diagnostics: [] };

  const configDiagnostics: ts.Diagnostic[] = [];
  const parsed = ts.getParsedCommandLineOfConfigFile(
    configPath,
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => configDiagnostics.push(diagnostic),
    },
  );
  if (!parsed) return { snippets, diagnostics: configDiagnostics.map((d) => place(d, origins)) };
  const program = ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options });
  const diagnostics = [...parsed.errors, ...ts.getPreEmitDiagnostics(program)]
    .filter((d) => d.category === ts.DiagnosticCategory.Error)
    .map((d) => place(d, origins))
    .sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line || a.column - b.column);
  return { snippets, diagnostics };
}

/** Places a diagnostic on the markdown line of its snippet (or leaves it where TypeScript put it). */
function place(diagnostic: ts.Diagnostic, origins: Map<string, Origin>): SnippetDiagnostic {
  const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
  const code = `TS${diagnostic.code}`;
  const source = diagnostic.file;
  if (!source || diagnostic.start === undefined) {
    return { file: source?.fileName ?? '(compiler)', line: 0, column: 0, code, message };
  }
  const { line, character } = source.getLineAndCharacterOfPosition(diagnostic.start);
  const origin = origins.get(path.resolve(source.fileName));
  if (!origin)
    return { file: source.fileName, line: line + 1, column: character + 1, code, message };
  // Columns are those of the de-indented code; the snippet's own line numbers stay exact.
  return {
    file: origin.snippet.file,
    line: origin.snippet.line + line,
    column: character + 1,
    code,
    message,
  };
}

/**
 * Where `specifier` resolves from a file of `outDir` under the snippet options: used to make sure
 * 'redlimit' means the built dist/, not lib/ or a copy in node_modules.
 */
export function resolveFromSnippets(specifier: string, outDir: string): string | undefined {
  const options = ts.convertCompilerOptionsFromJson(SNIPPET_COMPILER_OPTIONS, outDir).options;
  const containing = path.join(outDir, 'resolution-probe.ts');
  return ts.resolveModuleName(specifier, containing, options, ts.sys).resolvedModule
    ?.resolvedFileName;
}

function main(): number {
  const started = Date.now();
  const root = path.resolve(__dirname, '..');
  const outDir = path.join(root, '.snippets');
  const entries = { redlimit: 'dist/index.d.ts', 'redlimit/nest': 'dist/nest/index.d.ts' };
  const missing = Object.values(entries).filter((file) => !fs.existsSync(path.join(root, file)));
  if (missing.length > 0) {
    console.error(`docs:snippets: ${missing.join(', ')} missing: run npm run build first`);
    return 1;
  }
  for (const [specifier, file] of Object.entries(entries)) {
    const resolved = resolveFromSnippets(specifier, outDir);
    const expected = path.join(root, file);
    if (!resolved || path.resolve(resolved) !== expected) {
      console.error(
        `docs:snippets: '${specifier}' resolves to ${resolved ?? 'nothing'}, not ${expected}`,
      );
      return 1;
    }
  }

  const files = findMarkdownFiles(root);
  const { snippets, diagnostics } = checkSnippets(root, files, outDir);
  for (const file of files) {
    const own = snippets.filter((s) => s.file === file);
    if (own.length === 0) continue;
    const partial = own.filter((s) => s.partial).length;
    const failing = new Set(diagnostics.filter((d) => d.file === file).map(blockOf(own))).size;
    console.log(
      `${file}: ${own.length - partial} checked, ${partial} skipped (partial)` +
        (failing > 0 ? `, ${failing} failing` : ''),
    );
  }
  for (const d of diagnostics) {
    console.error(`${d.file}:${d.line}:${d.column} - error ${d.code}: ${d.message}`);
  }
  const checked = snippets.filter((s) => !s.partial).length;
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (snippets.length === 0) {
    console.error('docs:snippets: no ```ts block found in README.md or docs/');
    return 1;
  }
  if (diagnostics.length > 0) {
    const blocks = new Set(diagnostics.map((d) => `${d.file}:${blockOf(snippets)(d)}`)).size;
    console.error(
      `docs:snippets: ${diagnostics.length} error(s) in ${blocks} of ${checked} block(s) (${seconds} s)`,
    );
    return 1;
  }
  console.log(`docs:snippets: ${checked} block(s) compile (${seconds} s)`);
  return 0;
}

/** The start line of the snippet (among `snippets`) a diagnostic falls in. */
function blockOf(snippets: Snippet[]): (d: SnippetDiagnostic) => number {
  return (d) => {
    let start = 0;
    for (const s of snippets) if (s.file === d.file && s.line <= d.line) start = s.line;
    return start;
  };
}

if (require.main === module) process.exitCode = main();
