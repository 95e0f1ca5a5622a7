/**
 * CPU pinning with `taskset` (util-linux): processes started pinned (`taskset -c <cpu> cmd …`),
 * or pinned after the fact with every thread (`taskset -a -p -c <cpu> <pid>`). Without taskset,
 * or with fewer than two CPUs to share out, nothing is pinned and {@link pinning} says why.
 */
import { execFileSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import * as os from 'node:os';
import { delimiter, join } from 'node:path';

export interface Pinning {
  /** The taskset binary, or undefined when not pinning. */
  readonly taskset: string | undefined;
  /** Why nothing is pinned, when it is not. */
  readonly reason?: string;
}

/** Whether pinning is possible here (and wanted). */
export function pinning(wanted: boolean): Pinning {
  if (!wanted) return { taskset: undefined, reason: 'pinning turned off (--no-pin)' };
  const taskset = (process.env.PATH ?? '')
    .split(delimiter)
    .map((dir) => join(dir, 'taskset'))
    .find((file) => {
      try {
        accessSync(file, constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
  if (!taskset) return { taskset: undefined, reason: 'taskset not found (util-linux)' };
  if (os.availableParallelism() < 2) {
    return { taskset: undefined, reason: 'fewer than 2 CPUs available' };
  }
  return { taskset };
}

/** `[command, args]` to start `file args…` on `cpu` (or unpinned). */
export function pinnedCommand(
  pin: Pinning,
  cpu: number,
  file: string,
  args: readonly string[],
): [string, string[]] {
  return pin.taskset ? [pin.taskset, ['-c', String(cpu), file, ...args]] : [file, [...args]];
}

/** Pins a running process, all its threads, to `cpu`. */
export function pinProcess(pin: Pinning, pid: number, cpu: number): void {
  if (!pin.taskset) return;
  execFileSync(pin.taskset, ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
}
