// Side-by-side cost of a rate-limit decision on Redis: redlimit against the floor and the peers,
// on one Redis, in one run; and redlimit on a local Redis Cluster against itself on one node.
//
//   npm run bench -- [--seconds 2] [--rounds 15] [--only REGEXP] [--no-cluster] [--no-write] …
//   (`npm run bench -- --help` lists every option)
//
// Throughput: after a warm-up pass, every round runs every contender for `--seconds` in an order
// shuffled anew each round (seeded; the seed is printed), `--concurrency` decisions in flight over
// `--callers` callers. A row's ratio is its rate over the floor's in the same round; the table
// gives the median of those per-round ratios with a 95 % percentile-bootstrap interval of that
// median. Costs per decision come from `INFO commandstats` (after `CONFIG RESETSTAT`), `INFO cpu`
// and `process.cpuUsage`. Latency: an open-loop pass at a fixed arrival rate (default half the
// floor's saturation rate) with an HDR histogram, latency counted from each decision's intended
// send instant. Memory: keys and bytes per caller with default key names.
//
// Targets (issue 13) are judged on the intervals; a run on a loaded machine (load average at the
// start, or CPU used by other processes during the run, over the thresholds) prints the tables
// but no verdicts. Without --redis or REDIS_URL a private redis-server is started on a free port.
// Results: bench/results/compare.md and compare.svg (not with --only or --no-write).
import Redis, { type Cluster } from 'ioredis';
import { type StartedRedisCluster, startRedisCluster } from '../test/support/cluster';
import {
  captureConsumeShape,
  type ConsumeShape,
  describeShape,
  shapedFloor,
  type ShapedFloor,
} from './compare/consume-shape';
import {
  type Contender,
  contendersFor,
  NAMES,
  type Pass,
  PER_DAY,
  PER_HOUR,
} from './compare/contenders';
import { targets, targetsTable } from './compare/targets';
import { measure, type Sample, sample } from './compare/throughput';
import { barChartSvg } from './support/bar-chart.util';
import {
  nonNegative,
  parseCommandLine,
  positive,
  positiveInteger,
  usageError,
} from './support/cli.util';
import {
  CpuAccount,
  describeLoad,
  LOAD_CHECK_OPTIONS,
  loadCheckSettings,
  loadedBecause,
  settle,
} from './support/load.util';
import { openLoop, percentileUs } from './support/open-loop.util';
import { ProgressBar } from './support/progress.util';
import { allKeys, benchRedis, deleteKeys, memoryUsage, redisVersion } from './support/redis.util';
import {
  describeMachine,
  machine,
  markdownTable,
  RESULTS_DIR,
  writeResult,
} from './support/report.util';
import {
  bootstrapMedian,
  type Estimate,
  grouped,
  median,
  seededRandom,
  shuffled,
  withInterval,
} from './support/stats.util';

const USAGE = `npm run bench -- [options]
  --seconds S          length of one sample (default 2)
  --rounds N           measured rounds, order shuffled each round (default 15)
  --warmup S           warm-up run per contender before the rounds (default 1)
  --concurrency N      decisions in flight (default 64)
  --callers N          distinct callers the decisions are spread over (default 2000)
  --seed N             seed of the shuffles and the bootstrap (default: drawn, and printed)
  --resamples N        bootstrap resamples (default 10000)
  --latency-seconds S  length of one open-loop latency sample (default 5)
  --latency-rounds N   latency rounds, order shuffled each round (default 5)
  --latency-rate N     arrival rate of the latency pass, decisions/s (default: half the floor's
                       median rate in the throughput rounds)
  --cluster            measure redlimit on a local Cluster, 3 masters + 3 replicas (the default)
  --no-cluster         skip the Cluster rows
  --redis URL          Redis to use (default: REDIS_URL, else a private redis-server)
  --only REGEXP        run only matching contenders (and the references they need); writes nothing
  --sample N           callers in the memory pass (default 200)
  --max-load X         judge targets only if the 1-min load average at the start is ≤ X (default 0.5)
  --max-foreign X      ... and other processes used ≤ X cores during the run (default 0.1)
  --settle-seconds S   wait up to S for the load average to fall to --max-load first (default 120)
  --force-verdicts     judge targets even on a loaded machine (for development)
  --out DIR            where results go (default bench/results)
  --no-write           print the tables only`;

