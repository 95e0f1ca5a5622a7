/**
 * The chaos run's ledger: from the workers' logs (see plan.ts), per phase, how many calls were
 * made and answered how, how slow, and whether any key was charged past what its policy allows.
 *
 * Every charged key is replayed, in the order of the Redis clock, through a reference limiter of
 * its policy that is given only the charges it accepted before: a charge it refuses is an
 * over-admission. The references are exact for the windowed algorithms (a fixed window's count on
 * `floor(at / window)`, a sliding window's weighted estimate in integers, a sliding log's trailing
 * sum) and, for token bucket and GCRA, a bucket of capacity `burst` refilled `limit` per window,
 * whose admissions over any interval are at most `burst + limit · interval / window`.
 *
 * The documented failure model lets Redis forget charges: a restart without persistence, a
 * master that dies before its replica has a charge. Each such event is a loss event for the keys
 * it holds. The replay runs twice: once strictly, once with the reference of each key emptied at
 * each loss event that holds it. What the second still refuses is over-admitted (must be 0); what
 * only the first refuses is lost to the failure model, counted in a column of its own.
 */
import { readFileSync } from 'node:fs';
import { type Algorithm, type LimitRule } from '../../lib';
import { resolvePolicy } from '../../lib/core/policy';
import { quantile } from '../support/stats.util';
import { type FleetCall, fleetCall } from './fleet';
import {
  type CallKind,
  type Outcome,
  POLICIES,
  PROBE,
  PROBE_LOG,
  SLOW_MARGIN_MS,
  TIMEOUT_MS,
} from './plan';

/** A phase of the run: calls started in [start, end) belong to it. */
export interface Phase {
  readonly name: string;
  readonly start: number;
  readonly end: number;
}

/**
 * Redis may have forgotten charges made before `at` on the keys `holds` says yes to: `at` is
 * when the process that held them was gone, so every charge stamped earlier was made by it.
 */
export interface LossEvent {
  readonly at: number;
  readonly holds: (key: string) => boolean;
}

/** The probes read after a phase, by caller key, with the Redis clock then. */
export interface ProbeRead {
  readonly phase: number;
  readonly redisNow: number;
  /** The fixed-window probe's stored count. */
  readonly counts: ReadonlyMap<string, number>;
  /** The sliding-log probe's members: [member (spend id, `.n` per unit past 1), Redis ms]. */
  readonly members: ReadonlyMap<string, ReadonlyArray<readonly [string, number]>>;
}

/** Slack for comparing the Redis clock with a worker's deadline (its offset is measured). */
const CLOCK_SLACK_MS = 10;

/** The figures of one phase. */
export interface PhaseFigures {
  readonly name: string;
  readonly calls: number;
  readonly admitted: number;
  readonly refused: number;
  /** Refused because the store failed or timed out (fail closed). */
  readonly storeFailed: number;
  /** Calls that rejected, plus calls allowed without a charge: must be 0. */
  readonly errors: number;
  /** Calls slower than timeoutMs + 50 ms, the process not starved: must be 0. */
  readonly slow: number;
  /** Calls slower than timeoutMs + 50 ms while the OS gave their process no CPU (see starved). */
  readonly slowStarved: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** Units charged past the policy with the documented losses allowed for: must be 0. */
  readonly overAdmitted: number;
  /** Units past the policy that only the documented losses explain. */
  readonly lostByFailover: number;
  /**
   * Timed-probe units applied in Redis after the deadline of every caller that could have sent
   * them (or with no such caller): must be 0.
   */
  readonly phantom: number;
  /**
   * Timed-probe units applied before their caller's deadline although the caller was told the
   * store failed: the call ran, its reply was lost (a killed connection or master) or came late
   * and its refund did not land.
   */
  readonly replyLost: number;
  /** Counting-probe units stored in Redis beyond those admitted to callers (all causes). */
  readonly unreported: number;
  /** Probe units admitted to a caller that Redis no longer counts (a loss event). */
  readonly probeLost: number;
}

interface Spend {
  readonly start: number;
  readonly policy: string;
  readonly key: string;
  readonly cost: number;
  readonly at: number;
  readonly spendId: string;
}

