/**
 * The targets of issue 13 (part 2), issue 14 (the refusal cache) and issue 29 (the decision's
 * own cost: alone, in Redis script time, the buckets in every policy shape, on a Cluster), each
 * judged on the interval of what was measured in this run: a "≥" target is met only when the interval's lower bound is at or above it, a "≤" target only
 * when the upper bound is at or below it. On a loaded machine nothing is judged.
 */
import { ALGORITHMS } from '../../lib/core/policy';
import { markdownTable } from '../support/report.util';
import { type Estimate, withInterval } from '../support/stats.util';
import { NAMES, PER_DAY, PER_HOUR } from './contenders';
import type { Sample } from './throughput';

/** What the targets read from the run; undefined where a row was not measured. */
export interface Measured {
  /** Median over rounds of a's decisions/s divided by b's in the same round, with its interval. */
  ratio(a: string, b: string): Estimate | undefined;
  /** Median over rounds of one of a's per-decision costs, with its interval. */
  cost(a: string, field: keyof Sample): Estimate | undefined;
  /** Median over rounds of a's cost `fieldA` divided by b's `fieldB` in the same round. */
  costRatio(a: string, fieldA: keyof Sample, b: string, fieldB: keyof Sample): Estimate | undefined;
  /** Median over latency rounds of a's p99 divided by the floor's in the same round. */
  p99Ratio(a: string): Estimate | undefined;
  /** Median decisions/s of a row over the rounds. */
  rate(a: string): number | undefined;
}

export interface Target {
  readonly label: string;
  readonly estimate: Estimate | undefined;
  readonly bound: number;
  readonly atMost: boolean;
  readonly unit: '×' | ' µs' | ' commands';
}