const MEMORY_LIMIT = 10;
const MEMORY_WINDOW_MS = 900_000;
const MEMORY_SPENDS = 5;
/** Rows of the open-loop latency pass (those present after --only). */
const LATENCY_ROWS = [NAMES.floor, NAMES.ours('fixed-window', 1), NAMES.uncoalesced(1)];

interface Footprint {
  keysPerCaller: number;
  bytesPerCaller: number;
}

/** One latency round of one row. */
interface LatencySample {
  p50: number;
  p99: number;
  p999: number;
  sentPerSecond: number;
  maxInFlight: number;
  failed: number;
}

function options() {
  const values = parseCommandLine(USAGE, {
    seconds: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '15' },
    warmup: { type: 'string', default: '1' },
    concurrency: { type: 'string', default: '64' },
    callers: { type: 'string', default: '2000' },
    seed: { type: 'string' },
    resamples: { type: 'string', default: '10000' },
    'latency-seconds': { type: 'string', default: '5' },
    'latency-rounds': { type: 'string', default: '5' },
    'latency-rate': { type: 'string' },
    cluster: { type: 'boolean', default: false },
    'no-cluster': { type: 'boolean', default: false },
    redis: { type: 'string', default: '' },
    only: { type: 'string' },
    sample: { type: 'string', default: '200' },
    ...LOAD_CHECK_OPTIONS,
    out: { type: 'string', default: RESULTS_DIR },
    'no-write': { type: 'boolean', default: false },
  });
  if (values.cluster && values['no-cluster'])
    usageError('--cluster and --no-cluster together', USAGE);
  const int = (name: keyof typeof values) => positiveInteger(values[name] as string, name, USAGE);
  const num = (name: keyof typeof values) => positive(values[name] as string, name, USAGE);
  return {
    seconds: num('seconds'),
    rounds: int('rounds'),
    warmup: nonNegative(values.warmup, 'warmup', USAGE),
    concurrency: int('concurrency'),
    callers: int('callers'),
    seed: values.seed === undefined ? Date.now() % 2 ** 31 : int('seed'),
    resamples: int('resamples'),
    latencySeconds: num('latency-seconds'),
    latencyRounds: int('latency-rounds'),
    latencyRate: values['latency-rate'] === undefined ? undefined : num('latency-rate'),
    cluster: !values['no-cluster'],
    redis: values.redis,
    only: values.only === undefined ? undefined : new RegExp(values.only),
    sample: int('sample'),
    ...loadCheckSettings(values, USAGE),
    out: values.out,
    write: !values['no-write'] && values.only === undefined,
  };
}

/** Keys and bytes a contender leaves per caller after `spends` decisions for each of `sample`. */
async function footprint(
  client: Redis,
  contender: Contender,
  sample: number,
  baseline: ReadonlySet<string>,
): Promise<Footprint> {
  for (let s = 0; s < MEMORY_SPENDS; s++) {
    await Promise.all(Array.from({ length: sample }, (_, i) => contender.run(i)));
  }
  const created = [...(await allKeys(client))].filter((key) => !baseline.has(key));
  const bytes = await memoryUsage(client, created);
  for (let i = 0; i < created.length; i += 500) await client.unlink(...created.slice(i, i + 500));
  return { keysPerCaller: created.length / sample, bytesPerCaller: bytes / sample };
}

/** The rows kept by --only, with the references their ratios need. */
function selected(all: readonly Contender[], only: RegExp | undefined): Contender[] {
  if (!only) return [...all];
  const wanted = new Set(all.filter((c) => only.test(c.name)).map((c) => c.name));
  wanted.add(NAMES.floor);
  // Cluster rows are compared with one node running the same store options.
  if (wanted.has(NAMES.cluster))
    wanted.add(NAMES.uncoalesced(1)).add(NAMES.ours('fixed-window', 1));
  if (wanted.has(NAMES.clusterUncoalesced)) wanted.add(NAMES.uncoalesced(1));
  return all.filter((c) => wanted.has(c.name));
}

