/**
 * What the chaos run drives, shared by the orchestrator (bench/chaos.ts), its workers
 * (worker.ts) and the ledger (ledger.ts): the policies, the key spaces, the mix of calls, the log
 * format and the messages between the processes.
 */
import type { PolicyOptions } from '../../lib';

/** The policies every worker builds, each on its own algorithm; windows are short so they bind. */
export const POLICIES: readonly PolicyOptions[] = [
  {
    name: 'fw',
    algorithm: 'fixed-window',
    limit: 5,
    window: '1s',
    limits: [{ limit: 20, window: '10s' }],
  },
  { name: 'sw', algorithm: 'sliding-window', limit: 5, window: '2s' },
  { name: 'tb', algorithm: 'token-bucket', limit: 5, window: '1s', burst: 8 },
  { name: 'gcra', algorithm: 'gcra', limit: 5, window: '1s', burst: 3 },
  { name: 'sl', algorithm: 'sliding-log', limit: 5, window: '2s' },
];

/**
 * The probe: a fixed window nobody can exhaust, on keys of their own per phase. Its stored
 * counter must equal the units admitted in its window; more is a spend applied although its
 * caller was told otherwise (a phantom spend), less is a spend Redis lost.
 */
export const PROBE: PolicyOptions = {
  name: 'probe',
  algorithm: 'fixed-window',
  limit: 1_000_000,
  window: '1h',
};

/**
 * The timed probe: a sliding log nobody can exhaust, on the same keys. Each stored member names
 * its spend and carries the Redis clock when it was applied, so a spend no caller was told was
 * admitted can be placed in time: before its caller's deadline (the call ran, its reply was lost
 * or came late) or after it (a phantom spend).
 */
export const PROBE_LOG: PolicyOptions = {
  name: 'probelog',
  algorithm: 'sliding-log',
  limit: 100_000,
  window: '1h',
};

/**
 * The fleet scenario (`failMode: 'memory'`): every worker's limiters on a store of their own,
 * connected through a proxy the run can cut (Redis unreachable for all of them, nothing else
 * touched), beating in `<prefix>fleet` every `FLEET_BEAT_MS`. The binding policy: a fixed window
 * whose limit the 4 workers' shares add up to exactly (3 + 3 + 2 + 2), called far past it.
 */
export const FLEET: PolicyOptions = {
  name: 'fleet',
  algorithm: 'fixed-window',
  limit: 10,
  window: '1s',
};

/**
 * The fleet's timed probe: a sliding log nobody can exhaust, on the same keys. Each member names
 * its spend: after the recovery, every spend the fallback allowed must be in it (charged into
 * Redis), and no spend whose caller was not admitted.
 */
export const FLEET_LOG: PolicyOptions = {
  name: 'fleetlog',
  algorithm: 'sliding-log',
  limit: 100_000,
  window: '1h',
};

/** Keys the fleet calls (each policy), its calls per second per worker, its heartbeat. */
export const FLEET_KEYS = 3;
export const FLEET_RATE = 40;
export const FLEET_BEAT_MS = 200;

/** The fleet's key `n`. */
export function fleetKey(n: number): string {
  return `fleet:${n}`;
}

/** Probe keys per worker and phase. */
export const PROBE_KEYS = 20;

/** Hot keys (where the limits bind) and cold keys (the long tail) of each key space. */
export const HOT_KEYS = 16;
export const COLD_KEYS = 2_000;

/** How long a decision may wait for Redis. */
export const TIMEOUT_MS = 500;
/** A decision slower than `TIMEOUT_MS` + this is slow (must not happen). */
export const SLOW_MARGIN_MS = 50;

/** One kind of call a worker makes, with its share of the calls. */
export type CallKind =
  'fw' | 'sw' | 'tb' | 'gcra' | 'sl' | 'multi' | 'stack' | 'probe' | 'probelog';

