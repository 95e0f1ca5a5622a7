/** What the results files say about the machine, and how they are written. */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';

export interface Machine {
  readonly node: string;
  readonly cpu: string;
  readonly cores: number;
  readonly redis: string;
  readonly os: string;
  /** The commit measured, and where the work tree had uncommitted changes. */
  readonly revision: string;
}

export function machine(redisVersion: string): Machine {
  let cpu = os.cpus()[0]?.model ?? 'unknown';
  try {
    cpu = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpu;
  } catch {
    /* not Linux: os.cpus() it is */
  }
  let cores = os.cpus().length;
  try {
    cores = Number(execFileSync('nproc', { encoding: 'utf8' }).trim()) || cores;
  } catch {
    /* no nproc */
  }
  return {
    node: process.version,
    cpu,
    cores,
    redis: redisVersion,
    os: `${os.type()} ${os.release()}`,
    revision: revision(),
  };
}

/**
 * `git rev-parse --short HEAD`, and `+ uncommitted changes in lib/, lua/` when the work tree
 * differs from it (bench/results, which the benches write, is left out).
 */
function revision(): string {
  try {
    const git = (...args: string[]) =>
      execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const commit = git('rev-parse', '--short', 'HEAD').trim();
    const changed = git('status', '--porcelain', '--', '.', ':!bench/results')
      .split('\n')
      .filter(Boolean)
      .map((line) => line.slice(3).split('/')[0]!);
    const dirs = [...new Set(changed)].map((d) => (d.includes('.') ? d : `${d}/`));
    return dirs.length ? `${commit} + uncommitted changes in ${dirs.join(', ')}` : commit;
  } catch {
    return 'unknown (not a git checkout)';
  }
}

export function describeMachine(m: Machine): string {
  return (
    `Node ${m.node}, Redis ${m.redis} on loopback, ${m.cpu}, ${m.cores} cores (${m.os}); ` +
    `redlimit at ${m.revision}`
  );
}

/** A Markdown table; columns after the first are right-aligned. */
export function markdownTable(header: readonly string[], rows: ReadonlyArray<readonly string[]>) {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [
    line(header),
    line(header.map((_, i) => (i === 0 ? '---' : '---:'))),
    ...rows.map(line),
  ].join('\n');
}

/** Writes `name` under the results directory (created if needed); returns its path. */
export function writeResult(dir: string, name: string, content: string): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, name);
  writeFileSync(path, content.endsWith('\n') ? content : `${content}\n`);
  return path;
}

/** `bench/results` of this checkout. */
export const RESULTS_DIR = join(__dirname, '..', 'results');
