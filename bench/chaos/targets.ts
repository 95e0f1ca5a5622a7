/**
 * The two targets of the chaos run and the faults played on each: one redis-server with an
 * append-only file (so it can come back with its data or without), and a local Cluster of 3
 * masters and 3 replicas. Both are spawned on free ports by the test harness's helpers (never
 * 6379) and stopped at the end.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import Redis, { type Cluster } from 'ioredis';
import { clusterSlot } from '../../lib/stores/cluster-slot.util';
import { startRedisCluster, type StartedRedisCluster } from '../../test/support/cluster';
import { lossyProxy } from '../../test/support/lossy-proxy';
import { spawnRedisServer, type SpawnedRedisServer } from '../../test/support/redis-server';
import type { LossEvent } from './ledger';

/** What a fault may ask of the run: the workers' fleet (see plan.ts, FLEET). */
export interface FaultContext {
  /** Resolves once every worker is established in the fleet (rejects if one is not in time). */
  fleetReady(): Promise<void>;
  /** Resolves once every worker's fallback owes Redis nothing (rejects if one does in time). */
  fleetSettled(): Promise<void>;
  /** Redis was unreachable for the fleet from `from` to `to` (ms since the epoch). */
  outage(from: number, to: number): void;
}

/** One fault of a schedule. */
export interface Fault {
  readonly name: string;
  /** Whether `--quick` plays it. */
  readonly quick: boolean;
  /** Whether the workers' fleet (`failMode: 'memory'`) calls during its phase. */
  readonly fleet?: boolean;
  /** Plays the fault and waits until the target serves again; returns the losses it may cause. */
  apply(context: FaultContext): Promise<LossEvent[]>;
}

/** A target: where workers connect, what the orchestrator reads, and the faults it plays. */
export interface Target {
  readonly name: string;
  readonly description: string;
  readonly url?: string;
  readonly nodes?: ReadonlyArray<{ host: string; port: number }>;
  /** Where the fleet's stores connect: a proxy to the target that a fault can cut. */
  readonly fleetUrl?: string;
  /** The fleet stores' prefix (their heartbeats go to `<fleetPrefix>fleet`). */
  readonly fleetPrefix?: string;
  readonly faults: readonly Fault[];
  /** Values of string keys (GET), with the Redis clock's reading, in ms. */
  read(keys: readonly string[]): Promise<{ values: Array<string | null>; redisNow: number }>;
  /** Members and scores of sorted sets (ZRANGE … WITHSCORES: member, score, member, …). */
  readSortedSets(keys: readonly string[]): Promise<string[][]>;
  /** `used_memory` of the server, or summed over the masters. */
  memoryBytes(): Promise<number>;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A connection for one admin command; errors go to the command. */
function adminConnection(port: number): Redis {
  const admin = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1, lazyConnect: true });
  admin.on('error', () => {});
  return admin;
}

async function onNode<T>(port: number, work: (admin: Redis) => Promise<T>): Promise<T> {
  const admin = adminConnection(port);
  try {
    await admin.connect();
    return await work(admin);
  } finally {
    admin.disconnect();
  }
}

function redisMs(time: ReadonlyArray<string | number>): number {
  return Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
}

function usedMemory(info: string): number {
  return Number(/^used_memory:(\d+)/m.exec(info)?.[1] ?? NaN);
}

/** Durations of the faults that hold a server still, per run length. */
export interface FaultTimings {
  readonly stopMs: number;
  readonly sleepMs: number;
  /** How long Redis is unreachable for the fleet. */
  readonly outageMs: number;
}

/**
 * One redis-server with `appendonly yes`, `appendfsync everysec` in a directory of the run's, so
 * a restart can load the file (with persistence) or start from an empty one (without).
 */
