// The chaos run: 4 worker processes, each with its own connections, call every algorithm (single
// keys, two keys, stacks) at a steady rate over a few thousand keys, first against one
// redis-server, then against a local 6-node Cluster, while a fault schedule plays. Afterwards a
// ledger checks every charged key against its policy (see chaos/ledger.ts), and the probe keys
// against what Redis stored. On the single server, a fleet of `failMode: 'memory'` limiters also
// loses Redis for a few seconds (see chaos/fleet.ts): what the fleet admitted per key and window is
// counted against the limit, and what the fallbacks allowed must be in Redis afterwards.
//
//   npm run chaos -- [--quick] [--phase-ms N] [--rate N] [--out DIR] [--no-write]
//
// Must be zero: over-admitted units, decisions slower than timeoutMs + 50 ms, errors reaching a
// caller, phantom spends, probe units still charged for calls told the store failed once the stores
// settled their lost replies (reply lost), unhandled rejections; the fleet's units past the limit
// in windows inside the outage, and fallback spends not charged into Redis after it. The exit
// status is 1 when one is not.
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import { storageKey } from '../lib/stores/storage-key.util';
import { audit, type LossEvent, type Phase, type ProbeRead, readLogs } from './chaos/ledger';
import { auditFleet, type FleetFigures, type FleetSettled } from './chaos/fleet';
import {
  FLEET_KEYS,
  FLEET_LOG,
  type FleetCounts,
  fleetKey,
  type FromWorker,
  PROBE,
  PROBE_KEYS,
  PROBE_LOG,
  probeKey,
  type ToWorker,
} from './chaos/plan';
import {
  failures,
  fleetTable,
  latencyChart,
  targetNotes,
  targetTable,
  type TargetResult,
} from './chaos/report';
import { compileWorker } from './chaos/compile';
import {
  type FaultContext,
  type FaultTimings,
  localCluster,
  singleRedis,
  type Target,
} from './chaos/targets';
import { parseCommandLine, positiveInteger } from './support/cli.util';
import { redisVersion } from './support/redis.util';
import { describeMachine, machine, RESULTS_DIR, writeResult } from './support/report.util';
import { findRedisServerBinary } from '../test/support/redis-server';

const USAGE = `npm run chaos -- [options]
  --quick        the CI run: fewer faults, 1.8 s phases (about 45 s instead of about 3 min)
  --phase-ms N   length of a phase (default 9000, --quick 1800)
  --rate N       calls per second per worker (default 250)
  --out DIR      where chaos.md and chaos.svg go (default bench/results; --quick: chaos-quick.*)
  --no-write     print the tables only
  --keep-logs    keep the workers' logs (their directory is printed)
  --rev COMMIT   run lib/ and lua/ as of COMMIT (git archive) instead of the work tree
  --cpu-prof DIR write a CPU profile of each worker into DIR (to find what held an event loop)`;

const WORKERS = 4;

const options = parseCommandLine(USAGE, {
  quick: { type: 'boolean' },
  'phase-ms': { type: 'string' },
  rate: { type: 'string' },
  out: { type: 'string' },
  'no-write': { type: 'boolean' },
  'keep-logs': { type: 'boolean' },
  'cpu-prof': { type: 'string' },
  rev: { type: 'string' },
});
const quick = options.quick ?? false;
const phaseMs = positiveInteger(
  options['phase-ms'] ?? (quick ? '1800' : '9000'),
  'phase-ms',
  USAGE,
);
const rate = positiveInteger(options.rate ?? '250', 'rate', USAGE);
/** Before a phase's fault: time for the previous phase's late replies, then its probes are read. */
const leadMs = Math.min(1_500, Math.round(phaseMs * 0.3));
/** After a fault has been played and the target serves again: load on the recovered target. */
const minTailMs = Math.round(phaseMs * 0.4);
const timings: FaultTimings = quick
  ? { stopMs: 1_000, sleepMs: 800, outageMs: 2_500 }
  : { stopMs: 1_500, sleepMs: 1_000, outageMs: 4_000 };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Worker {
  readonly child: ChildProcess;
  next(type: FromWorker['type']): Promise<FromWorker>;
}

