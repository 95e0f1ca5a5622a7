// Redis CPU and socket writes per decision on a local Redis Cluster (3 masters + 3 replicas)
// against one node running the same store options: a short driver for the Cluster write path,
// far lighter than `npm run bench` (one Cluster, one node, a few rows, a few rounds).
//
//   npx ts-node --transpile-only bench/cluster-writes.ts [--seconds 3] [--rounds 3]
//     [--concurrency 64] [--callers 2000] [--base DIR] [--only REGEXP]
//
// --base DIR: also runs the Cluster rows with the `lib/` found in DIR (e.g. an export of an older
// commit, with node_modules linked), in the same rounds: an A/B on the same servers.
//
// What it counts, per decision, over each sample (closed loop, `concurrency` decisions in flight,
// decision n for caller n % callers, fixed window, never refused):
// - Redis CPU: user + system CPU of each server (`INFO cpu`), masters and replicas apart (the
//   replicas apply what their masters replicate to them; one node has no replica);
// - commandstats: `INFO commandstats` time of the script calls on the masters;
// - socket writes: writes this process hands the kernel (`net.Socket#_writeGeneric` calls) on its
//   connections to the servers of the row, and per (server, event-loop turn) that had any, where a
//   turn ends at the check phase; the servers' `total_reads_processed` (reads of client sockets).
import * as net from 'node:net';
import Redis, { type Cluster } from 'ioredis';
import * as path from 'node:path';
import type { RedisStoreClient } from '../lib';
import { startRedisCluster } from '../test/support/cluster';
import { connectNodeRedis, connectNodeRedisCluster } from '../test/support/node-redis';
import { spawnRedisServer } from '../test/support/redis-server';
import { parseCommandLine, positiveInteger, positive } from './support/cli.util';
import { median } from './support/stats.util';

const USAGE = `npx ts-node --transpile-only bench/cluster-writes.ts [options]
  --seconds S       length of one sample (default 3)
  --rounds N        rounds, every row once per round (default 3)
  --concurrency N   decisions in flight (default 64)
  --callers N       distinct callers (default 2000)
  --base DIR        also run the Cluster rows on DIR/lib (an older version), same rounds
  --node-redis      also run node-redis rows (one node and Cluster, store default)
  --only REGEXP     only the rows whose name matches`;

type Lib = typeof import('../lib');

interface Row {
  readonly name: string;
  readonly on: 'node' | 'cluster';
  readonly run: (i: number) => Promise<void>;
}

interface Sample {
  perSecond: number;
  cpuMastersUs: number;
  cpuReplicasUs: number;
  commandUs: number;
  scriptsPerDecision: number;
  writesPerDecision: number;
  writesPerNodeTurn: number;
  serverReadsPerDecision: number;
  replicaReadsPerDecision: number;
}

/** Socket writes per remote port, and per (port, turn). */
class WriteCounter {
  private counting = false;
  readonly byPort = new Map<number, number>();
  private turn = 0;
  private turnMarked = false;
  /** (port, turn) pairs seen. */
  private readonly nodeTurns = new Set<string>();

  install(): void {
    const proto = net.Socket.prototype as unknown as {
      _writeGeneric: (this: net.Socket, ...args: unknown[]) => unknown;
    };
    const original = proto._writeGeneric;
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const counter = this;
    proto._writeGeneric = function (this: net.Socket, ...args: unknown[]) {
      if (counter.counting && this.remotePort !== undefined) counter.count(this.remotePort);
      return original.apply(this, args);
    };
  }

  private count(port: number): void {
    this.byPort.set(port, (this.byPort.get(port) ?? 0) + 1);
    if (!this.turnMarked) {
      this.turnMarked = true;
      setImmediate(() => {
        this.turn++;
        this.turnMarked = false;
      });
    }
    this.nodeTurns.add(`${port}:${this.turn}`);
  }

  start(): void {
    this.byPort.clear();
    this.nodeTurns.clear();
    this.counting = true;
  }

  stop(ports: ReadonlySet<number>): { writes: number; nodeTurns: number } {
    this.counting = false;
    let writes = 0;
    for (const [port, n] of this.byPort) if (ports.has(port)) writes += n;
    let nodeTurns = 0;
    for (const key of this.nodeTurns) if (ports.has(Number(key.split(':')[0]))) nodeTurns++;
    return { writes, nodeTurns };
  }
}