export async function singleRedis(timings: FaultTimings): Promise<Target> {
  const aofDir = mkdtempSync(join(os.tmpdir(), 'redlimit-chaos-aof-'));
  const persistent = ['--dir', aofDir, '--appendonly', 'yes', '--appendfsync', 'everysec'];
  let server: SpawnedRedisServer = await spawnRedisServer(persistent);
  const port = server.port;
  const admin = new Redis(server.url, { maxRetriesPerRequest: 3 });
  admin.on('error', () => {});
  const everything = () => true;
  // The fleet's connections go through it: its outage cuts them and them only.
  const proxy = await lossyProxy(port);

  const killAndRestart = async (args: string[], keepData: boolean): Promise<LossEvent[]> => {
    process.kill(server.pid, 'SIGKILL');
    await server.stop();
    // Once the process is gone: what it applied before then may be lost (it applied spends up to
    // the kill, with clock readings up to then), nothing is applied until the restart.
    const at = Date.now();
    if (!keepData) rmSync(aofDir, { recursive: true, force: true });
    server = await spawnRedisServer(args, { pickPort: () => Promise.resolve(port) });
    return [{ at, holds: everything }];
  };

  const faults: Fault[] = [
    { name: 'none (baseline)', quick: false, apply: () => Promise.resolve([]) },
    {
      // Redis is unreachable for the fleet's stores only: every connection of theirs is cut and
      // new ones are refused for the outage, so each worker's fallback decides with its share.
      name: `fleet, failMode 'memory': Redis unreachable ${timings.outageMs / 1000} s`,
      quick: true,
      fleet: true,
      apply: async (context) => {
        await context.fleetReady();
        const from = Date.now();
        proxy.down();
        await sleep(timings.outageMs);
        proxy.up();
        context.outage(from, Date.now());
        await context.fleetSettled();
        return [];
      },
    },
    {
      name: `SIGSTOP ${timings.stopMs / 1000} s, SIGCONT`,
      quick: true,
      apply: async () => {
        process.kill(server.pid, 'SIGSTOP');
        await sleep(timings.stopMs);
        process.kill(server.pid, 'SIGCONT');
        return [];
      },
    },
    {
      // The store runs Redis Functions, which SCRIPT FLUSH leaves alone (the EVALSHA fallback
      // recovers from it too): the full run plays it, the quick one saves its seconds.
      name: 'SCRIPT FLUSH',
      quick: false,
      apply: async () => (await admin.script('FLUSH'), []),
    },
    {
      name: 'FUNCTION FLUSH',
      quick: true,
      apply: async () => (await admin.call('FUNCTION', 'FLUSH'), []),
    },
    {
      name: 'CLIENT KILL TYPE normal',
      quick: true,
      apply: async () => (await admin.call('CLIENT', 'KILL', 'TYPE', 'normal'), []),
    },
    {
      name: `DEBUG SLEEP ${timings.sleepMs / 1000}`,
      quick: true,
      apply: async () => {
        await onNode(port, (a) => a.call('DEBUG', 'SLEEP', String(timings.sleepMs / 1000)));
        return [];
      },
    },
    {
      name: 'SIGKILL, restart with AOF (everysec)',
      quick: true,
      apply: () => killAndRestart(persistent, true),
    },
    {
      name: 'SIGKILL, restart without persistence',
      quick: true,
      apply: () => killAndRestart([], false),
    },
  ];

  return {
    name: 'redis',
    description: `one redis-server (appendonly yes, appendfsync everysec) on port ${port}`,
    url: server.url,
    fleetUrl: `redis://127.0.0.1:${proxy.port}`,
    fleetPrefix: 'chaos:redis:f:',
    faults,
    read: async (keys) => {
      const values = keys.length ? await admin.mget(...keys) : [];
      return { values, redisNow: redisMs(await admin.time()) };
    },
    readSortedSets: (keys) =>
      Promise.all(keys.map((key) => admin.zrange(key, 0, -1, 'WITHSCORES'))),
    memoryBytes: async () => usedMemory(await admin.info('memory')),
    stop: async () => {
      admin.disconnect();
      await proxy.close();
      await server.stop();
      rmSync(aofDir, { recursive: true, force: true });
    },
  };
}

/** The master that serves `key` now, and a test of whether a key was on it. */
async function masterOf(cluster: StartedRedisCluster, key: string) {
  const master = await cluster.masterForKey(key);
  const holds = (caller: string) => {
    const slot = clusterSlot(`{${caller}}`);
    return master.slots.some(([a, b]) => slot >= a && slot <= b);
  };
  return { master, holds };
}

