/**
 * Is the machine quiet enough to judge? Two figures: the 1-minute load average when the run
 * starts, and the CPU that processes other than the bench's own used while it ran (foreign CPU):
 * `/proc/stat` busy time of the whole machine (user + nice + system) minus the CPU time of the
 * bench's processes (this one, the Redis servers it measures, the apps it drives; each read from
 * `/proc/<pid>/stat`, all threads). Interrupt and softirq time is left out of both sides: on
 * loopback it is mostly the bench's own traffic. Linux only; elsewhere both figures are unknown
 * and the run is judged as quiet, with a note saying so.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as os from 'node:os';
import { nonNegative } from './cli.util';

/** Thresholds above which a run is not judged. */
export interface LoadLimits {
  /** Most 1-minute load average at the start. */
  readonly maxLoad: number;
  /** Most foreign CPU averaged over the run, in cores (0.1 = 10 % of one core). */
  readonly maxForeignCores: number;
}

export interface LoadReport {
  /** 1-, 5- and 15-minute load averages when the run started. */
  readonly loadAtStart: readonly number[];
  /** Seconds spent waiting for the load average to settle before starting. */
  readonly settledSeconds: number;
  /** Foreign CPU averaged over the run, in cores; NaN where /proc cannot tell. */
  readonly foreignCores: number;
  /** The bench's own processes' CPU averaged over the run, in cores. */
  readonly ownCores: number;
  readonly seconds: number;
}

const CLOCK_TICKS = clockTicks();

function clockTicks(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}

/** Busy ticks of the whole machine (user + nice + system), or NaN off Linux. */
function machineBusyTicks(): number {
  try {
    const cpu = /^cpu\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(readFileSync('/proc/stat', 'utf8'));
    return cpu ? Number(cpu[1]) + Number(cpu[2]) + Number(cpu[3]) : NaN;
  } catch {
    return NaN;
  }
}

/**
 * utime + stime of one process (all its threads) in ticks, and with `children` the CPU of its
 * children it has reaped (cutime + cstime: short-lived helpers such as a load generator); 0 once
 * it is gone.
 */
export function processTicks(pid: number, children = false): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces: count fields from after its closing paren.
    const fields = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
    return fields[11]! + fields[12]! + (children ? fields[13]! + fields[14]! : 0);
  } catch {
    return 0;
  }
}

/** Whether `pid` is a process on this machine whose command name starts with `name`. */
export function isLocalProcess(pid: number, name: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim().startsWith(name);
  } catch {
    return false;
  }
}

/**
 * Waits (at most `seconds`) for the 1-minute load average to fall to `maxLoad`: a bench that
 * just ended leaves it high for a minute or two although the machine is idle. Returns the
 * seconds waited.
 */
export async function settle(maxLoad: number, seconds: number): Promise<number> {
  const started = Date.now();
  while (os.loadavg()[0]! > maxLoad && Date.now() - started < seconds * 1000) {
    await new Promise((resolve) => setTimeout(resolve, 5_000));
  }
  return (Date.now() - started) / 1000;
}

/**
 * Accounts CPU from now on; `pids` are the bench's own processes. This one is always counted,
 * with the children it has reaped; children still running must be added to be counted.
 */
export class CpuAccount {
  private readonly loadAtStart = os.loadavg();
  private readonly started = performance.now();
  private readonly busyAtStart = machineBusyTicks();
  /** Ticks at the start of each process still counted. */
  private readonly pids = new Map<number, number>();
  /** Ticks used by processes no longer counted (they exited, or are about to). */
  private readonly finished = new Map<number, number>();

  constructor(
    private readonly settledSeconds = 0,
    pids: readonly number[] = [],
  ) {
    this.add(process.pid, ...pids);
  }

  /** Counts more processes as the bench's own, from now on (e.g. servers started later). */
  add(...pids: number[]): void {
    for (const pid of pids) if (!this.pids.has(pid)) this.pids.set(pid, this.ticks(pid));
  }

  private ticks(pid: number): number {
    return processTicks(pid, pid === process.pid);
  }

