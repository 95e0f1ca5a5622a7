// Memory at scale: a million distinct callers through every algorithm, on a redis-server of its
// own (bytes per caller from INFO memory used_memory, before and after) and through MemoryStore
// (heap per caller after gc, and whether its sweep keeps the heap flat once the keys expire).
//   node --expose-gc -r ts-node/register/transpile-only bench/memory-scale.ts [options]
//   npm run bench:memory-scale -- [options]
// Each caller spends `--spends` times (default 2; a sliding log keeps one member per spend), then
// spends once more and refunds that spend by its receipt (which writes the caller key's refund
// ledger, one id). To finish in minutes, one call charges `--batch` callers at once (a multi-key
// consume: each caller key gets the same stored keys, values and ledger entry as from a call of
// its own; only the spend id is shared). Writes bench/results/memory-scale.md (--out).
import { writeFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { type Decision, Limiter, MemoryStore, type RateAlgorithm, RedisStore } from '../lib';
import { ALGORITHMS } from '../lib/core/policy';
import { spawnRedisServer } from '../test/support/redis-server';
import { parseCommandLine, positiveInteger } from './support/cli.util';

const USAGE = `node --expose-gc -r ts-node/register/transpile-only bench/memory-scale.ts [options]
  --callers N      distinct callers per algorithm (default 1000000)
  --spends N       spends per caller before the refunded one (default 2)
  --batch N        callers charged by one multi-key call (default 100; 1: one call per caller)
  --inflight N     calls in flight at once on Redis (default 50)
  --rounds N       MemoryStore rounds of fresh callers, the clock moved past expiry between (default 3)
  --only WHERE     'redis' or 'memory' (default: both)
  --out FILE       the Markdown report (default bench/results/memory-scale.md; '' for none)`;

// A day's window: no window ends, no bucket refills and no sliding-log member ages out during the run.
const POLICY = { name: 'login', limit: 10, window: '1d' } as const;
const DAY_MS = 86_400_000;
/** Far above any wait a loaded machine causes: a slow answer must not turn into a refusal. */
const TIMEOUT_MS = 120_000;

/** What one algorithm cost on Redis. */
interface RedisRow {
  readonly algorithm: RateAlgorithm;
  readonly keysPerCaller: number;
  readonly stateBytes: number;
  readonly withLedgerBytes: number;
  readonly ledgerBytes: number;
  readonly seconds: number;
}

/** What one algorithm cost in MemoryStore, round after round. */
interface MemoryRow {
  readonly algorithm: RateAlgorithm;
  readonly entriesPerCaller: number;
  readonly bytesPerCaller: number;
  /** Heap (MB, after gc) after each round's callers, the previous round's having expired. */
  readonly heapByRoundMb: readonly number[];
  /** Heap (MB, after gc) once the last round expired and a write swept it. */
  readonly sweptMb: number;
  readonly entriesAfterSweep: number;
  readonly seconds: number;
}

function callerKey(round: number, i: number): string {
  return `ip:${round}.${i >> 16}.${(i >> 8) & 255}.${i & 255}`;
}

/** The caller keys of batch `b` (callers b * size … up to `callers`). */
function batchKeys(round: number, b: number, size: number, callers: number): string[] {
  const keys: string[] = [];
  for (let i = b * size; i < Math.min(callers, (b + 1) * size); i++) keys.push(callerKey(round, i));
  return keys;
}

/** Runs `task(i)` for i in [0, count), at most `inflight` at once. */
async function drive(
  count: number,
  inflight: number,
  task: (i: number) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(inflight, count) }, lane));
}

function expectAllowed(decision: Decision, keys: readonly string[]): Decision {
  if (!decision.allowed) {
    throw new Error(`${keys[0]}… was refused: the bench expects every spend to fit`);
  }
  return decision;
}

async function usedMemory(client: Redis): Promise<number> {
  const info = await client.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1]);
}