interface Call {
  readonly worker: number;
  readonly start: number;
  readonly latencyMs: number;
  readonly kind: CallKind;
  readonly outcome: Outcome;
  /** A probe call's caller key. */
  readonly key?: string;
}

/** A stretch in which a worker's event loop did not run. */
interface Stall {
  readonly from: number;
  readonly to: number;
  readonly cpuMs: number;
  /** CPU the main thread used (NaN where unknown). */
  readonly mainCpuMs: number;
  /** Time the main thread waited for a CPU while runnable (NaN where unknown). */
  readonly waitMs: number;
}

/** The workers' logs, read. */
export interface Logs {
  readonly calls: readonly Call[];
  readonly spends: readonly Spend[];
  /** Per worker, the stretches in which its event loop did not run. */
  readonly stalls: ReadonlyArray<readonly Stall[]>;
  /** The fleet scenario's calls (see fleet.ts). */
  readonly fleet: readonly FleetCall[];
}

/** Reads the workers' logs (one file per worker, in worker order). */
export function readLogs(files: readonly string[]): Logs {
  const calls: Call[] = [];
  const spends: Spend[] = [];
  const stalls = files.map(() => [] as Stall[]);
  const fleet: FleetCall[] = [];
  for (const [worker, file] of files.entries()) {
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      const f = line.split('\t');
      if (f[0] === 'L') {
        stalls[worker]!.push({
          from: Number(f[1]),
          to: Number(f[2]),
          cpuMs: Number(f[3]),
          mainCpuMs: Number(f[4]),
          waitMs: Number(f[5]),
        });
      } else if (f[0] === 'D') {
        calls.push({
          worker,
          start: Number(f[1]),
          latencyMs: Number(f[2]),
          kind: f[3] as CallKind,
          outcome: f[4] as Outcome,
          key: f[5],
        });
      } else if (f[0] === 'F') {
        fleet.push(fleetCall(f));
      } else if (f[0] === 'S') {
        spends.push({
          start: Number(f[1]),
          policy: f[2]!,
          key: f[3]!,
          cost: Number(f[4]),
          at: Number(f[5]),
          spendId: f[6] ?? '',
        });
      }
    }
  }
  return { calls, spends, stalls, fleet };
}

/**
 * Whether a slow call's lateness is the machine's: from its deadline to its answer, its worker's
 * event loop stalled (its 5 ms timer late by more than 10 ms) with the main thread off CPU — waiting
 * for a CPU, or for its own helper threads (GC) that wait for one — for all but `SLOW_MARGIN_MS`
 * of the time. No timer can fire then, whatever the code does. A loop held by the process's own
 * work (main thread on CPU), or a timer late while the loop ran, does not excuse it. Stretches
 * count in proportion to their overlap.
 */
function starved(call: Call, stalls: readonly Stall[]): boolean {
  const deadline = call.start + TIMEOUT_MS;
  const answered = call.start + call.latencyMs;
  let offCpu = 0;
  for (const stall of stalls) {
    const overlap = Math.min(stall.to, answered) - Math.max(stall.from, deadline);
    const length = stall.to - stall.from;
    if (overlap <= 0 || !(stall.mainCpuMs >= 0)) continue;
    offCpu += (Math.max(0, length - stall.mainCpuMs) * overlap) / length;
  }
  return offCpu >= answered - deadline - SLOW_MARGIN_MS;
}

/** One limit of a reference limiter: whether `cost` fits at `at`, given what it accepted. */
interface RuleState {
  fits(at: number, cost: number): boolean;
  take(at: number, cost: number): void;
}

function fixedWindow({ limit, windowMs }: LimitRule): RuleState {
  let window = -1;
  let count = 0;
  const roll = (at: number) => {
    const w = Math.floor(at / windowMs);
    if (w > window) [window, count] = [w, 0];
  };
  return {
    fits: (at, cost) => (roll(at), count + cost <= limit),
    take: (_at, cost) => void (count += cost),
  };
}