  /**
   * Stops counting a process and keeps what it used so far (read before it exits: a dead
   * process's ticks cannot be read).
   */
  remove(pid: number): void {
    const start = this.pids.get(pid);
    if (start === undefined) return;
    this.finished.set(pid, this.ticks(pid) - start);
    this.pids.delete(pid);
  }

  report(): LoadReport {
    const seconds = (performance.now() - this.started) / 1000;
    let own = 0;
    for (const [pid, start] of this.pids) own += Math.max(0, this.ticks(pid) - start);
    for (const used of this.finished.values()) own += used;
    const busy = machineBusyTicks() - this.busyAtStart;
    const cores = (ticks: number) => ticks / CLOCK_TICKS / seconds;
    return {
      loadAtStart: this.loadAtStart,
      settledSeconds: this.settledSeconds,
      foreignCores: Number.isNaN(busy) ? NaN : Math.max(0, cores(busy - own)),
      ownCores: cores(own),
      seconds,
    };
  }
}

/** Why a run is not judged (`machine loaded: …`), or undefined when it was quiet enough. */
export function loadedBecause(report: LoadReport, limits: LoadLimits): string | undefined {
  const reasons: string[] = [];
  const load = report.loadAtStart[0]!;
  if (load > limits.maxLoad) {
    reasons.push(`load average ${load.toFixed(2)} at the start > ${limits.maxLoad}`);
  }
  if (report.foreignCores > limits.maxForeignCores) {
    reasons.push(
      `other processes used ${percentOfCore(report.foreignCores)} of a core during the run ` +
        `> ${percentOfCore(limits.maxForeignCores)}`,
    );
  }
  return reasons.length ? `machine loaded: ${reasons.join('; ')}` : undefined;
}

/** One paragraph on the machine's load, for the results file. */
export function describeLoad(report: LoadReport, limits: LoadLimits): string {
  const [one, five, fifteen] = report.loadAtStart.map((x) => x.toFixed(2));
  const foreign = Number.isNaN(report.foreignCores)
    ? 'unknown (no /proc)'
    : `${percentOfCore(report.foreignCores)} of one core`;
  const waited =
    report.settledSeconds >= 1
      ? ` after waiting ${report.settledSeconds.toFixed(0)} s for it to settle`
      : '';
  return (
    `Load: average ${one} / ${five} / ${fifteen} (1 / 5 / 15 min) at the start${waited}; ` +
    `CPU of other processes during the ${report.seconds.toFixed(0)} s run: ${foreign} ` +
    `(the bench's own processes: ${percentOfCore(report.ownCores)}). Verdicts are given only ` +
    `when the 1-minute load average at the start is ≤ ${limits.maxLoad} and other processes ` +
    `used ≤ ${percentOfCore(limits.maxForeignCores)} of a core (\`--max-load\`, ` +
    '`--max-foreign`).'
  );
}

function percentOfCore(cores: number): string {
  return `${(cores * 100).toFixed(cores < 0.1 ? 1 : 0)} %`;
}

/** The load check's command-line options, for {@link parseCommandLine}. */
export const LOAD_CHECK_OPTIONS = {
  'max-load': { type: 'string', default: '0.5' },
  'max-foreign': { type: 'string', default: '0.1' },
  'settle-seconds': { type: 'string', default: '120' },
  'force-verdicts': { type: 'boolean', default: false },
} as const;

/** The load check's settings, from the parsed {@link LOAD_CHECK_OPTIONS}. */
export function loadCheckSettings(
  values: {
    'max-load': string;
    'max-foreign': string;
    'settle-seconds': string;
    'force-verdicts': boolean;
  },
  usage: string,
): { limits: LoadLimits; settleSeconds: number; forceVerdicts: boolean } {
  return {
    limits: {
      maxLoad: nonNegative(values['max-load'], 'max-load', usage),
      maxForeignCores: nonNegative(values['max-foreign'], 'max-foreign', usage),
    },
    settleSeconds: nonNegative(values['settle-seconds'], 'settle-seconds', usage),
    forceVerdicts: values['force-verdicts'],
  };
}