async function redisPass(
  algorithm: RateAlgorithm,
  client: Redis,
  callers: number,
  spends: number,
  batch: number,
  inflight: number,
): Promise<RedisRow> {
  const started = Date.now();
  await client.flushall('SYNC');
  const limiter = new Limiter(
    new RedisStore({ client, prefix: 'rl:' }),
    { ...POLICY, algorithm },
    { timeoutMs: TIMEOUT_MS },
  );
  const batches = Math.ceil(callers / batch);
  // Warm up (loads redlimit's function library and the script cache), then measure from empty.
  await limiter.refund(await limiter.consume(batchKeys(9, 0, batch, batch)));
  await client.flushall('SYNC');
  const before = await usedMemory(client);
  for (let s = 0; s < spends; s++) {
    await drive(batches, inflight, async (b) => {
      const keys = batchKeys(0, b, batch, callers);
      expectAllowed(await limiter.consume(keys), keys);
    });
  }
  const afterSpends = await usedMemory(client);
  const stateKeys = await client.dbsize();
  await drive(batches, inflight, async (b) => {
    const keys = batchKeys(0, b, batch, callers);
    await limiter.refund(expectAllowed(await limiter.consume(keys), keys));
  });
  const afterRefunds = await usedMemory(client);
  const allKeys = await client.dbsize();
  if (allKeys !== 2 * callers || stateKeys !== callers) {
    throw new Error(`${algorithm}: ${stateKeys} state keys and ${allKeys} keys in all`);
  }
  return {
    algorithm,
    keysPerCaller: allKeys / callers,
    stateBytes: (afterSpends - before) / callers,
    withLedgerBytes: (afterRefunds - before) / callers,
    ledgerBytes: (afterRefunds - afterSpends) / callers,
    seconds: (Date.now() - started) / 1000,
  };
}

function heapMb(): number {
  const gc = globalThis.gc;
  if (!gc) throw new Error('run with node --expose-gc (npm run bench:memory-scale does)');
  gc();
  gc();
  return process.memoryUsage().heapUsed / 1e6;
}

async function memoryPass(
  algorithm: RateAlgorithm,
  callers: number,
  spends: number,
  batch: number,
  rounds: number,
): Promise<MemoryRow> {
  const started = Date.now();
  let now = 1_700_000_000_000;
  // Room for every caller (the default maxKeys, 100 000, would forget the oldest instead).
  const store = new MemoryStore({ clock: () => now, maxKeys: 4 * callers });
  const limiter = new Limiter(store, { ...POLICY, algorithm }, { timeoutMs: TIMEOUT_MS });
  const batches = Math.ceil(callers / batch);
  const baseline = heapMb();
  const heapByRoundMb: number[] = [];
  let entries = 0;
  for (let round = 0; round < rounds; round++) {
    for (let b = 0; b < batches; b++) {
      const keys = batchKeys(round, b, batch, callers);
      for (let s = 0; s < spends; s++) expectAllowed(await limiter.consume(keys), keys);
      await limiter.refund(expectAllowed(await limiter.consume(keys), keys));
    }
    heapByRoundMb.push(heapMb());
    entries = store.size;
    // Past every window, ledger lifetime and the day of grace a custom clock gets.
    now += 3 * DAY_MS;
  }
  const perCaller = ((heapByRoundMb[0]! - baseline) * 1e6) / callers;
  // One write sweeps out what expired (at most every sweepIntervalMs of the clock).
  expectAllowed(await limiter.consume('after-expiry'), ['after-expiry']);
  const sweptMb = heapMb() - baseline;
  return {
    algorithm,
    entriesPerCaller: entries / callers,
    bytesPerCaller: perCaller,
    heapByRoundMb: heapByRoundMb.map((mb) => mb - baseline),
    sweptMb,
    entriesAfterSweep: store.size,
    seconds: (Date.now() - started) / 1000,
  };
}

