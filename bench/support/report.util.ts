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
  /** 1-minute load average when the run started: the machine is shared, this says how busy. */
  readonly load: number;
  /** The commit measured, and whether lib/ or lua/ had uncommitted changes. */
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
    load: os.loadavg()[0]!,
    revision: revision(),
  };
}

function revision(): string {
  try {
    const git = (...args: string[]) =>
      execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const commit = git('rev-parse', '--short', 'HEAD');
    return git('status', '--porcelain', '--', 'lib', 'lua')
      ? `${commit} + uncommitted lib/lua`
      : commit;
  } catch {
    return 'unknown (not a git checkout)';
  }
}

export function describeMachine(m: Machine): string {
  return (
    `Node ${m.node}, Redis ${m.redis} on loopback, ${m.cpu}, ${m.cores} cores (${m.os}); ` +
    `load average ${m.load.toFixed(2)} at the start (the machine is shared); redlimit at ${m.revision}`
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