interface Server {
  readonly admin: Redis;
  readonly port: number;
  readonly role: 'master' | 'replica';
}

async function serverStats(admin: Redis) {
  const text = await admin.info('all');
  const num = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(text)?.[1] ?? 0);
  let scriptUsec = 0;
  let scripts = 0;
  for (const m of text.matchAll(/^cmdstat_(fcall|evalsha|eval):calls=(\d+),usec=(\d+)/gm)) {
    scripts += Number(m[2]);
    scriptUsec += Number(m[3]);
  }
  return {
    cpu: num('used_cpu_user') + num('used_cpu_sys'),
    reads: num('total_reads_processed'),
    scripts,
    scriptUsec,
  };
}

async function sample(
  row: Row,
  servers: readonly Server[],
  counter: WriteCounter,
  o: { seconds: number; concurrency: number; callers: number },
): Promise<Sample> {
  await Promise.all(servers.map((s) => s.admin.config('RESETSTAT')));
  const before = await Promise.all(servers.map((s) => serverStats(s.admin)));
  counter.start();
  let next = 0;
  const started = performance.now();
  const end = started + o.seconds * 1000;
  await Promise.all(
    Array.from({ length: o.concurrency }, async () => {
      while (performance.now() < end) await row.run(next++ % o.callers);
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const { writes, nodeTurns } = counter.stop(new Set(servers.map((s) => s.port)));
  const after = await Promise.all(servers.map((s) => serverStats(s.admin)));
  const decisions = next;
  let cpuMasters = 0;
  let cpuReplicas = 0;
  let commandUsec = 0;
  let scripts = 0;
  let reads = 0;
  let replicaReads = 0;
  servers.forEach((s, i) => {
    const cpu = after[i]!.cpu - before[i]!.cpu;
    if (s.role === 'master') {
      cpuMasters += cpu;
      commandUsec += after[i]!.scriptUsec;
      scripts += after[i]!.scripts;
      reads += after[i]!.reads;
    } else {
      cpuReplicas += cpu;
      replicaReads += after[i]!.reads;
    }
  });
  return {
    perSecond: decisions / elapsed,
    cpuMastersUs: (cpuMasters * 1e6) / decisions,
    cpuReplicasUs: (cpuReplicas * 1e6) / decisions,
    commandUs: commandUsec / decisions,
    scriptsPerDecision: scripts / decisions,
    writesPerDecision: writes / decisions,
    writesPerNodeTurn: writes / nodeTurns,
    serverReadsPerDecision: reads / decisions,
    replicaReadsPerDecision: replicaReads / decisions,
  };
}

function rowsFor(
  lib: Lib,
  label: string,
  client: RedisStoreClient,
  on: Row['on'],
  prefix: string,
  both = true,
): Row[] {
  const rows: Row[] = [];
  for (const coalesce of both ? [true, false] : [true]) {
    const limiter = new lib.Limiter(
      new lib.RedisStore({ client, prefix: `${prefix}${label}:${String(coalesce)}:`, coalesce }),
      { name: 'fw', algorithm: 'fixed-window', limit: 1_000_000_000, window: 3_600_000 },
    );
    rows.push({
      name: `${on === 'cluster' ? 'Cluster' : 'one node'}, ${coalesce ? 'default' : 'coalesce: false'}${label ? ` (${label})` : ''}`,
      on,
      run: async (i) => {
        const decision = await limiter.consume(`ip:10.0.${i >> 8}.${i & 255}`);
        if (decision.failure) throw decision.failure.error;
        if (!decision.allowed) throw new Error('refused');
      },
    });
  }
  return rows;
}

async function main(): Promise<void> {
  const values = parseCommandLine(USAGE, {
    seconds: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '64' },
    callers: { type: 'string', default: '2000' },
    base: { type: 'string' },
    'node-redis': { type: 'boolean', default: false },
    only: { type: 'string' },
  });
  const o = {
    seconds: positive(values.seconds, 'seconds', USAGE),
    rounds: positiveInteger(values.rounds, 'rounds', USAGE),
    concurrency: positiveInteger(values.concurrency, 'concurrency', USAGE),
    callers: positiveInteger(values.callers, 'callers', USAGE),
  };
  const only = values.only === undefined ? undefined : new RegExp(values.only);
  const counter = new WriteCounter();
  counter.install();
  const server = await spawnRedisServer();
  const cluster = await startRedisCluster();
  const single = new Redis(server.url);
  const clusterClient: Cluster = await cluster.createClient();
  const nodeRedis = values['node-redis']
    ? {
        single: await connectNodeRedis(server.url),
        cluster: await connectNodeRedisCluster(cluster.nodes),
      }
    : undefined;
  const nodeServers: Server[] = [
    { admin: new Redis(server.url), port: Number(new URL(server.url).port), role: 'master' },
  ];
  const clusterServers: Server[] = (await cluster.nodeInfos()).map((node) => ({
    admin: new Redis({ host: node.host, port: node.port }),
    port: node.port,
    role: node.role,
  }));
  try {
    const lib = await import('../lib');
    const prefix = `cw:${Date.now()}:`;
    let rows = [
      ...rowsFor(lib, '', single, 'node', prefix),
      ...rowsFor(lib, '', clusterClient, 'cluster', prefix),
    ];
    if (nodeRedis) {
      rows.push(...rowsFor(lib, 'node-redis', nodeRedis.single, 'node', prefix, false));
      rows.push(...rowsFor(lib, 'node-redis', nodeRedis.cluster, 'cluster', prefix, false));
    }
    if (values.base) {
      const base = (await import(path.resolve(values.base, 'lib'))) as Lib;
      rows.push(...rowsFor(base, 'base', clusterClient, 'cluster', prefix));
    }
    if (only) rows = rows.filter((row) => only.test(row.name));
    const samples = new Map<string, Sample[]>(rows.map((row) => [row.name, []]));
    for (const row of rows) {
      process.stderr.write(`warm-up: ${row.name}\n`);
      await sample(row, row.on === 'cluster' ? clusterServers : nodeServers, counter, {
        ...o,
        seconds: 1,
      });
    }
    for (let round = 0; round < o.rounds; round++) {
      for (const row of round % 2 ? [...rows].reverse() : rows) {
        process.stderr.write(`round ${round + 1}/${o.rounds}: ${row.name}\n`);
        const servers = row.on === 'cluster' ? clusterServers : nodeServers;
        samples.get(row.name)!.push(await sample(row, servers, counter, o));
      }
    }
    const f = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : '–');
    const header = [
      'row',
      'decisions/s',
      'Redis CPU µs/decision: masters',
      'replicas',
      'all',
      'commandstats µs (masters)',
      'script runs/decision',
      'client writes/decision',
      'writes per (server, turn)',
      'server reads/decision (masters)',
      'replica reads/decision',
    ];
    const lines = [`| ${header.join(' | ')} |`, `|${header.map(() => ' --- ').join('|')}|`];
    for (const row of rows) {
      const runs = samples.get(row.name)!;
      const m = (key: keyof Sample) => median(runs.map((s) => s[key]));
      lines.push(
        `| ${[
          row.name,
          f(m('perSecond'), 0),
          f(m('cpuMastersUs')),
          row.on === 'cluster' ? f(m('cpuReplicasUs')) : '–',
          f(median(runs.map((s) => s.cpuMastersUs + s.cpuReplicasUs))),
          f(m('commandUs')),
          f(m('scriptsPerDecision'), 2),
          f(m('writesPerDecision'), 3),
          f(m('writesPerNodeTurn'), 2),
          f(m('serverReadsPerDecision'), 3),
          row.on === 'cluster' ? f(m('replicaReadsPerDecision'), 3) : '–',
        ].join(' | ')} |`,
      );
    }
    console.log(
      `${o.rounds} rounds of ${o.seconds} s per row (medians), ${o.concurrency} in flight over ` +
        `${o.callers} callers, fixed window, 1 key; load average at the end: ` +
        `${(await import('node:os'))
          .loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}\n`,
    );
    console.log(lines.join('\n'));
  } finally {
    single.disconnect();
    for (const s of [...nodeServers, ...clusterServers]) s.admin.disconnect();
    clusterClient.disconnect();
    nodeRedis?.single.destroy();
    nodeRedis?.cluster.destroy();
    await cluster.stop();
    await server.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