function report(
  callers: number,
  spends: number,
  batch: number,
  version: string | undefined,
  redisRows: readonly RedisRow[],
  memoryRows: readonly MemoryRow[],
): string {
  const lines = [
    `# Memory at scale (\`npm run bench:memory-scale\`)`,
    '',
    `${callers.toLocaleString('en')} distinct callers per algorithm, policy '${POLICY.name}' ` +
      `(${POLICY.limit} per ${POLICY.window}); each caller spends ${spends} times, then once more ` +
      'and refunds that spend by its receipt (writing its refund ledger); one call charges ' +
      `${batch} callers (a multi-key consume: the same stored keys and values per caller as ` +
      'calls of their own, the spend id shared). Node ' +
      `${process.version}, ${new Date().toISOString().slice(0, 10)}.`,
    '',
  ];
  if (redisRows.length > 0) {
    lines.push(
      `## Redis ${version ?? ''}: \`INFO memory\` used_memory, before and after, per caller`,
      '',
      'A redis-server of its own (no persistence), flushed before each algorithm. The figures ' +
        "include everything a key costs the server: the keyspace's and the expiry table's " +
        'entries as well as the value.',
      '',
      '| algorithm | keys per caller | state key (B) | refund ledger (B) | both (B) | time (s) |',
      '|---|---|---|---|---|---|',
      ...redisRows.map(
        (r) =>
          `| ${r.algorithm} | ${r.keysPerCaller} | ${r.stateBytes.toFixed(1)} | ` +
          `${r.ledgerBytes.toFixed(1)} | ${r.withLedgerBytes.toFixed(1)} | ${r.seconds.toFixed(0)} |`,
      ),
      '',
    );
  }
  if (memoryRows.length > 0) {
    const rounds = memoryRows[0]!.heapByRoundMb.length;
    lines.push(
      '## MemoryStore: heap after gc (`--expose-gc`), per caller, and after expiry',
      '',
      `A controllable clock; ${rounds} rounds of fresh callers, the clock moved 3 days on after ` +
        "each (past every window, the ledgers' lifetime and the day of grace a custom clock " +
        "gets). Heap above the store's empty baseline after each round: flat when the sweep " +
        'frees the expired round as the next one writes. Swept: after one write once the last ' +
        'round expired.',
      '',
      '| algorithm | entries per caller | bytes per caller | heap after each round (MB) | swept (MB) | entries left | time (s) |',
      '|---|---|---|---|---|---|---|',
      ...memoryRows.map(
        (r) =>
          `| ${r.algorithm} | ${r.entriesPerCaller} | ${r.bytesPerCaller.toFixed(0)} | ` +
          `${r.heapByRoundMb.map((mb) => mb.toFixed(0)).join(' → ')} | ${r.sweptMb.toFixed(1)} | ` +
          `${r.entriesAfterSweep} | ${r.seconds.toFixed(0)} |`,
      ),
      '',
    );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const values = parseCommandLine(USAGE, {
    callers: { type: 'string', default: '1000000' },
    spends: { type: 'string', default: '2' },
    batch: { type: 'string', default: '100' },
    inflight: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '3' },
    only: { type: 'string', default: '' },
    out: { type: 'string', default: 'bench/results/memory-scale.md' },
  });
  const callers = positiveInteger(values.callers, 'callers', USAGE);
  const spends = positiveInteger(values.spends, 'spends', USAGE);
  const batch = positiveInteger(values.batch, 'batch', USAGE);
  const inflight = positiveInteger(values.inflight, 'inflight', USAGE);
  const rounds = positiveInteger(values.rounds, 'rounds', USAGE);
  if (spends + 1 > POLICY.limit) throw new RangeError(`--spends must be below ${POLICY.limit}`);
  const redisRows: RedisRow[] = [];
  const memoryRows: MemoryRow[] = [];
  let version: string | undefined;
  if (values.only !== 'memory') {
    const server = await spawnRedisServer(['--save', '', '--appendonly', 'no']);
    const client = new Redis(server.url, { enableAutoPipelining: true });
    try {
      version = /redis_version:(\S+)/.exec(await client.info('server'))?.[1];
      for (const algorithm of ALGORITHMS) {
        const row = await redisPass(algorithm, client, callers, spends, batch, inflight);
        console.log(JSON.stringify(row));
        redisRows.push(row);
      }
    } finally {
      client.disconnect();
      await server.stop();
    }
  }
  if (values.only !== 'redis') {
    for (const algorithm of ALGORITHMS) {
      const row = await memoryPass(algorithm, callers, spends, batch, rounds);
      console.log(JSON.stringify(row));
      memoryRows.push(row);
    }
  }
  const markdown = report(callers, spends, batch, version, redisRows, memoryRows);
  console.log(`\n${markdown}`);
  if (values.out) writeFileSync(values.out, markdown);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
