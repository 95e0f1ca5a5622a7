/**
 * Runs the `redlimit` command as a process, as an operator runs the bin. The sources under lib/
 * are transpiled once per test worker (as the build does, without type-checking) into a temp
 * dir beside links to lua/ and node_modules/, so each run starts in plain Node.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as ts from 'typescript';

const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');

/** Kills a command still running after this long (a hang detector, not a timing assertion). */
export const CLI_HANG_MS = 20_000;

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Wall time of the whole process, startup included. */
  readonly ms: number;
}

let buildRoot: string | undefined;
let built: string | undefined;

/** Removes the transpiled command (call in afterAll). */
export function removeBuiltCli(): void {
  if (buildRoot) fs.rmSync(buildRoot, { recursive: true, force: true });
  buildRoot = built = undefined;
}

/** lib/ transpiled to CommonJS in a temp dir (see {@link removeBuiltCli}); the path of main.js. */
function builtMain(): string {
  if (built) return built;
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'redlimit-cli-'));
  buildRoot = root;
  const compilerOptions: ts.CompilerOptions = {
    module: ts.ModuleKind.CommonJS,
    target: ts.ScriptTarget.ES2022,
    esModuleInterop: true,
    experimentalDecorators: true,
    emitDecoratorMetadata: true,
  };
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(path.join(REPO_ROOT, dir), { withFileTypes: true })) {
      const relative = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(relative);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
        const source = fs.readFileSync(path.join(REPO_ROOT, relative), 'utf8');
        const { outputText } = ts.transpileModule(source, { compilerOptions, fileName: relative });
        const target = path.join(root, relative.replace(/\.ts$/, '.js'));
        fs.mkdirSync(path.dirname(target), { recursive: true });
        fs.writeFileSync(target, outputText);
      }
    }
  };
  walk('lib');
  for (const name of ['lua', 'node_modules', 'package.json']) {
    fs.symlinkSync(path.join(REPO_ROOT, name), path.join(root, name));
  }
  built = path.join(root, 'lib', 'cli', 'main.js');
  return built;
}

/**
 * Runs `redlimit <args>` with exactly `env` for its configuration: the caller's REDIS_URL and
 * REDLIMIT_* variables are removed first.
 */
export function redlimit(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<CliRun> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) => name !== 'REDIS_URL' && !name.startsWith('REDLIMIT_'),
    ),
  );
  const started = performance.now();
  const child = spawn(process.execPath, [builtMain(), ...args], {
    cwd: REPO_ROOT,
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), CLI_HANG_MS);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: performance.now() - started });
    });
  });
}