export const CALL_MIX: ReadonlyArray<readonly [CallKind, number]> = [
  ['fw', 0.12],
  ['sw', 0.12],
  ['tb', 0.12],
  ['gcra', 0.12],
  ['sl', 0.12],
  ['multi', 0.14],
  ['stack', 0.14],
  ['probe', 0.06],
  ['probelog', 0.06],
];

/** The probe key `n` of `worker` in `phase`. */
export function probeKey(phase: number, worker: number, n: number): string {
  return `probe:${phase}:${worker}:${n}`;
}

/**
 * Log lines, tab-separated, one file per worker and target:
 * - `D start latencyMs kind outcome [key]`: one per call (probe calls name their key); `start` in ms since the epoch (this
 *   machine's clock, which Redis `TIME` reads too); outcome `a` allowed, `r` refused by its
 *   budget, `f` refused because the store failed (fail closed), `e` rejected (an error reached
 *   the caller), `u` allowed without a charge (must not happen under fail closed);
 * - `S start policy key cost at spendId`: one per key charged by an allowed call; `at` is the Redis
 *   clock when that key was charged (the receipt's `atByKey`, else `at`), which names its window;
 * - `F start policy key cost at source spendId`: one per fleet call (`fleet` or `fleetlog`);
 *   `source` `r` allowed by Redis, `m` allowed by the memory fallback, `x` refused, `e` rejected
 *   (`at` and `spendId` of an allowed call only);
 * - `L from to cpuMs mainCpuMs waitMs`: the worker's event loop could not run from `from` to `to`
 *   (ms since the epoch), while the process used `cpuMs` of CPU, its main thread `mainCpuMs`, and
 *   the main thread waited `waitMs` for a CPU while runnable (Linux schedstat; NaN elsewhere).
 */
export type Outcome = 'a' | 'r' | 'f' | 'e' | 'u';

/** Orchestrator → worker. */
export type ToWorker =
  | {
      readonly type: 'target';
      /** `redis://…` for one Redis, or the JSON of the Cluster's startup nodes. */
      readonly url?: string;
      readonly nodes?: ReadonlyArray<{ host: string; port: number }>;
      readonly prefix: string;
      readonly log: string;
      readonly ratePerSecond: number;
      /** Where the fleet's stores connect (a proxy the run can cut); no fleet without it. */
      readonly fleetUrl?: string;
      readonly fleetPrefix?: string;
    }
  | { readonly type: 'phase'; readonly phase: number; readonly fleet: boolean }
  /** Answer `fleet-ready` once this worker is established in a fleet of all the workers. */
  | { readonly type: 'fleet-wait'; readonly workers: number }
  /** Answer `fleet-settled` once the fallback owes Redis nothing and lost replies are settled. */
  | { readonly type: 'fleet-settle' }
  /** Answer `settled` once the lost replies whose deadline passed are settled. */
  | { readonly type: 'settle' }
  | { readonly type: 'stop' };

/** What a worker's fleet store reports (`RedisStore.fleet`, `lostReplies.pending`). */
export interface FleetCounts {
  readonly size: number;
  readonly established: boolean;
  readonly owing: number;
  readonly reconciled: number;
  readonly refusedFull: number;
  /** Lost replies of the fleet's store not settled yet. */
  readonly pending: number;
  /** Why it did not settle in time (what one more heartbeat answered). */
  readonly error?: string;
}

/** Worker → orchestrator. */
export type FromWorker =
  | { readonly type: 'ready' }
  | { readonly type: 'fleet-ready'; readonly counts: FleetCounts }
  | { readonly type: 'fleet-settled'; readonly counts: FleetCounts }
  /** `pending`: lost replies of the main store still not settled. */
  | { readonly type: 'settled'; readonly pending: number }
  | {
      readonly type: 'done';
      readonly calls: number;
      readonly heapStartBytes: number;
      readonly heapEndBytes: number;
      readonly unhandledRejections: number;
      readonly uncaughtExceptions: number;
      readonly clientErrors: number;
      /** Lost replies of the main store not settled when it stopped (after trying). */
      readonly lostPending: number;
      /** Largest event-loop delay seen while driving, in ms. */
      readonly maxLoopDelayMs: number;
    };