async function main(): Promise<void> {
  const o = options();
  const settled = await settle(o.limits.maxLoad, o.settleSeconds);
  const account = new CpuAccount(settled);
  const redis = await benchRedis(o.redis);
  if (redis.pid) account.add(redis.pid);
  const plain = new Redis(redis.url);
  const pipelined = new Redis(redis.url, { enableAutoPipelining: true });
  const admin = new Redis(redis.url);
  const runPrefix = `bench:${process.pid}:${Date.now()}:`;
  let cluster: StartedRedisCluster | undefined;
  let clusterClient: Cluster | undefined;
  const clusterAdmins: Redis[] = [];
  const clusterMasters: Redis[] = [];
  let shaped: ShapedFloor | undefined;
  try {
    const host = machine(await redisVersion(plain));
    const clusterNames = [NAMES.cluster, NAMES.clusterUncoalesced];
    if (o.cluster && (!o.only || clusterNames.some((name) => o.only!.test(name)))) {
      process.stderr.write('starting a local Redis Cluster (3 masters + 3 replicas)…\n');
      cluster = await startRedisCluster();
      clusterClient = await cluster.createClient();
      for (const node of await cluster.nodeInfos()) {
        account.add(node.pid);
        const nodeAdmin = new Redis({ host: node.host, port: node.port });
        clusterAdmins.push(nodeAdmin);
        if (node.role === 'master') clusterMasters.push(nodeAdmin);
      }
    }
    const masters = clusterMasters.length;

    const shape: ConsumeShape = await captureConsumeShape(plain, `${runPrefix}shape:`);
    shaped = await shapedFloor(plain, shape);
    const pass: Pass = {
      prefix: runPrefix,
      policy: (algorithm) => algorithm,
      // Never refuses; a sliding log holds one member per spend, so its limit is capped lower.
      limit: (algorithm) => (algorithm === 'sliding-log' ? 100_000 : PER_HOUR.limit),
      windowMs: PER_HOUR.windowMs,
      neverRefuses: true,
    };
    const clients = { plain, pipelined, cluster: clusterClient };
    const contenders = selected(contendersFor(clients, pass, o.callers, shape, shaped), o.only);
    const latencyRows = contenders.filter((c) => LATENCY_ROWS.includes(c.name as never));
    const progress = new ProgressBar(
      contenders.length * (o.rounds + 2) + latencyRows.length * o.latencyRounds,
    );

    // Warm every connection (a few hundred round trips), then every contender.
    for (const client of [plain, pipelined, admin]) {
      await Promise.all(Array.from({ length: 200 }, () => client.ping()));
    }
    if (clusterClient) await Promise.all(clusterMasters.map((m) => m.ping()));
    for (const contender of contenders) {
      progress.tick(`warm-up: ${contender.name}`);
      await contender.prepare?.();
      await measure(contender, o.warmup, o.callers, o.concurrency);
    }

    const random = seededRandom(o.seed);
    const samples = new Map<string, Sample[]>(contenders.map((c) => [c.name, []]));
    const rounds: Array<Map<string, Sample>> = [];
    for (let round = 0; round < o.rounds; round++) {
      const results = new Map<string, Sample>();
      for (const contender of shuffled(contenders, random)) {
        progress.tick(`round ${round + 1}/${o.rounds}: ${contender.name}`);
        const onCluster = contender.on === 'cluster';
        const result = await sample(
          contender,
          o.seconds,
          o.callers,
          o.concurrency,
          onCluster ? clusterAdmins : [admin],
          onCluster ? clusterMasters : [admin],
        );
        results.set(
          contender.name,
          onCluster ? { ...result, perSecond: result.perSecond / masters } : result,
        );
        samples.get(contender.name)!.push(results.get(contender.name)!);
      }
      rounds.push(results);
    }

    // Open-loop latency at a fixed rate below saturation.
    const floorRate = median(samples.get(NAMES.floor)!.map((s) => s.perSecond));
    const latencyRate = o.latencyRate ?? Math.round(floorRate / 2);
    const latency = new Map<string, LatencySample[]>(latencyRows.map((c) => [c.name, []]));
    const latencyRounds: Array<Map<string, LatencySample>> = [];
    for (let round = 0; round < o.latencyRounds; round++) {
      const results = new Map<string, LatencySample>();
      for (const contender of shuffled(latencyRows, random)) {
        progress.tick(`latency ${round + 1}/${o.latencyRounds}: ${contender.name}`);
        const run = await openLoop(contender.run, latencyRate, o.latencySeconds, o.callers);
        const result = {
          p50: percentileUs(run.histogram, 50),
          p99: percentileUs(run.histogram, 99),
          p999: percentileUs(run.histogram, 99.9),
          sentPerSecond: run.sentPerSecond,
          maxInFlight: run.maxInFlight,
          failed: run.failed,
        };
        if (run.firstError) {
          process.stderr.write(
            `\n${contender.name}: ${run.failed} failed: ${run.firstError.message}\n`,
          );
        }
        results.set(contender.name, result);
        latency.get(contender.name)!.push(result);
      }
      latencyRounds.push(results);
    }
    await deleteKeys(plain, `${runPrefix}*`);

    // Memory: fresh instances with default key names (prefix 'rl:', 'rlflx', the guard's hash).
    const footprints = new Map<string, Footprint>();
    const baseline = await allKeys(plain);
    const memoryRows = contendersFor(
      { plain, pipelined },
      {
        prefix: '',
        policy: () => 'api',
        limit: () => MEMORY_LIMIT,
        windowMs: MEMORY_WINDOW_MS,
        neverRefuses: false,
      },
      o.sample,
      shape,
      shaped,
    ).filter((c) => samples.has(c.name) && !c.noFootprint);
    for (const contender of memoryRows) {
      progress.tick(`memory: ${contender.name}`);
      footprints.set(contender.name, await footprint(plain, contender, o.sample, baseline));
    }
    progress.end();
    const load = account.report();
    const loaded = loadedBecause(load, o.limits);
    const notJudged = o.forceVerdicts ? undefined : loaded;

    const bootstrap = seededRandom(o.seed + 1);
    const estimate = (values: number[]): Estimate | undefined =>
      values.length && values.every(Number.isFinite)
        ? bootstrapMedian(values, bootstrap, o.resamples)
        : undefined;
    const ratio = (a: string, b: string) =>
      samples.has(a) && samples.has(b)
        ? estimate(rounds.map((r) => r.get(a)!.perSecond / r.get(b)!.perSecond))
        : undefined;
    const cost = (a: string, field: keyof Sample) =>
      samples.has(a) ? estimate(samples.get(a)!.map((s) => s[field])) : undefined;
    const costRatio = (a: string, fieldA: keyof Sample, b: string, fieldB: keyof Sample) =>
      samples.has(a) && samples.has(b)
        ? estimate(rounds.map((r) => r.get(a)![fieldA] / r.get(b)![fieldB]))
        : undefined;
    const p99Ratio = (a: string) =>
      latency.has(a) && latency.has(NAMES.floor)
        ? estimate(latencyRounds.map((r) => r.get(a)!.p99 / r.get(NAMES.floor)!.p99))
        : undefined;
    const rate = (a: string) =>
      samples.has(a) ? median(samples.get(a)!.map((s) => s.perSecond)) : undefined;
    const of = (name: string, field: keyof Sample) =>
      median(samples.get(name)!.map((s) => s[field]));
    const fixed = (x: number, digits = 1) => (Number.isNaN(x) ? '–' : x.toFixed(digits));

    const nodeRows = contenders.filter((c) => c.on === 'node');
    const ratios = new Map(nodeRows.map((c) => [c.name, ratio(c.name, NAMES.floor)!]));
    const mainTable = markdownTable(
      [
        'contender',
        'decisions/s',
        '× floor [95 % interval]',
        'decisions per script run',
        'Redis commands/decision',
        'Redis µs/decision (commandstats)',
        'Redis CPU µs/decision',
        'Node CPU µs/decision',
        'keys/caller',
        'bytes/caller',
      ],
      nodeRows.map((c) => {
        const memory = footprints.get(c.name);
        return [
          c.name,
          grouped(of(c.name, 'perSecond')),
          withInterval(ratios.get(c.name)!),
          fixed(of(c.name, 'decisionsPerScript')),
          fixed(of(c.name, 'commandsPerDecision'), 2),
          fixed(of(c.name, 'redisCommandUs')),
          fixed(of(c.name, 'redisCpuUs')),
          fixed(of(c.name, 'nodeCpuUs')),
          memory ? String(memory.keysPerCaller) : '–',
          memory ? memory.bytesPerCaller.toFixed(0) : '–',
        ];
      }),
    );
    const latencyTable = markdownTable(
      [
        'contender',
        'rate sent /s',
        'p50 µs',
        'p99 µs',
        'p99.9 µs',
        "p99 × floor's [95 % interval]",
        'most in flight',
        'failed',
      ],
      latencyRows.map((c) => {
        const runs = latency.get(c.name)!;
        const m = (f: keyof LatencySample) => median(runs.map((s) => s[f]));
        const r = p99Ratio(c.name);
        return [
          c.name,
          grouped(m('sentPerSecond')),
          grouped(m('p50')),
          grouped(m('p99')),
          grouped(m('p999')),
          r ? withInterval(r) : '–',
          grouped(m('maxInFlight')),
          grouped(runs.reduce((sum, s) => sum + s.failed, 0)),
        ];
      }),
    );
    const clusterRow = contenders.find((c) => c.on === 'cluster');
    // Each Cluster row, then the single-node row with the same store options.
    const clusterPairs = (
      [
        [NAMES.cluster, NAMES.ours('fixed-window', 1)],
        [NAMES.clusterUncoalesced, NAMES.uncoalesced(1)],
      ] as const
    ).filter(([name, reference]) => samples.has(name) && samples.has(reference));
    const clusterTable = clusterRow
      ? markdownTable(
          [
            'row',
            'decisions/s (per master)',
            '× single node `coalesce: false` [95 % interval]',
            'decisions per script run',
            'Redis µs/decision (commandstats, masters)',
            'Redis CPU µs/decision: masters',
            'replicas',
            'all servers',
            'masters × single node, same options [95 % interval]',
            'Node CPU µs/decision',
          ],
          clusterPairs.flatMap(([name, reference]) =>
            [name, reference].map((row) => [
              row,
              grouped(of(row, 'perSecond')),
              withInterval(ratio(row, NAMES.uncoalesced(1))!),
              fixed(of(row, 'decisionsPerScript')),
              fixed(of(row, 'redisCommandUs')),
              fixed(of(row, 'redisCpuMastersUs')),
              row === name ? fixed(of(row, 'redisCpuReplicasUs')) : '–',
              fixed(of(row, 'redisCpuUs')),
              row === name
                ? withInterval(costRatio(row, 'redisCpuMastersUs', reference, 'redisCpuUs')!)
                : '1.00',
              fixed(of(row, 'nodeCpuUs')),
            ]),
          ),
        )
      : '';
    const targetList = targets({ ratio, cost, costRatio, p99Ratio, rate });
    const markdown = [
      '# redlimit vs the floor and the peers (`npm run bench`)',
      '',
      `Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC: ${describeMachine(host)}.`,
      '',
      describeLoad(load, o.limits) +
        (loaded ? ` **This run: ${loaded}${o.forceVerdicts ? ' (verdicts forced)' : ''}.**` : ''),
      '',
      `Settings: ${o.rounds} rounds of ${o.seconds} s per contender, order shuffled every round ` +
        `(seed ${o.seed}), after a ${o.warmup} s warm-up run each; ${o.concurrency} decisions in ` +
        `flight over ${grouped(o.callers)} callers; latency: ${o.latencyRounds} rounds of ` +
        `${o.latencySeconds} s at ${grouped(latencyRate)} decisions/s` +
        (o.latencyRate === undefined ? " (half the floor's median rate)" : '') +
        `; memory after ${MEMORY_SPENDS} decisions for each of ${o.sample} callers, limit ` +
        `${MEMORY_LIMIT} per ${MEMORY_WINDOW_MS / 60_000} min, default key names. ` +
        `Redlimit's call shape, captured from a real fixed-window consume: ${describeShape(shape)}.`,
      '',
      METHOD,
      '',
      mainTable,
      '',
      '## Targets (issues 13, 14 and 29)',
      '',
      TARGETS_METHOD,
      '',
      targetsTable(targetList, notJudged),
      '',
      '## Latency at a fixed arrival rate',
      '',
      LATENCY_METHOD,
      '',
      latencyTable,
      ...(clusterRow
        ? ['', '## Redis Cluster', '', CLUSTER_METHOD(masters, host.cores), '', clusterTable]
        : []),
    ].join('\n');
    console.log(markdown);
    if (o.write) {
      const svg = barChartSvg({
        title: 'Decisions per second, as a ratio to the floor (higher is better)',
        subtitle:
          `${o.concurrency} in flight, ${grouped(o.callers)} callers, median of ${o.rounds} ` +
          `shuffled rounds with 95 % interval; Node ${host.node}, Redis ${host.redis}, ` +
          `${host.cores} cores; ${host.revision}`,
        referenceLabel: `floor: EVALSHA INCR+PEXPIRE = 1.0 (${grouped(floorRate)}/s)`,
        bars: nodeRows.map((c) => {
          const r = ratios.get(c.name)!;
          return { label: c.name, value: r.value, low: r.low, high: r.high, kind: c.kind };
        }),
      });
      const written = [
        writeResult(o.out, 'compare.md', markdown),
        writeResult(o.out, 'compare.svg', svg),
      ];
      process.stderr.write(`wrote ${written.join(', ')}\n`);
    }
  } finally {
    await deleteKeys(plain, `${runPrefix}*`).catch(() => 0);
    await shaped?.dispose().catch(() => undefined);
    for (const client of [plain, pipelined, admin, ...clusterAdmins]) client.disconnect();
    clusterClient?.disconnect();
    await cluster?.stop();
    await redis.stop();
  }
}

