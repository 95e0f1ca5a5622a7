/**
 * One worker process of the chaos run (forked by bench/chaos.ts with ts-node, transpile only).
 * For each target it is sent, it opens its own connections, builds every policy of plan.ts and
 * calls them at a steady rate (an open loop: calls go out on schedule whatever the answers do),
 * logging every call and every charged key (see plan.ts for the format) until told to stop.
 */
import { createWriteStream, readFileSync, type WriteStream } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import Redis, { Cluster } from 'ioredis';
import { type Decision, Limiter, RedisStore, type StackedDecision } from '../../lib';
import { seededRandom } from '../support/stats.util';
import {
  CALL_MIX,
  type CallKind,
  COLD_KEYS,
  FLEET,
  FLEET_BEAT_MS,
  FLEET_KEYS,
  FLEET_LOG,
  FLEET_RATE,
  type FleetCounts,
  fleetKey,
  type FromWorker,
  HOT_KEYS,
  type Outcome,
  POLICIES,
  PROBE,
  PROBE_KEYS,
  PROBE_LOG,
  probeKey,
  TIMEOUT_MS,
  type ToWorker,
} from './plan';

type TargetMessage = Extract<ToWorker, { type: 'target' }>;

const worker = Number(process.env.CHAOS_WORKER ?? 0);
const random = seededRandom(Number(process.env.CHAOS_SEED ?? 1) * 1000 + worker);
let unhandledRejections = 0;
let uncaughtExceptions = 0;
process.on('unhandledRejection', (reason) => {
  unhandledRejections++;
  process.stderr.write(`worker ${worker}: unhandled rejection: ${String(reason)}\n`);
});
process.on('uncaughtException', (error) => {
  uncaughtExceptions++;
  process.stderr.write(`worker ${worker}: uncaught exception: ${error.stack ?? error.message}\n`);
});

