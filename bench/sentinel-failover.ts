// Sentinel failover: how long decisions stop, and what asynchronous replication loses.
//
//   npm run bench:sentinel -- [--runs 3] [--writers 4] [--down-after 1000] [--link-down 0,200] [--no-write]
//
// Each run starts a fresh deployment (a master, one replica, three sentinels: test/support/
// sentinel.ts) and a RedisStore on the client RedlimitModule creates from redis: { sentinels,
// name } (its safe defaults: no offline queue once connected, one retry). `writers` loops spend
// one unit each on one key of a fixed window as fast as they can, timeoutMs 500, fail mode
// closed. After a second the master is SIGKILLed; with --link-down MS, the replica's link is cut
// MS before the kill and kept cut (CLIENT KILL TYPE replica on the master, a wrong masterauth on
// the replica), as a partition would, so the replica misses what the master acknowledged
// meanwhile. Measured:
// - resumed: from the kill to the start of the first allowed decision after it;
// - promoted: from the kill to every sentinel naming the replica, which answers ROLE master;
// - failed: decisions refused by the fail mode meanwhile; longest: the slowest decision;
// - acknowledged: spends the limiter reported allowed (before and after the kill);
//   stored: the counter on the promoted master once the run is over; lost = acknowledged − stored:
//   spends the old master acknowledged and never sent to the replica.
import Redis from 'ioredis';
import { Limiter, RedisStore } from '../lib';
import { createRedisClient, closeRedisClient } from '../lib/config/redis-client.factory';
import { startRedisSentinel } from '../test/support/sentinel';
import { parseCommandLine, positiveInteger } from './support/cli.util';
import {
  describeMachine,
  machine,
  markdownTable,
  RESULTS_DIR,
  writeResult,
} from './support/report.util';
import { median } from './support/stats.util';

const USAGE = `npm run bench:sentinel -- [options]
  --runs N          failovers per scenario, each on a fresh deployment (default 3)
  --link-down LIST  scenarios: ms the replica's link is down before the kill (default 0,200)
  --writers N       concurrent spend loops (default 4)
  --down-after MS   sentinel down-after-milliseconds (default 1000)
  --out DIR         where sentinel.md goes (default bench/results)
  --no-write        print the table only`;

const LIMIT = 1_000_000_000;
const TIMEOUT_MS = 500;
const KEY = 'ip:198.51.100.1';

interface RunResult {
  readonly linkDownMs: number;
  readonly resumedMs: number;
  readonly promotedMs: number;
  readonly failed: number;
  readonly longestMs: number;
  readonly acknowledged: number;
  readonly stored: number;
}

async function failoverRun(
  writers: number,
  downAfterMs: number,
  linkDownMs: number,
): Promise<RunResult> {
  const deployment = await startRedisSentinel({ downAfterMs });
  const created = await createRedisClient({
    sentinels: deployment.sentinels.map(({ host, port }) => ({ host, port })),
    name: deployment.name,
  });
  if (!created.owned) throw new Error('createRedisClient returned a client it did not create');
  const client = created.client;
  client.on('error', () => undefined);
  try {
    const limiter = new Limiter(
      new RedisStore({ client, prefix: 'bench:sentinel:' }),
      { name: 'api', algorithm: 'fixed-window', limit: LIMIT, window: '1h', failMode: 'closed' },
      { timeoutMs: TIMEOUT_MS, onStoreFailure: () => undefined },
    );
    await limiter.peek(KEY); // connected, scripts loaded
    let acknowledged = 0;
    let failed = 0;
    let longestMs = 0;
    let killedAt = Infinity;
    let resumedAt: number | undefined;
    let stopAt = Infinity;
    const writer = async () => {
      while (performance.now() < stopAt) {
        const startedAt = performance.now();
        const decision = await limiter.consume(KEY);
        longestMs = Math.max(longestMs, performance.now() - startedAt);
        if (decision.failure) {
          failed++;
          await new Promise((resolve) => setTimeout(resolve, 5)); // no busy loop while down
        } else if (decision.allowed) {
          acknowledged++;
          if (resumedAt === undefined && startedAt > killedAt) {
            resumedAt = startedAt;
            stopAt = performance.now() + 1_000;
          }
        }
      }
    };
    const loops = Array.from({ length: writers }, writer);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    if (linkDownMs > 0) {
      // The replica cannot authenticate to the master any more, so it stays cut off instead
      // of reconnecting and catching up from the backlog (as after a short blip it would).
      const master = await deployment.masterAddress();
      const address = deployment.servers.find((server) => server.port !== master.port)!;
      const replica = new Redis({ ...address, maxRetriesPerRequest: 1 });
      await replica.config('SET', 'masterauth', 'not-the-password');
      replica.disconnect();
      await client.call('CLIENT', 'KILL', 'TYPE', 'replica');
      await new Promise((resolve) => setTimeout(resolve, linkDownMs));
    }
    const old = await deployment.killMaster();
    killedAt = old.killedAt;
    await deployment.waitForFailover(old);
    const promotedAt = performance.now();
    setTimeout(() => (stopAt = Math.min(stopAt, performance.now())), 30_000).unref();
    await Promise.all(loops);
    const peek = await limiter.peek(KEY);
    if (peek.failure) throw peek.failure.error;
    return {
      linkDownMs,
      resumedMs: resumedAt === undefined ? NaN : resumedAt - killedAt,
      promotedMs: promotedAt - killedAt,
      failed,
      longestMs,
      acknowledged,
      stored: LIMIT - (peek.remaining + 1),
    };
  } finally {
    await closeRedisClient(client, 500);
    await deployment.stop();
  }
}

