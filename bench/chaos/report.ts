/** The chaos run's results: a Markdown table per target, the must-be-zero verdict and a chart. */
import { barChartSvg, type Bar } from '../support/bar-chart.util';
import { markdownTable } from '../support/report.util';
import { grouped } from '../support/stats.util';
import type { PhaseFigures } from './ledger';
import { SLOW_MARGIN_MS, TIMEOUT_MS } from './plan';

/** What one target's run measured. */
export interface TargetResult {
  readonly name: string;
  readonly description: string;
  readonly seconds: number;
  readonly rows: readonly PhaseFigures[];
  readonly heapStartBytes: number;
  readonly heapEndBytes: number;
  readonly redisStartBytes: number;
  readonly redisEndBytes: number;
  readonly unhandledRejections: number;
  readonly uncaughtExceptions: number;
  readonly maxLoopDelayMs: number;
  /** Time the workers' main threads were off CPU while their loops stalled, summed. */
  readonly starvedSeconds: number;
  /** The longest stretch a worker's own work held its event loop (over 30 ms), in ms. */
  readonly longestBusyStallMs: number;
  /** Faults that could not be played, with why. */
  readonly problems: readonly string[];
}

const MUST_BE_ZERO = ['overAdmitted', 'slow', 'errors', 'phantom'] as const;

/** Every must-be-zero figure that is not, as sentences; empty when the run passed. */
export function failures(results: readonly TargetResult[]): string[] {
  const out: string[] = [];
  for (const result of results) {
    for (const row of result.rows) {
      for (const field of MUST_BE_ZERO) {
        if (row[field] > 0) out.push(`${result.name} / ${row.name}: ${field} = ${row[field]}`);
      }
    }
    if (result.unhandledRejections > 0)
      out.push(`${result.name}: ${result.unhandledRejections} unhandled rejections`);
    if (result.uncaughtExceptions > 0)
      out.push(`${result.name}: ${result.uncaughtExceptions} uncaught exceptions`);
    for (const problem of result.problems) out.push(`${result.name}: ${problem}`);
  }
  return out;
}

const ms = (value: number) => (Number.isFinite(value) ? value.toFixed(1) : '–');
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** The table of one target: one row per fault. */
export function targetTable(result: TargetResult): string {
  const header = [
    'fault',
    'decisions',
    'admitted',
    'over-admitted',
    'lost by failover',
    'phantom',
    'reply lost',
    'slow',
    'slow, starved',
    'errors',
    'store failed',
    'p99 ms',
    'max ms',
  ];
  const rows = result.rows.map((r) => [
    r.name,
    grouped(r.calls),
    grouped(r.admitted),
    String(r.overAdmitted),
    String(r.lostByFailover + r.probeLost),
    String(r.phantom),
    String(r.replyLost + r.unreported),
    String(r.slow),
    String(r.slowStarved),
    String(r.errors),
    grouped(r.storeFailed),
    ms(r.p99Ms),
    ms(r.maxMs),
  ]);
  return markdownTable(header, rows);
}

/** The figures below a target's table. */
export function targetNotes(result: TargetResult): string {
  return [
    `Node heap after GC, 4 workers summed: ${mb(result.heapStartBytes)} at the start, ` +
      `${mb(result.heapEndBytes)} at the end. Redis \`used_memory\`` +
      `${result.name === 'cluster' ? ' (masters summed)' : ''}: ${mb(result.redisStartBytes)} ` +
      `at the start, ${mb(result.redisEndBytes)} at the end. Unhandled rejections: ` +
      `${result.unhandledRejections}; uncaught exceptions: ${result.uncaughtExceptions}. Largest ` +
      `event-loop delay in a worker: ${ms(result.maxLoopDelayMs)} ms; event loops held by ` +
      `their own work for at most ${ms(result.longestBusyStallMs)} ms at a time; main threads ` +
      `off CPU while their loops stalled: ${result.starvedSeconds.toFixed(1)} s in all.`,
    ...result.problems.map((p) => `**Problem:** ${p}`),
  ].join('\n\n');
}

/** p99 latency per phase as a fraction of timeoutMs, one bar per target and phase. */
export function latencyChart(results: readonly TargetResult[], subtitle: string): string {
  const bars: Bar[] = results.flatMap((result) =>
    result.rows.map((row) => ({
      label: `${result.name}: ${row.name}`,
      value: Number.isFinite(row.p99Ms) ? row.p99Ms / TIMEOUT_MS : 0,
      kind: 'ours' as const,
    })),
  );
  return barChartSvg({
    title: 'redlimit under faults: p99 decision latency per phase',
    subtitle,
    referenceLabel: `timeoutMs (${TIMEOUT_MS} ms); slow = above ${TIMEOUT_MS + SLOW_MARGIN_MS} ms`,
    bars,
  });
}
