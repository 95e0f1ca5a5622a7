/**
 * The fleet scenario's ledger (`failMode: 'memory'`, see plan.ts FLEET): from the workers' F
 * lines, the units admitted per key and per window of the binding policy, by Redis and by the
 * workers' fallbacks together, against its limit; and, from the fleet's probe read after the
 * recovery, whether Redis holds every spend a fallback allowed, and nothing else.
 *
 * While Redis is unreachable each worker's fallback admits its share of the limit (3 + 3 + 2 + 2
 * of 10: the shares add up to the limit, no rounding past it), so a window entirely inside the
 * outage must hold at most the limit. The window in which the outage began is counted apart: the
 * fallback cannot know what Redis admitted in it before it failed, so it gives its shares again.
 * So is the window in which it ended (until a beat succeeds again and the fallback's spends are
 * charged into Redis, Redis decides without them). Every other window is Redis's alone.
 */
import { resolvePolicy } from '../../lib/core/policy';
import { FLEET, FLEET_LOG } from './plan';

/** One fleet call, from its F line. */
export interface FleetCall {
  readonly start: number;
  readonly policy: string;
  readonly key: string;
  readonly cost: number;
  /** Its instant (Redis clock, or the fallback's estimate of it); NaN when not allowed. */
  readonly at: number;
  /** `r` allowed by Redis, `m` allowed by the fallback, `x` refused, `e` rejected. */
  readonly source: 'r' | 'm' | 'x' | 'e';
  readonly spendId: string;
}

/** What the workers' fleet stores said once settled (summed). */
export interface FleetSettled {
  /** Fallback spends that still owe Redis something: must be 0. */
  readonly owing: number;
  /** Fallback spends charged into Redis. */
  readonly reconciled: number;
  /** Calls the fallback refused because its journal was full (refusing is safe): 0 here. */
  readonly refusedFull: number;
  /** Lost replies of the fleet's stores not settled: must be 0. */
  readonly pending: number;
}

/** The fleet scenario's figures. */
export interface FleetFigures {
  readonly outageMs: number;
  /** Calls of the binding policy and of the fleet's probe. */
  readonly calls: number;
  readonly byRedis: number;
  readonly byFallback: number;
  /** Calls that rejected: must be 0. */
  readonly errors: number;
  /** (key, window) pairs of the binding policy entirely inside the outage. */
  readonly windowsInside: number;
  /** The most units admitted in one of them (the limit when the fallbacks bind). */
  readonly mostInside: number;
  /** Units past the limit in windows entirely inside the outage: must be 0. */
  readonly overInside: number;
  /** Units past the limit in the window the outage began in (the fallback cannot know Redis's). */
  readonly overAtStart: number;
  /** Units past the limit in the window(s) the outage ended in (before the fallback's charge). */
  readonly overAtEnd: number;
  /** Units past the limit in the other windows (Redis alone): must be 0. */
  readonly overElsewhere: number;
  /** Fallback spends of the fleet's probe that Redis does not hold after the recovery: must be 0. */
  readonly notReconciled: number;
  /** Probe units Redis holds for callers that were not admitted: must be 0. */
  readonly unowned: number;
  readonly settled: FleetSettled;
}

/** The F lines of a log file's lines (split on tabs). */
export function fleetCall(f: readonly string[]): FleetCall {
  return {
    start: Number(f[1]),
    policy: f[2]!,
    key: f[3]!,
    cost: Number(f[4]),
    at: f[5] === '' ? NaN : Number(f[5]),
    source: f[6] as FleetCall['source'],
    spendId: f[7] ?? '',
  };
}

/**
 * Audits the fleet scenario: `outage` when Redis was unreachable for the fleet (ms since the
 * epoch), `members` the fleet probe's members by caller key, read after the recovery.
 */
export function auditFleet(
  calls: readonly FleetCall[],
  outage: { readonly from: number; readonly to: number },
  members: ReadonlyMap<string, readonly string[]>,
  settled: FleetSettled,
): FleetFigures {
  const { limit, windowMs } = resolvePolicy(FLEET).limits[0]!;
  let [byRedis, byFallback, errors] = [0, 0, 0];
  // The fallback may still answer for a moment after the proxy lets connections through (until a
  // connection is back): the outage ends, for the windows, at its last answer.
  let lastFallback = outage.to;
  const units = new Map<string, Map<number, number>>();
  for (const call of calls) {
    if (call.source === 'e') errors++;
    if (call.source === 'r') byRedis++;
    if (call.source === 'm') {
      byFallback++;
      lastFallback = Math.max(lastFallback, call.at);
    }
    if (call.policy !== FLEET.name || (call.source !== 'r' && call.source !== 'm')) continue;
    let windows = units.get(call.key);
    if (!windows) units.set(call.key, (windows = new Map<number, number>()));
    const w = Math.floor(call.at / windowMs);
    windows.set(w, (windows.get(w) ?? 0) + call.cost);
  }
  const began = Math.floor(outage.from / windowMs);
  const [endFirst, endLast] = [outage.to, lastFallback].map((t) => Math.floor(t / windowMs));
  let [windowsInside, mostInside, overInside, overAtStart, overAtEnd, overElsewhere] = [
    0, 0, 0, 0, 0, 0,
  ];
  for (const windows of units.values()) {
    for (const [w, admitted] of windows) {
      const over = Math.max(0, admitted - limit);
      if (w === began) overAtStart += over;
      else if (w >= endFirst! && w <= endLast!) overAtEnd += over;
      else if (w * windowMs >= outage.from && (w + 1) * windowMs <= outage.to) {
        windowsInside++;
        mostInside = Math.max(mostInside, admitted);
        overInside += over;
      } else overElsewhere += over;
    }
  }

  const admitted = new Set<string>();
  let notReconciled = 0;
  let unowned = 0;
  for (const call of calls) {
    if (call.policy !== FLEET_LOG.name || (call.source !== 'r' && call.source !== 'm')) continue;
    admitted.add(call.spendId);
  }
  const stored = new Set<string>();
  for (const list of members.values()) {
    for (const member of list) {
      const id = member.split('.')[0]!;
      stored.add(id);
      if (!admitted.has(id)) unowned++;
    }
  }
  for (const call of calls) {
    if (call.policy === FLEET_LOG.name && call.source === 'm' && !stored.has(call.spendId))
      notReconciled += call.cost;
  }
  return {
    outageMs: outage.to - outage.from,
    calls: calls.length,
    byRedis,
    byFallback,
    errors,
    windowsInside,
    mostInside,
    overInside,
    overAtStart,
    overAtEnd,
    overElsewhere,
    notReconciled,
    unowned,
    settled,
  };
}