export function targets(measured: Measured): Target[] {
  const list: Target[] = [];
  const atLeast = (label: string, estimate: Estimate | undefined, bound: number) =>
    list.push({ label, estimate, bound, atMost: false, unit: '×' });
  const fixed = NAMES.ours('fixed-window', 1);
  atLeast('fixed window, 1 key, default × floor', measured.ratio(fixed, NAMES.floor), 1.5);
  atLeast(
    'fixed window, 2 keys, default × floor',
    measured.ratio(NAMES.ours('fixed-window', 2), NAMES.floor),
    1.2,
  );
  for (const algorithm of ALGORITHMS) {
    if (algorithm === 'fixed-window') continue;
    const bucket = algorithm === 'token-bucket' || algorithm === 'gcra';
    atLeast(
      `${algorithm}, 1 key${bucket ? `, ${PER_HOUR.label}` : ''}, default × floor`,
      measured.ratio(NAMES.ours(algorithm, 1), NAMES.floor),
      algorithm === 'sliding-log' ? 0.9 : 1.2,
    );
    // Issue 29: the buckets in every policy shape the bench runs.
    if (bucket) {
      atLeast(
        `${algorithm}, 1 key, ${PER_DAY.label}, default × floor`,
        measured.ratio(NAMES.shaped(algorithm, PER_DAY), NAMES.floor),
        1.2,
      );
    }
  }
  atLeast(
    'fixed window, 1 key, `coalesce: false` × floor',
    measured.ratio(NAMES.uncoalesced(1), NAMES.floor),
    0.9,
  );
  atLeast(
    'fixed window, 2 keys, `coalesce: false` × floor',
    measured.ratio(NAMES.uncoalesced(2), NAMES.floor),
    0.8,
  );
  // rate-limiter-flexible in whichever of its two setups was faster in this run.
  const [plain, pipelined] = [NAMES.flexible, NAMES.flexiblePipelined].map((name) =>
    measured.rate(name),
  );
  const flexible =
    plain === undefined && pipelined === undefined
      ? undefined
      : (pipelined ?? -1) > (plain ?? -1)
        ? NAMES.flexiblePipelined
        : NAMES.flexible;
  atLeast(
    'fixed window, 1 key, default × rate-limiter-flexible in its faster setup' +
      (flexible
        ? ` (this run: ${flexible === NAMES.flexible ? 'plain' : 'pipelined'} client)`
        : ''),
    flexible ? measured.ratio(fixed, flexible) : undefined,
    1.8,
  );
  const atMost = (
    label: string,
    estimate: Estimate | undefined,
    bound: number,
    unit: Target['unit'],
  ) => list.push({ label, estimate, bound, atMost: true, unit });
  atMost(
    'Node CPU µs per decision, fixed window 1 key, default',
    measured.cost(fixed, 'nodeCpuUs'),
    3,
    ' µs',
  );
  atMost(
    'Redis µs per decision (commandstats), fixed window 1 key, default',
    measured.cost(fixed, 'redisCommandUs'),
    4,
    ' µs',
  );
  atMost(
    "p99 at 50 % of the floor's saturation rate, fixed window 1 key, default × floor's p99",
    measured.p99Ratio(fixed),
    1,
    '×',
  );
  atLeast(
    'Cluster per master × single node, fixed window 1 key, `coalesce: false`',
    measured.ratio(NAMES.cluster, NAMES.uncoalesced(1)),
    1,
  );
  // Issue 29: the decision on its own, and Redis's script time per decision against the floor's.
  atLeast(
    'fixed window, 1 key, `coalesce: false` × rate-limiter-flexible (unbatched)',
    measured.ratio(NAMES.uncoalesced(1), NAMES.flexible),
    1,
  );
  const scriptTime = (label: string, row: string, bound: number) =>
    atMost(
      `Redis µs per decision (commandstats) × floor's, ${label}`,
      measured.costRatio(row, 'redisCommandUs', NAMES.floor, 'redisCommandUs'),
      bound,
      '×',
    );
  scriptTime('fixed window, 1 key, `coalesce: false`', NAMES.uncoalesced(1), 2);
  scriptTime('fixed window, 1 key, default', fixed, 1.5);
  scriptTime('fixed window, 2 keys, default', NAMES.ours('fixed-window', 2), 2.5);
  scriptTime('sliding-log, 1 key, default', NAMES.ours('sliding-log', 1), 3);
  atMost(
    'Node CPU µs per decision, fixed window 1 key, default (issue 29)',
    measured.cost(fixed, 'nodeCpuUs'),
    4,
    ' µs',
  );
  // Issue 29: Redis CPU per decision on the Cluster's masters against one node, same options.
  atMost(
    'Redis CPU per decision, Cluster masters × single node, fixed window 1 key, store default',
    measured.costRatio(NAMES.cluster, 'redisCpuMastersUs', fixed, 'redisCpuUs'),
    1.3,
    '×',
  );
  atMost(
    'Redis CPU per decision, Cluster masters × single node, fixed window 1 key, `coalesce: false`',
    measured.costRatio(
      NAMES.clusterUncoalesced,
      'redisCpuMastersUs',
      NAMES.uncoalesced(1),
      'redisCpuUs',
    ),
    1.3,
    '×',
  );
  // Issue 14: refused (locked-out) callers kept away from Redis by the refusal cache.
  atLeast(
    'locked-out callers with `refusalCache` × floor',
    measured.ratio(NAMES.refusalCache, NAMES.floor),
    10,
  );
  atMost(
    'Redis commands per decision, locked-out callers with `refusalCache`',
    measured.cost(NAMES.refusalCache, 'commandsPerDecision'),
    0,
    ' commands',
  );
  return list;
}

/**
 * `met`, `missed`, `not measured`, or `not judged (machine loaded)` (the reason is printed once,
 * above the table, by {@link targetsTable}).
 */
export function verdict(target: Target, notJudged: string | undefined): string {
  const { estimate, bound, atMost } = target;
  if (!estimate || Number.isNaN(estimate.value)) return 'not measured';
  if (notJudged) return `not judged (${notJudged.split(':')[0]})`;
  return (atMost ? estimate.high <= bound : estimate.low >= bound) ? 'met' : 'missed';
}

export function targetsTable(list: readonly Target[], notJudged: string | undefined): string {
  const digits = (t: Target) => (t.unit === ' µs' ? 1 : 2);
  const table = markdownTable(
    ['target', 'measured: median [95 % interval]', 'target', 'verdict'],
    list.map((t) => [
      t.label,
      t.estimate ? withInterval(t.estimate, digits(t), t.unit) : '–',
      `${t.atMost ? '≤' : '≥'} ${t.bound.toFixed(digits(t))}${t.unit}`,
      verdict(t, notJudged),
    ]),
  );
  return notJudged ? `**No verdicts: ${notJudged}.**\n\n${table}` : table;
}
