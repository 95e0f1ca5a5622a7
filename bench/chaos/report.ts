/** The chaos run's results: a Markdown table per target, the must-be-zero verdict and a chart. */
import { barChartSvg, type Bar } from '../support/bar-chart.util';
import { markdownTable } from '../support/report.util';
import { grouped } from '../support/stats.util';
import type { FleetFigures } from './fleet';
import type { PhaseFigures } from './ledger';
import { FLEET, FLEET_BEAT_MS, FLEET_KEYS, FLEET_RATE, SLOW_MARGIN_MS, TIMEOUT_MS } from './plan';

/** What one target's run measured. */
export interface TargetResult {
  readonly name: string;
  readonly description: string;
  readonly seconds: number;
  readonly rows: readonly PhaseFigures[];
  /** The fleet scenario's figures, on a target that plays it. */
  readonly fleet?: FleetFigures;
  /** Lost replies the workers' stores had not settled when they stopped. */
  readonly lostPending: number;
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

/** The fleet's must-be-zero figures, by the name a failure gives them. */
function fleetMustBeZero(f: FleetFigures): Array<[string, number]> {
  return [
    ['over the limit in windows inside the outage', f.overInside],
    ['over the limit outside the outage', f.overElsewhere],
    ['fallback spends not charged into Redis', f.notReconciled],
    ['units Redis holds for callers not admitted', f.unowned],
    ['fallback spends still owing', f.settled.owing],
    ['calls refused for a full journal', f.settled.refusedFull],
    ['lost replies not settled', f.settled.pending],
    ['errors', f.errors],
  ];
}

/** Every must-be-zero figure that is not, as sentences; empty when the run passed. */
export function failures(results: readonly TargetResult[]): string[] {
  const out: string[] = [];
  for (const result of results) {
    for (const row of result.rows) {
      for (const field of MUST_BE_ZERO) {
        if (row[field] > 0) out.push(`${result.name} / ${row.name}: ${field} = ${row[field]}`);
      }
      // Once the stores settled their lost replies, a call told "store failure" is charged nothing.
      const replyLost = row.replyLost + row.unreported;
      if (replyLost > 0) out.push(`${result.name} / ${row.name}: reply lost = ${replyLost}`);
    }
    if (result.fleet) {
      for (const [name, value] of fleetMustBeZero(result.fleet))
        if (value > 0) out.push(`${result.name} / fleet: ${name} = ${value}`);
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

/** The fleet scenario's table (one row), or '' on a target that does not play it. */
export function fleetTable(result: TargetResult): string {
  const f = result.fleet;
  if (!f) return '';
  const header = [
    'outage',
    'calls',
    'by Redis',
    'by fallback',
    'windows inside',
    'most in one',
    'over, inside',
    'over, outage began',
    'over, outage ended',
    'over, elsewhere',
    'not reconciled',
    'charged, not admitted',
    'owing / journal full / lost pending',
    'reconciled',
    'errors',
  ];
  const row = [
    `${(f.outageMs / 1000).toFixed(1)} s`,
    grouped(f.calls),
    grouped(f.byRedis),
    grouped(f.byFallback),
    String(f.windowsInside),
    String(f.mostInside),
    String(f.overInside),
    String(f.overAtStart),
    String(f.overAtEnd),
    String(f.overElsewhere),
    String(f.notReconciled),
    String(f.unowned),
    `${f.settled.owing} / ${f.settled.refusedFull} / ${f.settled.pending}`,
    grouped(f.settled.reconciled),
    String(f.errors),
  ];
  const { limit } = FLEET as { limit: number };
  return [
    `**Fleet, \`failMode: 'memory'\`** (phase "${result.rows.find((r) => r.name.startsWith('fleet'))?.name ?? 'fleet'}"): ` +
      `the 4 workers' stores beat every ${FLEET_BEAT_MS} ms on a prefix of their own and call ` +
      `a fixed window of ${limit} per s on ${FLEET_KEYS} keys (and a timed probe on the same ` +
      `keys), ${FLEET_RATE} times a second each; once every worker is established, Redis is ` +
      `unreachable for them (a proxy cuts their connections and refuses new ones) and their ` +
      `fallbacks decide, each with its share (3 + 3 + 2 + 2 = ${limit}).`,
    markdownTable(header, [row]),
  ].join('\n\n');
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