function startWorker(script: string, index: number): Worker {
  const child = fork(script, [], {
    execArgv: [
      '--enable-source-maps',
      '--expose-gc',
      ...(options['cpu-prof'] ? ['--cpu-prof', '--cpu-prof-dir', options['cpu-prof']] : []),
    ],
    env: { ...process.env, CHAOS_WORKER: String(index), CHAOS_SEED: '17' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const inbox: FromWorker[] = [];
  let waiting: ((message: FromWorker) => void) | undefined;
  child.on('message', (message: FromWorker) => {
    if (waiting) waiting(message);
    else inbox.push(message);
  });
  const next = (type: FromWorker['type']) =>
    new Promise<FromWorker>((resolve, reject) => {
      const queued = inbox.shift();
      if (queued) return queued.type === type ? resolve(queued) : reject(new Error('out of order'));
      const onExit = (code: number | null) =>
        reject(new Error(`worker ${index} exited (${code}) while the run waited for '${type}'`));
      child.once('exit', onExit);
      waiting = (message) => {
        waiting = undefined;
        child.off('exit', onExit);
        if (message.type === type) resolve(message);
        else reject(new Error(`worker ${index} sent '${message.type}', expected '${type}'`));
      };
    });
  return { child, next };
}

function broadcast(workers: readonly Worker[], message: ToWorker): void {
  for (const w of workers) w.child.send(message);
}

async function readProbes(target: Target, prefix: string, phase: number): Promise<ProbeRead> {
  const keys: string[] = [];
  for (let w = 0; w < WORKERS; w++)
    for (let n = 0; n < PROBE_KEYS; n++) keys.push(probeKey(phase, w, n));
  const { values, redisNow } = await target.read(
    keys.map((key) => storageKey(prefix, key, PROBE.name, 0)),
  );
  const counts = new Map<string, number>();
  keys.forEach((key, i) => counts.set(key, Number(values[i] ?? 0)));
  const sets = await target.readSortedSets(
    keys.map((key) => storageKey(prefix, key, PROBE_LOG.name, 0)),
  );
  const members = new Map<string, Array<[string, number]>>();
  keys.forEach((key, i) => {
    const flat = sets[i]!;
    const list: Array<[string, number]> = [];
    for (let m = 0; m < flat.length; m += 2) list.push([flat[m]!, Number(flat[m + 1])]);
    members.set(key, list);
  });
  return { phase, redisNow, counts, members };
}

/** Asks every worker to settle its lost replies (whose deadline passed); resolves when they did. */
async function settleLostReplies(workers: readonly Worker[]): Promise<void> {
  broadcast(workers, { type: 'settle' });
  await Promise.all(workers.map((w) => w.next('settled')));
}

/** What every worker's fleet store says, once it answers `type`. */
async function fleetCounts(
  workers: readonly Worker[],
  type: 'fleet-ready' | 'fleet-settled',
): Promise<FleetCounts[]> {
  const answers = await Promise.all(workers.map((w) => w.next(type)));
  return answers.map((a) => (a.type === type ? a.counts : undefined)!);
}

/** The fleet's part of a target's run, gathered while its fault plays. */
interface FleetRun {
  outage?: { from: number; to: number };
  settled?: FleetSettled;
  members?: Map<string, string[]>;
}

async function runTarget(
  target: Target,
  workers: readonly Worker[],
  logDir: string,
): Promise<TargetResult> {
  const faults = target.faults.filter((f) => !quick || f.quick);
  const prefix = `chaos:${target.name}:`;
  const logs = workers.map((_, i) => join(logDir, `${target.name}-${i}.log`));
  const readyAsked = Date.now();
  workers.forEach((w, i) =>
    w.child.send({
      type: 'target',
      url: target.url,
      nodes: target.nodes,
      prefix,
      log: logs[i]!,
      ratePerSecond: rate,
      fleetUrl: target.fleetUrl,
      fleetPrefix: target.fleetPrefix,
    } satisfies ToWorker),
  );
  await Promise.all(workers.map((w) => w.next('ready')));
  console.log(`  workers ready after ${((Date.now() - readyAsked) / 1000).toFixed(1)} s`);
  const redisStartBytes = await target.memoryBytes();
  const began = Date.now();
  const phases: Phase[] = [];
  const losses: LossEvent[] = [];
  const probes: ProbeRead[] = [];
  const problems: string[] = [];
  const fleet: FleetRun = {};
  const context: FaultContext = {
    fleetReady: async () => {
      broadcast(workers, { type: 'fleet-wait', workers: WORKERS });
      const counts = await fleetCounts(workers, 'fleet-ready');
      const late = counts.findIndex((c) => !c.established || c.size !== WORKERS);
      if (late >= 0)
        throw new Error(`worker ${late} was not established in a fleet of ${WORKERS} in 10 s`);
    },
    fleetSettled: async () => {
      broadcast(workers, { type: 'fleet-settle' });
      const counts = await fleetCounts(workers, 'fleet-settled');
      const sum = (pick: (c: FleetCounts) => number) => counts.reduce((t, c) => t + pick(c), 0);
      fleet.settled = {
        owing: sum((c) => c.owing),
        reconciled: sum((c) => c.reconciled),
        refusedFull: sum((c) => c.refusedFull),
        pending: sum((c) => c.pending),
      };
      const keys = Array.from({ length: FLEET_KEYS }, (_, n) => fleetKey(n));
      const sets = await target.readSortedSets(
        keys.map((key) => storageKey(target.fleetPrefix!, key, FLEET_LOG.name, 0)),
      );
      fleet.members = new Map(
        keys.map((key, i) => [key, sets[i]!.filter((_, m) => m % 2 === 0)] as const),
      );
      const stuck = counts.flatMap((c, i) => (c.error ? [`worker ${i}: ${c.error}`] : []));
      if (stuck.length) throw new Error(`the fleet did not settle in 5 s (${stuck.join('; ')})`);
    },
    outage: (from, to) => void (fleet.outage = { from, to }),
  };
  for (const [index, fault] of faults.entries()) {
    const start = Date.now();
    if (index > 0) phases[index - 1] = { ...phases[index - 1]!, end: start };
    phases.push({ name: fault.name, start, end: Infinity });
    broadcast(workers, { type: 'phase', phase: index, fleet: fault.fleet ?? false });
    process.stdout.write(`  ${target.name}: ${fault.name} …`);
    await sleep(leadMs);
    if (index > 0) {
      // What the last phase's faults lost with their connections is settled before it is read.
      await settleLostReplies(workers);
      probes.push(await readProbes(target, prefix, index - 1));
    }
    try {
      losses.push(...(await fault.apply(context)));
    } catch (error) {
      problems.push(`the fault '${fault.name}' failed: ${(error as Error).message}`);
    }
    await sleep(Math.max(minTailMs, start + phaseMs - Date.now()));
    process.stdout.write(` ${((Date.now() - start) / 1000).toFixed(1)} s\n`);
  }
  phases[phases.length - 1] = { ...phases[phases.length - 1]!, end: Date.now() };
  broadcast(workers, { type: 'stop' });
  const done = await Promise.all(workers.map((w) => w.next('done')));
  probes.push(await readProbes(target, prefix, faults.length - 1));
  const redisEndBytes = await target.memoryBytes();
  const seconds = (Date.now() - began) / 1000;
  const sum = (pick: (d: Extract<FromWorker, { type: 'done' }>) => number) =>
    done.reduce((total, d) => total + (d.type === 'done' ? pick(d) : 0), 0);
  writeFileSync(
    join(logDir, `${target.name}-probes.json`),
    JSON.stringify(
      probes.map((p) => ({
        ...p,
        counts: Object.fromEntries(p.counts),
        members: Object.fromEntries(p.members),
      })),
    ),
  );
  const logged = readLogs(logs);
  const rows = audit(phases, logged, losses, probes);
  let fleetFigures: FleetFigures | undefined;
  if (fleet.outage && fleet.settled && fleet.members) {
    fleetFigures = auditFleet(logged.fleet, fleet.outage, fleet.members, fleet.settled);
  } else if (faults.some((f) => f.fleet)) {
    problems.push('the fleet scenario did not complete (see the problems above)');
  }
  const stalls = logged.stalls.flat();
  const busy = stalls.filter((l) => l.mainCpuMs >= 0.5 * (l.to - l.from));
  const offCpuMs = stalls.reduce((t, l) => t + Math.max(0, l.to - l.from - l.mainCpuMs), 0);
  return {
    name: target.name,
    description: target.description,
    seconds,
    rows,
    fleet: fleetFigures,
    lostPending: sum((d) => d.lostPending),
    heapStartBytes: sum((d) => d.heapStartBytes),
    heapEndBytes: sum((d) => d.heapEndBytes),
    redisStartBytes,
    redisEndBytes,
    unhandledRejections: sum((d) => d.unhandledRejections),
    uncaughtExceptions: sum((d) => d.uncaughtExceptions),
    maxLoopDelayMs: Math.max(...done.map((d) => (d.type === 'done' ? d.maxLoopDelayMs : 0))),
    starvedSeconds: offCpuMs / 1000,
    longestBusyStallMs: busy.reduce((m, l) => Math.max(m, l.to - l.from), 0),
    problems,
  };
}

async function main(): Promise<number> {
  const started = Date.now();
  const logDir = mkdtempSync(join(os.tmpdir(), 'redlimit-chaos-'));
  const script = compileWorker(join(logDir, 'js'), revision);
  const workers = Array.from({ length: WORKERS }, (_, i) => startWorker(script, i));
  const results: TargetResult[] = [];
  let version = 'unknown';
  try {
    for (const make of [singleRedis, localCluster]) {
      const target = await make(timings);
      try {
        if (results.length === 0 && target.url) {
          const { default: Redis } = await import('ioredis');
          const client = new Redis(target.url);
          version = await redisVersion(client);
          client.disconnect();
        }
        const elapsed = ((Date.now() - started) / 1000).toFixed(1);
        console.log(`${target.name} (started at +${elapsed} s): ${target.description}`);
        results.push(await runTarget(target, workers, logDir));
      } finally {
        await target.stop();
      }
    }
  } finally {
    for (const w of workers) w.child.disconnect();
    if (options['keep-logs']) console.log(`logs kept in ${logDir}`);
    else rmSync(logDir, { recursive: true, force: true });
  }

  const seconds = (Date.now() - started) / 1000;
  const flags = [quick ? '--quick' : '', options.rev ? `--rev ${options.rev}` : ''].filter(Boolean);
  const command = `npm run chaos${flags.length ? ` -- ${flags.join(' ')}` : ''}`;
  const here = machine(version);
  const measured = revision
    ? { ...here, revision: `${revision.slice(0, 7)} (lib/ and lua/ from git)` }
    : here;
  const subtitle =
    `${command}: ${WORKERS} workers × ${rate} calls/s, ${phaseMs / 1000} s phases, ` +
    `${seconds.toFixed(0)} s in all`;
  const failed = failures(results);
  const verdict = failed.length
    ? `**Failed:** ${failed.join('; ')}.`
    : 'Every must-be-zero figure is 0 (over-admitted, phantom, reply lost, slow, errors, ' +
      'unhandled rejections; the fleet: over the limit inside the outage, not reconciled, ' +
      'charged but not admitted).';
  const sections = results.map(
    (r) =>
      `## ${r.name === 'redis' ? 'One Redis' : 'Redis Cluster'}: ${r.description}\n\n` +
      `${targetTable(r)}\n\n${r.fleet ? `${fleetTable(r)}\n\n` : ''}${targetNotes(r)}`,
  );
  const markdown = [
    `# Chaos run${quick ? ' (quick)' : ''}`,
    `${describeMachine(measured)}. \`${command}\`: ${WORKERS} worker processes, each ` +
      `with its own connections, ${rate} calls/s each (single keys, two keys and stacks over ` +
      `every algorithm, 16 hot and 2,000 cold keys per key space), timeoutMs 500, fail closed; ` +
      `${phaseMs / 1000} s phases, ${seconds.toFixed(0)} s in all.`,
    verdict,
    ...sections,
    [
      'Columns: **over-admitted**, units charged past a policy with the documented losses ' +
        'allowed for (must be 0); **lost by failover**, units past a policy that only a loss ' +
        'event explains (a restart without persistence, a master killed before its replica had a ' +
        'charge), plus probe units Redis no longer counted; **phantom**, probe units stored in ' +
        'Redis after the deadline of every caller that could have sent them (must be 0); ' +
        "**reply lost**, probe units still stored, once the workers' stores settled their lost " +
        'replies, although the caller was told the store failed (must be 0: the script ran and ' +
        'its answer was lost with a killed connection or master, or came late, and neither the ' +
        'settlement by its outcome marker nor the refund of its late reply gave it back); ' +
        '**slow**, decisions slower than ' +
        "timeoutMs + 50 ms (must be 0); **slow, starved**, the same while the worker's event " +
        'loop stalled with its main thread off CPU for all but 50 ms of the lateness (a busy ' +
        'machine: no timer can fire); **errors**, calls that rejected or were allowed without a ' +
        'charge (must be 0); **store failed**, refusals because Redis failed or timed out (fail ' +
        'closed, expected during a fault). A phase runs from its first call to the next phase: ' +
        'the fault, then the recovered target. Probes are read once every worker settled its ' +
        'lost replies.',
      ' Fleet columns: **windows inside**, (key, window) pairs of the fixed window that lie ' +
        'entirely inside the outage, and **most in one**, the most units admitted in one of ' +
        'them; **over, inside**, units admitted past the limit in them, by the fallbacks and ' +
        'Redis together (must be 0: the shares add up to the limit, no rounding past it); ' +
        '**over, outage began**, the same in the window in which the outage began, apart: the ' +
        'fallback cannot know what Redis admitted in it before it failed, so up to twice the ' +
        'limit; **over, outage ended**, the same in the window(s) in which it ended (Redis ' +
        "decides again before a heartbeat charges the fallbacks' spends into it); **over, " +
        'elsewhere**, in every other window (must be 0); **not reconciled**, timed-probe spends ' +
        'a fallback allowed that Redis does not hold once the workers report nothing owing (must ' +
        'be 0); **charged, not admitted**, timed-probe units Redis holds whose caller was not ' +
        'admitted (must be 0); **owing / journal full / lost pending**, fallback spends still owing ' +
        "Redis, calls refused for a full journal, and the fleet stores' unsettled lost replies (each " +
        'must be 0); **reconciled**, fallback spends charged into Redis (those of windows that ' +
        'had passed weigh nothing and are not charged).',
    ].join(''),
    `![p99 latency per phase](${quick ? 'chaos-quick' : 'chaos'}.svg)`,
  ].join('\n\n');
  console.log(`\n${markdown}`);
  if (!options['no-write']) {
    const dir = options.out ?? RESULTS_DIR;
    const name = quick ? 'chaos-quick' : 'chaos';
    writeResult(dir, `${name}.md`, markdown);
    writeResult(dir, `${name}.svg`, latencyChart(results, subtitle));
    console.log(`\nwrote ${join(dir, name)}.md and .svg`);
  }
  return failed.length ? 1 : 0;
}

/** `--rev` as a commit id, resolved once: HEAD may move while the run goes on. */
const revision = options.rev
  ? execFileSync('git', ['rev-parse', '--verify', `${options.rev}^{commit}`], {
      encoding: 'utf8',
    }).trim()
  : undefined;

// The harness spawns redis-server; fail early with its message if there is none.
findRedisServerBinary();
main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