function send(message: FromWorker): void {
  process.send?.(message);
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** Half the workers use ioredis defaults (offline queue, 20 retries, commands resent after a
 * reconnect); the others the settings the Nest module gives its own clients. */
function connect(target: TargetMessage): Redis | Cluster {
  const safe = worker % 2 === 1;
  const options = safe ? { maxRetriesPerRequest: 1, autoResendUnfulfilledCommands: false } : {};
  if (target.nodes) {
    return new Cluster(
      target.nodes.map((n) => ({ ...n })),
      { redisOptions: { connectTimeout: 2_000, ...options } },
    );
  }
  return new Redis(target.url!, { connectTimeout: 2_000, ...options });
}

function pick<T>(items: ReadonlyArray<readonly [T, number]>): T {
  let u = random();
  for (const [item, share] of items) {
    if ((u -= share) < 0) return item;
  }
  return items[items.length - 1]![0];
}

function callerKey(space: 'ip' | 'user'): string {
  return random() < 0.5
    ? `${space}:h${Math.floor(random() * HOT_KEYS)}`
    : `${space}:c${Math.floor(random() * COLD_KEYS)}`;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits for `work` (its outcome ignored) at most `ms`: a command whose connection broke may never
 * be answered (ioredis drops the commands of a broken connection it does not send again).
 */
const bounded = (work: Promise<unknown>, ms: number) =>
  Promise.race([work.catch(() => undefined), sleep(ms)]);

/**
 * The fleet scenario's side of a worker: its own connection (through the run's proxy, which cuts
 * it for the outage), its own store beating every FLEET_BEAT_MS, and `failMode: 'memory'`
 * limiters on a few keys.
 */
class Fleet {
  readonly client: Redis;
  readonly store: RedisStore;
  private readonly limiters: Array<[string, Limiter]>;

  constructor(url: string, prefix: string) {
    this.client = new Redis(url, {
      connectTimeout: 2_000,
      maxRetriesPerRequest: 1,
      autoResendUnfulfilledCommands: false,
      retryStrategy: () => 50, // back within 50 ms of the proxy letting connections through
    });
    this.client.on('error', () => {});
    this.store = new RedisStore({ client: this.client, prefix, fleetBeatMs: FLEET_BEAT_MS });
    const options = {
      timeoutMs: TIMEOUT_MS,
      failMode: 'memory' as const,
      onStoreFailure: () => {},
    };
    this.limiters = [FLEET, FLEET_LOG].map((p) => [p.name, new Limiter(this.store, p, options)]);
  }

  async warm(): Promise<void> {
    for (const [, limiter] of this.limiters) await limiter.peek(`warm:${worker}`);
    this.client.options.enableOfflineQueue = false; // an outage's calls fail at once
  }

  get counts(): FleetCounts {
    const { view, owing, reconciled, refusedFull } = this.store.fleet;
    return {
      size: view?.size ?? 0,
      established: view?.established ?? false,
      owing,
      reconciled,
      refusedFull,
      pending: this.store.lostReplies.pending,
    };
  }

  /** One call of each policy on one key; `log` gets an F line per call. */
  call(log: (line: string) => void, done: () => void): void {
    const key = fleetKey(Math.floor(random() * FLEET_KEYS));
    const startedAt = Date.now();
    let left = this.limiters.length;
    for (const [name, limiter] of this.limiters) {
      limiter
        .consume(key)
        .then(
          (d) => {
            const { at, spendId = '', fallback } = d.receipt;
            const fields = d.allowed ? [at, fallback ? 'm' : 'r', spendId] : ['', 'x', ''];
            log(['F', startedAt, name, key, 1, ...fields].join('\t'));
          },
          (error: unknown) => {
            process.stderr.write(`worker ${worker}: ${name} rejected: ${String(error)}\n`);
            log(['F', startedAt, name, key, 1, '', 'e', ''].join('\t'));
          },
        )
        .finally(() => {
          if (--left === 0) done();
        });
    }
  }

  /** Until this process is established in a fleet of every worker (or 10 s passed). */
  async established(workers: number): Promise<FleetCounts> {
    const end = Date.now() + 10_000;
    while (Date.now() < end && !(this.counts.established && this.counts.size === workers))
      await sleep(20);
    return this.counts;
  }

  /** Until the fallback owes Redis nothing and lost replies are settled (or 5 s passed). */
  async settled(): Promise<FleetCounts> {
    const end = Date.now() + 5_000;
    while (Date.now() < end) {
      await bounded(this.store.settleLostReplies(), 1_000);
      const counts = this.counts;
      if (counts.owing === 0 && counts.pending === 0 && counts.established) return counts;
      await sleep(50);
    }
    // Not settled in time: one heartbeat more, and what it answered, for the report.
    const error = await Promise.race([
      this.store.heartbeat().then(
        () => 'the heartbeat succeeded, still owing',
        (e: unknown) => `the heartbeat failed: ${String(e)}`,
      ),
      sleep(2_000).then(() => 'the heartbeat did not answer in 2 s'),
    ]);
    const { owing, pending } = this.counts;
    const state = `client ${this.client.status}, ${owing} fallback spends owing, ${pending} lost replies`;
    return { ...this.counts, error: `${error} (${state})` };
  }

  async close(): Promise<void> {
    await bounded(this.store.leaveFleet(), 1_000);
    this.client.disconnect();
  }
}

/** Settles the store's lost replies whose deadline passed, trying for up to `ms`; what is left. */
async function settleLost(store: RedisStore, ms: number): Promise<number> {
  const end = Date.now() + ms;
  for (;;) {
    await bounded(store.settleLostReplies(), 1_000);
    if (store.lostReplies.pending === 0 || Date.now() >= end) return store.lostReplies.pending;
    await sleep(100);
  }
}

class Run {
  private readonly client: Redis | Cluster;
  readonly store: RedisStore;
  readonly fleet?: Fleet;
  private fleetOn = false;
  private readonly limiters = new Map<string, Limiter>();
  private readonly probe: Limiter;
  private readonly probeLog: Limiter;
  private readonly log: WriteStream;
  private lines: string[] = [];
  private phase = 0;
  private inFlight = 0;
  private drained?: () => void;
  calls = 0;
  clientErrors = 0;

  constructor(private readonly target: TargetMessage) {
    this.client = connect(target);
    this.client.on('error', () => this.clientErrors++);
    const store = (this.store = new RedisStore({ client: this.client, prefix: target.prefix }));
    if (target.fleetUrl) this.fleet = new Fleet(target.fleetUrl, target.fleetPrefix!);
    const options = { timeoutMs: TIMEOUT_MS, onStoreFailure: () => {} };
    for (const policy of POLICIES)
      this.limiters.set(policy.name, new Limiter(store, policy, options));
    this.probe = new Limiter(store, PROBE, options);
    this.probeLog = new Limiter(store, PROBE_LOG, options);
    this.log = createWriteStream(target.log);
  }

  async warm(): Promise<void> {
    // Functions loaded and the clock offset measured before the clock starts.
    for (const limiter of [...this.limiters.values(), this.probe, this.probeLog])
      await limiter.peek(`warm:${worker}`);
    await this.fleet?.warm();
    if (this.client instanceof Redis && this.target.url && worker % 2 === 1) {
      // As the Nest module does once ready: calls fail at once while disconnected.
      this.client.options.enableOfflineQueue = false;
    }
  }

  setPhase(phase: number, fleet: boolean): void {
    this.phase = phase;
    this.fleetOn = fleet && this.fleet !== undefined;
  }

  /** Calls at `ratePerSecond` until `stopped()` says so. */
  async drive(stopped: () => boolean): Promise<void> {
    const start = performance.now();
    let issued = 0;
    let fleetIssued = 0;
    let fleetFrom = -1;
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const stalls = this.watchStalls();
    while (!stopped()) {
      const due = Math.floor(((performance.now() - start) / 1000) * this.target.ratePerSecond);
      for (let n = 0; issued < due && n < 100; n++, issued++) this.call();
      if (this.fleetOn) {
        const now = performance.now();
        if (fleetFrom < 0) [fleetFrom, fleetIssued] = [now, 0];
        const fleetDue = Math.floor(((now - fleetFrom) / 1000) * FLEET_RATE);
        for (; fleetIssued < fleetDue; fleetIssued++) {
          this.inFlight++;
          this.fleet!.call(
            (line) => this.lines.push(line),
            () => {
              if (--this.inFlight === 0) this.drained?.();
            },
          );
        }
      } else {
        fleetFrom = -1;
      }
      this.flush();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    if (this.inFlight > 0) await new Promise<void>((resolve) => (this.drained = resolve));
    clearInterval(stalls);
    delay.disable();
    // Late replies are refunded by their receipts: give those refunds time to land.
    await new Promise((resolve) => setTimeout(resolve, 300));
    this.maxLoopDelayMs = delay.max / 1e6;
  }

  maxLoopDelayMs = 0;

  /**
   * Logs every stretch of more than 10 ms in which a 5 ms timer could not run, with the CPU the
   * process used meanwhile and, from Linux schedstat, the CPU its main thread used and the time it
   * waited for a CPU while runnable. A main thread on CPU for the whole stretch means the
   * process's own work held the event loop; off CPU, the machine (or the process's helper threads
   * waiting for a CPU) kept it from running.
   */
  private watchStalls(): ReturnType<typeof setInterval> {
    let lastWall = Date.now();
    let lastTick = performance.now();
    let lastCpu = process.cpuUsage();
    let lastSched = schedstat();
    return setInterval(() => {
      const tick = performance.now();
      const cpu = process.cpuUsage();
      const wall = Date.now();
      const sched = schedstat();
      if (tick - lastTick > 10) {
        const cpuMs = (cpu.user - lastCpu.user + cpu.system - lastCpu.system) / 1000;
        const mainMs = sched.cpuMs - lastSched.cpuMs;
        const waitMs = sched.waitMs - lastSched.waitMs;
        this.lines.push(
          `L\t${lastWall}\t${wall}\t${cpuMs.toFixed(1)}\t${mainMs.toFixed(1)}\t${waitMs.toFixed(1)}`,
        );
      }
      [lastWall, lastTick, lastCpu, lastSched] = [wall, tick, cpu, sched];
    }, 5);
  }

  private call(): void {
    const kind = pick(CALL_MIX);
    const cost = random() < 0.7 ? 1 : 2;
    const startedAt = Date.now();
    const t0 = performance.now();
    this.calls++;
    this.inFlight++;
    const probe = kind === 'probe' || kind === 'probelog';
    const key = probe ? probeKey(this.phase, worker, Math.floor(random() * PROBE_KEYS)) : '';
    const settled = (outcome: Outcome) => {
      const latency = (performance.now() - t0).toFixed(2);
      this.lines.push(`D\t${startedAt}\t${latency}\t${kind}\t${outcome}${probe ? `\t${key}` : ''}`);
      if (--this.inFlight === 0) this.drained?.();
    };
    this.decide(kind, cost, key).then(
      ({ outcome, charged }) => {
        for (const d of charged) this.charged(startedAt, d);
        settled(outcome);
      },
      (error: unknown) => {
        process.stderr.write(`worker ${worker}: ${kind} rejected: ${String(error)}\n`);
        settled('e');
      },
    );
  }

  private async decide(
    kind: CallKind,
    cost: number,
    probeCallerKey: string,
  ): Promise<{ outcome: Outcome; charged: readonly Decision[] }> {
    if (kind === 'stack') {
      const stacked = await Limiter.consumeAll([
        { limiter: this.limiters.get('sw')!, keys: callerKey('ip') },
        { limiter: this.limiters.get('tb')!, keys: callerKey('user'), cost },
      ]);
      return { outcome: stackOutcome(stacked), charged: stacked.allowed ? stacked.decisions : [] };
    }
    let limiter: Limiter;
    let keys: string | string[];
    if (kind === 'probe' || kind === 'probelog') {
      limiter = kind === 'probe' ? this.probe : this.probeLog;
      keys = probeCallerKey;
    } else if (kind === 'multi') {
      limiter = this.limiters.get(POLICIES[Math.floor(random() * POLICIES.length)]!.name)!;
      keys = [callerKey('ip'), callerKey('user')];
    } else {
      limiter = this.limiters.get(kind)!;
      keys = callerKey(random() < 0.5 ? 'ip' : 'user');
    }
    const decision = await limiter.consume(keys, { cost });
    return { outcome: outcome(decision), charged: decision.allowed ? [decision] : [] };
  }

  private charged(startedAt: number, decision: Decision): void {
    const { receipt } = decision;
    if (!receipt.spent) return;
    receipt.keys.forEach((key, i) => {
      const at = receipt.atByKey?.[i] ?? receipt.at;
      const id = receipt.spendId ?? '';
      this.lines.push(`S\t${startedAt}\t${receipt.policy}\t${key}\t${receipt.cost}\t${at}\t${id}`);
    });
  }

  private flush(): void {
    if (this.lines.length === 0) return;
    this.log.write(`${this.lines.join('\n')}\n`);
    this.lines = [];
  }

  async close(): Promise<void> {
    this.flush();
    await new Promise<void>((resolve) => this.log.end(resolve));
    await this.fleet?.close();
    this.client.disconnect();
  }
}

/** CPU time of this thread and its time waiting on a run queue, in ms; NaN off Linux. */
function schedstat(): { cpuMs: number; waitMs: number } {
  try {
    const [cpu, wait] = readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ');
    return { cpuMs: Number(cpu) / 1e6, waitMs: Number(wait) / 1e6 };
  } catch {
    return { cpuMs: NaN, waitMs: NaN };
  }
}

function outcome(decision: Decision): Outcome {
  if (decision.failure) return decision.allowed ? 'u' : 'f';
  if (!decision.allowed) return 'r';
  return decision.receipt.spent ? 'a' : 'u';
}

function stackOutcome(stacked: StackedDecision): Outcome {
  if (stacked.decisions.some((d) => d.failure)) return stacked.allowed ? 'u' : 'f';
  if (!stacked.allowed) return 'r';
  return stacked.decisions.every((d) => d.receipt.spent) ? 'a' : 'u';
}

let run: Run | undefined;
let stopping = false;
/** Resolves at the first phase: every worker starts driving together. */
let go: (() => void) | undefined;

process.on('message', (message: ToWorker) => {
  if (message.type === 'target') {
    stopping = false;
    void runTarget(message);
  } else if (message.type === 'phase') {
    run?.setPhase(message.phase, message.fleet);
    go?.();
  } else if (message.type === 'fleet-wait') {
    const fleet = run?.fleet;
    if (fleet)
      void fleet
        .established(message.workers)
        .then((counts) => send({ type: 'fleet-ready', counts }));
  } else if (message.type === 'fleet-settle') {
    const fleet = run?.fleet;
    if (fleet) void fleet.settled().then((counts) => send({ type: 'fleet-settled', counts }));
  } else if (message.type === 'settle') {
    const current = run;
    if (current)
      void settleLost(current.store, 3_000).then((pending) => send({ type: 'settled', pending }));
  } else {
    stopping = true;
  }
});

async function runTarget(target: TargetMessage): Promise<void> {
  run = new Run(target);
  await run.warm();
  gc();
  const heapStartBytes = process.memoryUsage().heapUsed;
  const rejectionsBefore = unhandledRejections;
  const exceptionsBefore = uncaughtExceptions;
  const started = new Promise<void>((resolve) => (go = resolve));
  send({ type: 'ready' });
  await started;
  go = undefined;
  await run.drive(() => stopping);
  // Lost replies settled before the last probes are read (they are settled in the background
  // anyway; a shutdown hook does the same).
  const lostPending = await settleLost(run.store, 3_000);
  gc();
  const heapEndBytes = process.memoryUsage().heapUsed;
  await run.close();
  send({
    type: 'done',
    calls: run.calls,
    heapStartBytes,
    heapEndBytes,
    unhandledRejections: unhandledRejections - rejectionsBefore,
    uncaughtExceptions: uncaughtExceptions - exceptionsBefore,
    clientErrors: run.clientErrors,
    lostPending,
    maxLoopDelayMs: run.maxLoopDelayMs,
  });
  run = undefined;
}

process.on('disconnect', () => process.exit(0));