/** A local Cluster: 3 masters, 3 replicas, node timeout 1 s, nothing persisted. */
export async function localCluster(timings: FaultTimings): Promise<Target> {
  const cluster = await startRedisCluster();
  const admin: Cluster = await cluster.createClient({
    retryDelayOnFailover: 300,
    retryDelayOnClusterDown: 300,
  });
  admin.on('error', () => {});
  const everyNode = async (work: (node: Redis) => Promise<unknown>, mastersOnly = false) => {
    const nodes = mastersOnly ? await cluster.masters() : await cluster.nodeInfos();
    await Promise.all(nodes.map((n) => onNode(n.port, work)));
  };
  const hotKey = 'ip:h0';
  // Held below the node timeout (1 s): a longer stop is a failover, played on its own below.
  const stopMs = Math.min(timings.stopMs, 800);
  const sleepMs = Math.min(timings.sleepMs, 800);

  const faults: Fault[] = [
    { name: 'none (baseline)', quick: false, apply: () => Promise.resolve([]) },
    {
      name: `SIGSTOP a master ${stopMs / 1000} s, SIGCONT`,
      quick: false,
      apply: async () => {
        const { master } = await masterOf(cluster, hotKey);
        await cluster.killNode(master.port, 'SIGSTOP');
        await sleep(stopMs);
        await cluster.killNode(master.port, 'SIGCONT');
        return [];
      },
    },
    {
      name: 'SCRIPT FLUSH on every node',
      quick: false,
      apply: async () => (await everyNode((n) => n.script('FLUSH')), []),
    },
    {
      name: 'FUNCTION FLUSH on every master',
      quick: true,
      apply: async () => (await everyNode((n) => n.call('FUNCTION', 'FLUSH'), true), []),
    },
    {
      name: 'CLIENT KILL TYPE normal on every node',
      quick: true,
      apply: async () => (await everyNode((n) => n.call('CLIENT', 'KILL', 'TYPE', 'normal')), []),
    },
    {
      name: `DEBUG SLEEP ${sleepMs / 1000} on a master`,
      quick: false,
      apply: async () => {
        const { master } = await masterOf(cluster, hotKey);
        await onNode(master.port, (a) => a.call('DEBUG', 'SLEEP', String(sleepMs / 1000)));
        return [];
      },
    },
    {
      name: 'SIGKILL a master (replica promoted), restart it',
      quick: true,
      apply: async () => {
        const { master, holds } = await masterOf(cluster, hotKey);
        await cluster.killNode(master.port);
        // Once the process is gone (killNode waits for it): its slots take no spend until the
        // replica is promoted, and what it applied before may be missing on the replica.
        const at = Date.now();
        await cluster.waitForHealthy(20_000);
        await cluster.restartNode(master.port);
        await cluster.waitForHealthy(20_000);
        return [{ at, holds }];
      },
    },
    {
      name: 'CLUSTER FAILOVER (manual)',
      quick: true,
      apply: async () => {
        const { master } = await masterOf(cluster, hotKey);
        const replica = (await cluster.replicas()).find((r) => r.masterId === master.id);
        if (!replica) throw new Error(`master ${master.port} has no replica to fail over to`);
        await onNode(replica.port, (a) => a.call('CLUSTER', 'FAILOVER'));
        const deadline = Date.now() + 10_000;
        while (
          (await cluster.nodeInfos()).find((n) => n.port === replica.port)?.role !== 'master'
        ) {
          if (Date.now() > deadline) throw new Error(`replica ${replica.port} was not promoted`);
          await sleep(50);
        }
        await cluster.waitForHealthy(20_000);
        return [];
      },
    },
  ];

  return {
    name: 'cluster',
    description: '3 masters + 3 replicas, cluster-node-timeout 1000 ms, nothing persisted',
    nodes: cluster.nodes,
    faults,
    read: async (keys) => {
      const values = await Promise.all(keys.map((key) => admin.get(key)));
      return { values, redisNow: redisMs(await admin.time()) };
    },
    readSortedSets: (keys) =>
      Promise.all(keys.map((key) => admin.zrange(key, 0, -1, 'WITHSCORES'))),
    memoryBytes: async () => {
      let total = 0;
      for (const m of await cluster.masters())
        total += await onNode(m.port, async (a) => usedMemory(await a.info('memory')));
      return total;
    },
    stop: async () => {
      admin.disconnect();
      await cluster.stop();
    },
  };
}