function slidingWindow({ limit, windowMs }: LimitRule): RuleState {
  let window = -1;
  let cur = 0;
  let prev = 0;
  const roll = (at: number) => {
    const w = Math.floor(at / windowMs);
    if (w === window + 1) [window, prev, cur] = [w, cur, 0];
    else if (w > window) [window, prev, cur] = [w, 0, 0];
  };
  return {
    fits: (at, cost) => {
      roll(at);
      const elapsed = at - window * windowMs;
      return prev * (windowMs - elapsed) + (cur + cost) * windowMs <= limit * windowMs;
    },
    take: (_at, cost) => void (cur += cost),
  };
}

function slidingLog({ limit, windowMs }: LimitRule): RuleState {
  const log: Array<[number, number]> = [];
  let head = 0;
  let sum = 0;
  return {
    fits: (at, cost) => {
      while (head < log.length && log[head]![0] <= at - windowMs) sum -= log[head++]![1];
      return sum + cost <= limit;
    },
    take: (at, cost) => {
      log.push([at, cost]);
      sum += cost;
    },
  };
}

/** Tokens scaled by the window (so refills stay integers): capacity burst · window. */
function bucket({ limit, windowMs, burst }: LimitRule): RuleState {
  let tokens = burst * windowMs;
  let last = -Infinity;
  const refill = (at: number) => {
    if (last === -Infinity) last = at;
    if (at > last) {
      tokens = Math.min(burst * windowMs, tokens + (at - last) * limit);
      last = at;
    }
  };
  return {
    fits: (at, cost) => (refill(at), tokens >= cost * windowMs),
    take: (_at, cost) => void (tokens -= cost * windowMs),
  };
}

/** The algorithms the run drives (leases, `concurrency`, are not rates: not driven here). */
const RULE_STATE: Partial<Record<Algorithm, (rule: LimitRule) => RuleState>> = {
  'fixed-window': fixedWindow,
  'sliding-window': slidingWindow,
  'sliding-log': slidingLog,
  'token-bucket': bucket,
  gcra: bucket,
};

/**
 * Replays one key's charges (sorted by `at`); returns the charges the reference refused. With
 * `losses` (sorted instants), the reference starts empty again at each.
 */
function replay(
  algorithm: Algorithm,
  rules: readonly LimitRule[],
  spends: readonly Spend[],
  losses: readonly number[],
): Spend[] {
  const state = RULE_STATE[algorithm];
  if (!state) throw new Error(`the chaos ledger has no reference for ${algorithm}`);
  const fresh = () => rules.map((rule) => state(rule));
  let states = fresh();
  let nextLoss = 0;
  const refused: Spend[] = [];
  for (const spend of spends) {
    while (nextLoss < losses.length && losses[nextLoss]! <= spend.at) {
      states = fresh();
      nextLoss++;
    }
    if (states.every((s) => s.fits(spend.at, spend.cost))) {
      for (const s of states) s.take(spend.at, spend.cost);
    } else {
      refused.push(spend);
    }
  }
  return refused;
}

/** The phase a call started in (the last one for calls after the end), or -1 before the first. */
function phaseOf(phases: readonly Phase[], start: number): number {
  for (let i = phases.length - 1; i >= 0; i--) if (start >= phases[i]!.start) return i;
  return -1;
}

/**
 * Places every timed-probe member that no admitted caller holds: applied before the deadline of a
 * probe call on its key that was told the store failed (reply lost), or after every such deadline
 * (phantom).
 */
function timedProbe(
  read: ProbeRead,
  logs: Logs,
  row: { phantom: number; replyLost: number; probeLost: number },
): void {
  const admitted = new Set<string>();
  const admittedUnits = new Map<string, number>();
  for (const spend of logs.spends) {
    if (spend.policy !== PROBE_LOG.name || !spend.key.startsWith(`probe:${read.phase}:`)) continue;
    admitted.add(spend.spendId);
    admittedUnits.set(spend.key, (admittedUnits.get(spend.key) ?? 0) + spend.cost);
  }
  const failedStarts = new Map<string, number[]>();
  for (const call of logs.calls) {
    if (call.kind !== 'probelog' || !call.key || call.outcome === 'a') continue;
    let list = failedStarts.get(call.key);
    if (!list) failedStarts.set(call.key, (list = []));
    list.push(call.start);
  }
  for (const [key, members] of read.members) {
    let stored = 0;
    for (const [member, at] of members) {
      stored++;
      if (admitted.has(member.split('.')[0]!)) continue;
      const starts = failedStarts.get(key) ?? [];
      const inTime = starts.some(
        (start) => start - CLOCK_SLACK_MS <= at && at <= start + TIMEOUT_MS + CLOCK_SLACK_MS,
      );
      if (inTime) row.replyLost++;
      else row.phantom++;
    }
    row.probeLost += Math.max(0, (admittedUnits.get(key) ?? 0) - stored);
  }
}