const METHOD = [
  'Method: every round runs every contender once, in an order shuffled anew each round, so drift',
  "on the machine lands on all of them alike. A row's ratio is its rate divided by the floor's in",
  'the same round; the table gives the median of the per-round ratios and a 95 % percentile',
  'bootstrap interval of that median (10,000 resamples of the rounds by default). decisions/s',
  'and the costs are medians over the rounds. The floor is one EVALSHA of INCR + PEXPIRE per',
  'decision on a plain ioredis client; "in redlimit\'s call shape" sends the same work with',
  "redlimit's KEYS, ARGV and reply sizes (it also reads Redis TIME, as redlimit's scripts do),",
  'so the gap between it and the floor is protocol, and the gap between it and redlimit',
  '`coalesce: false` is Lua. "pipelined" rows run on a client with `enableAutoPipelining`',
  '(several commands per socket write, one script run per decision); "coalesced" is redlimit\'s',
  'default (several decisions per script run, see "decisions per script run"). redlimit rows',
  'check that every decision was allowed and had no store failure.',
  '"Redis µs (commandstats)" is `INFO commandstats` time of the commands sent (a script counts',
  'once, with what it runs inside) after `CONFIG RESETSTAT`; "Redis CPU" is the server',
  'process\'s user + system CPU (`INFO cpu`), which adds networking and parsing; "Node CPU" is',
  '`process.cpuUsage()` of the bench process (all threads). Bytes: `MEMORY USAGE … SAMPLES 0`',
  'summed over the keys a contender created. Two keys = one caller charged on an ip key and an',
  'email key at once.',
  `Policies: ${PER_HOUR.label} (sliding log: 10^5 per hour), so nothing is refused; a token`,
  'bucket or GCRA spend then leaves 3.6 ms of backlog and its state is gone before the caller',
  `comes back, so the rows marked "${PER_DAY.label}" run token bucket and GCRA (and fixed window,`,
  'as a control) where a spend leaves 86.4 ms: the state stays, and every decision reads and',
  'rewrites it (as long as a caller comes back within 86.4 ms: over 2,000 callers, above about',
  '23,000 decisions/s).',
].join('\n');

