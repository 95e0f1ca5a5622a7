/**
 * The workers as plain JavaScript: the orchestrator transpiles `lib/` and the bench code they run
 * once (the TypeScript compiler is loaded in it already) into a scratch directory, instead of
 * each worker loading the compiler and transpiling the same files again (about 4 s of CPU each,
 * 15 s under load). `node_modules` and `lua` are linked in, so modules resolve and the store finds its
 * scripts as it does from the checkout. With a revision, `lib/` and `lua/` come from that commit
 * (`git archive`), so a run measures committed code while the work tree changes; the bench itself
 * always comes from the work tree.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, symlinkSync, writeFileSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import * as ts from 'typescript';

const REPO = join(__dirname, '..', '..');
const BENCH_SOURCES = [join('bench', 'chaos'), join('bench', 'support')];

function typescriptFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return typescriptFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/**
 * Transpiles the sources into `outDir`; returns the path of the worker's JavaScript. With
 * `revision`, `lib/` and `lua/` are taken from that commit.
 */
export function compileWorker(outDir: string, revision?: string): string {
  const compilerOptions: ts.CompilerOptions = {
    module: ts.ModuleKind.CommonJS,
    target: ts.ScriptTarget.ES2022,
    esModuleInterop: true,
    experimentalDecorators: true,
    emitDecoratorMetadata: true,
    inlineSourceMap: true,
  };
  mkdirSync(outDir, { recursive: true });
  const bench = BENCH_SOURCES.map((dir) => join(REPO, dir));
  let sources = [join(REPO, 'lib'), ...bench];
  if (revision) {
    const archive = execFileSync('git', ['archive', '--format=tar', revision, 'lib', 'lua'], {
      cwd: REPO,
      maxBuffer: 64 * 1024 * 1024,
    });
    execFileSync('tar', ['-x', '-C', outDir], { input: archive });
    sources = [join(outDir, 'lib'), ...bench];
  }
  for (const file of sources.flatMap(typescriptFiles)) {
    const root = file.startsWith(outDir) ? outDir : REPO;
    const out = join(outDir, relative(root, file)).replace(/\.ts$/, '.js');
    const { outputText } = ts.transpileModule(readFileSync(file, 'utf8'), {
      compilerOptions,
      fileName: file,
    });
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, outputText);
  }
  symlinkSync(join(REPO, 'node_modules'), join(outDir, 'node_modules'), 'dir');
  if (!revision) symlinkSync(join(REPO, 'lua'), join(outDir, 'lua'), 'dir');
  return join(outDir, 'bench', 'chaos', 'worker.js');
}