async function main(): Promise<void> {
  const values = parseCommandLine(USAGE, {
    runs: { type: 'string' },
    writers: { type: 'string' },
    'down-after': { type: 'string' },
    'link-down': { type: 'string' },
    out: { type: 'string' },
    'no-write': { type: 'boolean' },
  });
  const runs = positiveInteger(values.runs ?? '3', '--runs', USAGE);
  const linkDown = (values['link-down'] ?? '0,200').split(',').map((ms) => {
    if (!/^\d+$/.test(ms.trim()) || Number(ms) > 5000) {
      throw new Error(
        `--link-down ${ms}: expected whole ms up to 5000 (Sentinel skips replicas cut off for long) (the replica reconnects each second)`,
      );
    }
    return Number(ms);
  });
  const writers = positiveInteger(values.writers ?? '4', '--writers', USAGE);
  const downAfterMs = positiveInteger(values['down-after'] ?? '1000', '--down-after', USAGE);
  const results: RunResult[] = [];
  for (const ms of linkDown) {
    for (let i = 0; i < runs; i++) {
      const result = await failoverRun(writers, downAfterMs, ms);
      results.push(result);
      process.stderr.write(`link down ${ms} ms, run ${i + 1}/${runs}: ${JSON.stringify(result)}\n`);
    }
  }
  const ms = (n: number) => (Number.isFinite(n) ? String(Math.round(n)) : '–');
  const header = [
    'replica link down before the kill (ms)',
    'resumed after (ms)',
    'promoted after (ms)',
    'failed closed',
    'longest decision (ms)',
    'acknowledged',
    'stored after',
    'lost',
  ];
  const row = (label: string, r: RunResult) => [
    label,
    ms(r.resumedMs),
    ms(r.promotedMs),
    String(r.failed),
    ms(r.longestMs),
    String(r.acknowledged),
    String(r.stored),
    String(r.acknowledged - r.stored),
  ];
  const rows = results.map((r) => row(String(r.linkDownMs), r));
  for (const linkDownMs of linkDown) {
    const of = results.filter((r) => r.linkDownMs === linkDownMs);
    const mid = (pick: (r: RunResult) => number) => median(of.map(pick));
    rows.push([
      `median of ${of.length}, ${linkDownMs} ms`,
      ms(mid((r) => r.resumedMs)),
      ms(mid((r) => r.promotedMs)),
      ms(mid((r) => r.failed)),
      ms(mid((r) => r.longestMs)),
      ms(mid((r) => r.acknowledged)),
      ms(mid((r) => r.stored)),
      ms(mid((r) => r.acknowledged - r.stored)),
    ]);
  }
  const host = machine(await redisVersionOf());
  const markdown = [
    '# Sentinel failover',
    '',
    `Measured ${new Date().toISOString().slice(0, 10)}: ${describeMachine(host)}.`,
    '',
    `\`npm run bench:sentinel -- --runs ${runs} --writers ${writers} --down-after ${downAfterMs} ` +
      `--link-down ${linkDown.join(',')}\`: ` +
      `a master, one replica, three sentinels (quorum 2, down-after-milliseconds ${downAfterMs}, ` +
      `failover-timeout 2000); ${writers} loops spend on one fixed-window key through the client ` +
      `RedlimitModule creates from \`redis: { sentinels, name }\` (timeoutMs ${TIMEOUT_MS}, fail ` +
      'mode closed); the master is SIGKILLed after 1 s; in the second scenario the replica ' +
      'was cut off from it (CLIENT KILL TYPE replica, kept out by a wrong masterauth) that long ' +
      'before, as in a partition. Lost = ' +
      'acknowledged − stored on the promoted replica afterwards.',
    '',
    markdownTable(header, rows),
  ].join('\n');
  console.log(markdown);
  if (!values['no-write']) {
    process.stderr.write(
      `wrote ${writeResult(values.out ?? RESULTS_DIR, 'sentinel.md', markdown)}\n`,
    );
  }
}

async function redisVersionOf(): Promise<string> {
  const { execFileSync } = await import('node:child_process');
  const { findRedisServerBinary } = await import('../test/support/redis-server');
  const out = execFileSync(findRedisServerBinary(), ['--version'], { encoding: 'utf8' });
  return /v=([\d.]+)/.exec(out)?.[1] ?? 'unknown';
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