const TARGETS_METHOD = [
  'A "≥" target is met only when the lower bound of the interval is at or above it, a "≤"',
  'target only when the upper bound is at or below it; everything is from this run. Throughput',
  'ratios: per-round ratios as in the table above; CPU: the per-round values; p99: the per-round',
  "ratio of p99 to the floor's p99 in the latency pass (few rounds: a coarse interval).",
].join('\n');

const LATENCY_METHOD = [
  'Open loop: decisions are due at a fixed rate whether or not earlier ones have answered, and',
  'each latency counts from the instant its decision was due (so a stall counts against every',
  'decision that should have gone out during it: no coordinated omission). Recorded in a',
  '`perf_hooks` HDR histogram; medians over the rounds, order shuffled each round. "failed": decisions',
  'that failed over all rounds (a redlimit decision fails after its 1 s timeout, or if refused);',
  'their latency up to the failure is recorded.',
].join('\n');

const CLUSTER_METHOD = (masters: number, cores: number) =>
  [
    `A local Cluster of ${masters} masters and ${masters} replicas (\`test/support/cluster.ts\`),`,
    'redlimit on an ioredis Cluster client, with the store default and with `coalesce: false`, in',
    `the same shuffled rounds as the rows above; its rate is divided by ${masters} (per master).`,
    'Each Cluster row is followed by the single-node row with the same store options. Redis CPU',
    '(`INFO cpu`, user + system) per decision is given for the masters, which run the decisions,',
    'and for the replicas, which apply the writes their masters replicate to them (one node has',
    'none); "all servers" is their sum. "masters × single node" divides the masters\' CPU per',
    "decision by the single node's, round by round. A batch holds the decisions of one slot, so",
    'with callers spread over slots a Cluster decision is a script run of its own (see "decisions',
    'per script run"); what one event-loop turn sends to a master still reaches it in one socket',
    'write ([cluster.md](../../docs/cluster.md#throughput-one-write-per-master-per-turn)).',
    `**On this ${cores}-core machine the ${masters * 2} Cluster servers, the bench and the`,
    'single-node server share the same cores**, so per-master figures understate what one master',
    'does on a machine of its own.',
  ].join('\n');

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