/** Checks a target's run: one row of figures per phase. */
export function audit(
  phases: readonly Phase[],
  logs: Logs,
  losses: readonly LossEvent[],
  probes: readonly ProbeRead[],
): PhaseFigures[] {
  const rows = phases.map((phase) => ({
    name: phase.name,
    latencies: [] as number[],
    calls: 0,
    admitted: 0,
    refused: 0,
    storeFailed: 0,
    errors: 0,
    slow: 0,
    slowStarved: 0,
    overAdmitted: 0,
    lostByFailover: 0,
    phantom: 0,
    replyLost: 0,
    unreported: 0,
    probeLost: 0,
  }));
  const rowOf = (start: number) => rows[Math.max(0, phaseOf(phases, start))]!;
  for (const call of logs.calls) {
    const row = rowOf(call.start);
    row.calls++;
    row.latencies.push(call.latencyMs);
    if (call.latencyMs > TIMEOUT_MS + SLOW_MARGIN_MS) {
      if (starved(call, logs.stalls[call.worker]!)) row.slowStarved++;
      else row.slow++;
    }
    if (call.outcome === 'a') row.admitted++;
    else if (call.outcome === 'r') row.refused++;
    else if (call.outcome === 'f') row.storeFailed++;
    else row.errors++;
  }

  const byKey = new Map<string, Spend[]>();
  for (const spend of logs.spends) {
    if (spend.policy === PROBE.name || spend.policy === PROBE_LOG.name) continue;
    const id = `${spend.policy}\t${spend.key}`;
    let list = byKey.get(id);
    if (!list) byKey.set(id, (list = []));
    list.push(spend);
  }
  const policies = new Map(POLICIES.map((p) => [p.name, resolvePolicy(p)]));
  for (const list of byKey.values()) {
    const { policy: name, key } = list[0]!;
    const policy = policies.get(name);
    if (!policy) throw new Error(`unknown policy in the log: ${name}`);
    list.sort((a, b) => a.at - b.at || a.start - b.start);
    const strict = replay(policy.algorithm, policy.limits, list, []);
    if (strict.length === 0) continue;
    const lossTimes = losses.filter((l) => l.holds(key)).map((l) => l.at);
    const allowingLosses = lossTimes.length
      ? replay(policy.algorithm, policy.limits, list, lossTimes)
      : strict;
    for (const spend of allowingLosses) rowOf(spend.start).overAdmitted += spend.cost;
    for (const spend of strict) rowOf(spend.start).lostByFailover += spend.cost;
    for (const spend of allowingLosses) rowOf(spend.start).lostByFailover -= spend.cost;
  }

  const probeWindowMs = resolvePolicy(PROBE).limits[0]!.windowMs;
  for (const read of probes) {
    const window = Math.floor(read.redisNow / probeWindowMs);
    const admitted = new Map<string, number>();
    for (const spend of logs.spends) {
      if (spend.policy !== PROBE.name || !spend.key.startsWith(`probe:${read.phase}:`)) continue;
      if (Math.floor(spend.at / probeWindowMs) !== window) continue;
      admitted.set(spend.key, (admitted.get(spend.key) ?? 0) + spend.cost);
    }
    const row = rows[read.phase]!;
    for (const key of new Set([...admitted.keys(), ...read.counts.keys()])) {
      const stored = read.counts.get(key) ?? 0;
      const charged = admitted.get(key) ?? 0;
      row.unreported += Math.max(0, stored - charged);
      row.probeLost += Math.max(0, charged - stored);
    }
    timedProbe(read, logs, row);
  }

  return rows.map(({ latencies, ...row }) => ({
    ...row,
    lostByFailover: Math.max(0, row.lostByFailover),
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    maxMs: latencies.length ? latencies.reduce((a, b) => Math.max(a, b), 0) : NaN,
  }));
}
