/**
 * A real, local, throwaway Redis Cluster for tests: N masters + N×R replicas,
 * each a `redis-server` spawned by ./redis-server.ts (free port, never 6379,
 * nothing persisted, dies with the Jest worker through `setpriv --pdeathsig`),
 * joined with `redis-cli --cluster create`. No Docker, no mocks.
 *
 *   const cluster = await startRedisCluster();          // 3 masters + 3 replicas
 *   const client = await cluster.createClient();        // ioredis Cluster, already 'ready'
 *   const owner = await cluster.masterForKey('{k}');    // which master serves a key
 *   await cluster.killNode(owner.port);                 // SIGKILL it...
 *   await cluster.waitForHealthy();                     // ...and wait for its replica's promotion
 *   await cluster.stop();                               // afterAll: kills every node, removes dirs
 *
 * Ports: the cluster bus listens on port + 10000, so every node gets a port
 * where both are free; they are drawn at random below the kernel's ephemeral
 * range (so that outgoing connections never grab them in between).
 *
 * Failover: with the default node timeout of 1000 ms a SIGKILLed master is
 * flagged FAIL after ~1-2 s and its replica is promoted ~0.5-1 s later
 * (`--cluster-replica-validity-factor 0`: a replica is always eligible).
 * Between FAIL and the promotion every node reports cluster_state:fail and
 * answers CLUSTERDOWN for ALL slots (cluster-require-full-coverage is left at
 * its default, yes, like in production). waitForHealthy() returns once every
 * running node agrees that all 16384 slots are served by running masters.
 *
 * ioredis during a failover (measured, ioredis 5.11): with its defaults
 * (maxRedirections 16, retryDelayOnFailover / retryDelayOnClusterDown 100 ms)
 * a command on the dead master's slots fails after ~1-1.5 s with "Too many
 * Cluster redirections. Last error: ... MOVED <slot> <dead node>" or "...
 * CLUSTERDOWN The cluster is down"; once the replica is promoted the next
 * command succeeds (the client refreshes its slot map by itself). With
 * `createClient({ retryDelayOnFailover: 300, retryDelayOnClusterDown: 300 })`
 * commands issued during the failover wait and succeed instead.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import Redis, { Cluster, type ClusterOptions } from 'ioredis';
import {
  findRedisCliBinary,
  processAlive,
  spawnRedisServer,
  type SpawnedRedisServer,
} from './redis-server';

export interface ClusterNodeInfo {
  host: string;
  port: number;
  role: 'master' | 'replica';
  pid: number;
  /** The 40-hex node id. */
  id: string;
  /** For a replica, the id of its master. */
  masterId?: string;
  /** Slot ranges served (masters), inclusive: [[0, 5460]]. Empty for replicas. */
  slots: Array<[number, number]>;
}

export interface StartRedisClusterOptions {
  /** Number of masters (default 3; Redis needs at least 3). */
  masters?: number;
  /** Replicas per master (default 1). */
  replicas?: number;
  /** `cluster-node-timeout` in ms (default 1000: fast failure detection). */
  nodeTimeoutMs?: number;
  /** More redis-server flags for every node (come last, so they win). */
  extraArgs?: string[];
}

export interface StartedRedisCluster {
  /** Startup nodes for an ioredis Cluster: every node, masters and replicas. */
  readonly nodes: ReadonlyArray<{ host: string; port: number }>;
  /**
   * An ioredis Cluster on this cluster, resolved once it is 'ready'. Defaults
   * (overridable): `redisOptions: { connectTimeout: 2000, maxRetriesPerRequest: 1 }`.
   * Clients still open at stop() are disconnected by it.
   */
  createClient(options?: ClusterOptions): Promise<Cluster>;
  /** Current masters, each as seen by itself (CLUSTER NODES `myself` line). Killed/paused nodes are left out. */
  masters(): Promise<ClusterNodeInfo[]>;
  /** Current replicas, likewise. */
  replicas(): Promise<ClusterNodeInfo[]>;
  /** Every running (not killed, not SIGSTOPped) node with its current role. */
  nodeInfos(): Promise<ClusterNodeInfo[]>;
  /** The running master that serves the slot of `key` (CLUSTER KEYSLOT). */
  masterForKey(key: string): Promise<ClusterNodeInfo>;
  /**
   * Sends `signal` (default SIGKILL) to the node on `port`. SIGKILL/SIGTERM/...
   * resolve once the process is gone (its temp dir is removed, its nodes.conf
   * kept for restartNode); SIGSTOP pauses it (it is then "not running" for
   * waitForHealthy and masters()), SIGCONT resumes it. Any other signal is
   * treated as fatal: the node is then stopped (SIGTERM, SIGKILL after 3 s).
   */
  killNode(port: number, signal?: NodeJS.Signals): Promise<void>;
  /** Starts a killed node again on the same port with its nodes.conf: it rejoins the cluster. */
  restartNode(port: number): Promise<void>;
  /**
   * Resolves when every running node says cluster_state:ok, they all agree on
   * the slot owners, all 16384 slots are served by running masters, and no
   * running node is flagged fail. Rejects after `timeoutMs` (default 15000)
   * with every node's CLUSTER INFO / CLUSTER NODES.
   */
  waitForHealthy(timeoutMs?: number): Promise<void>;
  /** Kills every node, disconnects the clients made by createClient(), removes temp dirs. Idempotent. */
  stop(): Promise<void>;
}

const HOST = '127.0.0.1';
const SLOTS = 16384;
const BUS_PORT_OFFSET = 10_000;
const MAX_PORT = 65_535 - BUS_PORT_OFFSET;
const CLUSTER_TEMP_PREFIX = 'redlimit-redis-cluster-'; // swept like the servers' dirs
const STARTUP_HEALTH_TIMEOUT_MS = 20_000;
const CREATE_TIMEOUT_MS = 30_000;
const ADMIN_TIMEOUT_MS = 1_000;
const POLL_MS = 50;
const CLIENT_READY_TIMEOUT_MS = 10_000;

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

// ---------------------------------------------------------------------------
// Ports

/** Ports handed out by this process (node and bus ports), never reused. */
const reservedPorts = new Set<number>();

function ephemeralPortRangeStart(): number {
  try {
    const [lo] = fs
      .readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/);
    const n = Number(lo);
    return Number.isInteger(n) && n > 0 ? n : 32_768;
  } catch {
    return 32_768;
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host: HOST, exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/**
 * A port p with p and p + 10000 both free on 127.0.0.1. Drawn at random from
 * [10000, ephemeral start - 10001] (bus port stays below the ephemeral range,
 * where the OS does not hand out ports on its own), else from [1024, 55535].
 */
export async function getFreeClusterPort(): Promise<number> {
  const ephemeral = ephemeralPortRangeStart();
  let lo = 10_000;
  let hi = Math.min(MAX_PORT, ephemeral - 1 - BUS_PORT_OFFSET);
  if (hi - lo < 1_000) {
    lo = 1_024;
    hi = MAX_PORT;
  }
  for (let attempt = 0; attempt < 500; attempt++) {
    const port = lo + Math.floor(Math.random() * (hi - lo + 1));
    const bus = port + BUS_PORT_OFFSET;
    if (port === 6379 || bus === 6379 || port === 16379 || bus === 16379) continue;
    if (reservedPorts.has(port) || reservedPorts.has(bus)) continue;
    if (!(await canListen(port)) || !(await canListen(bus))) continue;
    reservedPorts.add(port);
    reservedPorts.add(bus);
    return port;
  }
  throw new Error(`no free port pair (p, p + ${BUS_PORT_OFFSET}) found in [${lo}, ${hi}]`);
}

// ---------------------------------------------------------------------------
// CLUSTER NODES / CLUSTER INFO parsing

interface NodesLine {
  id: string;
  port: number;
  flags: string[];
  masterId?: string;
  linkState: string;
  slots: Array<[number, number]>;
}

function parseClusterNodes(text: string): NodesLine[] {
  const out: NodesLine[] = [];
  for (const line of text.split('\n')) {
    const parts = line.trim().split(' ');
    if (parts.length < 8) continue;
    const [id, addr, flags, master, , , , linkState, ...slotParts] = parts as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      ...string[],
    ];
    // ip:port@cport[,hostname]; an unknown address (noaddr) is ":0@0".
    const port = Number(/:(\d+)@/.exec(addr)?.[1] ?? 0);
    const slots: Array<[number, number]> = [];
    for (const s of slotParts) {
      if (!s || s.startsWith('[')) continue; // [slot->-id] / [slot-<-id]: migrations
      const [a, b] = s.split('-');
      slots.push([Number(a), Number(b ?? a)]);
    }
    out.push({
      id,
      port,
      flags: flags.split(','),
      masterId: master === '-' ? undefined : master,
      linkState,
      slots,
    });
  }
  return out;
}

function parseInfo(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i > 0) out[line.slice(0, i)] = line.slice(i + 1).trim();
  }
  return out;
}

function roleOf(flags: string[]): 'master' | 'replica' | undefined {
  if (flags.includes('master')) return 'master';
  if (flags.includes('slave')) return 'replica';
  return undefined;
}

// ---------------------------------------------------------------------------
// Process-exit cleanup of cluster temp dirs (the servers clean up themselves)

const liveClusterDirs = new Set<string>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const dir of liveClusterDirs) {
      try {
        fs.rmSync(dir, { recursive: true, force: true });
      } catch {
        /* ignore */
      }
    }
  });
}

// ---------------------------------------------------------------------------

type NodeState = 'running' | 'paused' | 'dead';

interface NodeHandle {
  readonly port: number;
  server: SpawnedRedisServer;
  state: NodeState;
  admin?: Redis;
}

const STOP_SIGNALS = new Set<NodeJS.Signals>(['SIGSTOP', 'SIGTSTP', 'SIGTTIN', 'SIGTTOU']);

function runRedisCli(
  args: string[],
  timeoutMs: number,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(findRedisCliBinary(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (output += d.toString('utf8')));
    const timer = setTimeout(() => {
      output += `\n(redis-cli killed after ${timeoutMs} ms)`;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

function logTail(dir: string, lines = 8): string {
  try {
    const text = fs.readFileSync(path.join(dir, 'redis.log'), 'utf8');
    return text.trim().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no redis.log)';
  }
}

/**
 * Starts a Redis Cluster (default 3 masters + 3 replicas, node timeout 1000 ms)
 * on free local ports and resolves once it is healthy and every replica is in
 * sync with its master. Takes ~3 s (Redis masters refuse to report
 * cluster_state:ok during their first 2 s). Always stop() it (afterAll).
 */
export async function startRedisCluster(
  options: StartRedisClusterOptions = {},
): Promise<StartedRedisCluster> {
  const masterCount = options.masters ?? 3;
  const replicasPerMaster = options.replicas ?? 1;
  const nodeTimeoutMs = options.nodeTimeoutMs ?? 1_000;
  if (masterCount < 3) throw new Error('a Redis Cluster needs at least 3 masters');
  const total = masterCount * (1 + replicasPerMaster);

  const clusterDir = fs.mkdtempSync(path.join(os.tmpdir(), CLUSTER_TEMP_PREFIX));
  fs.writeFileSync(path.join(clusterDir, 'owner.pid'), `${process.pid}\n`);
  installExitHook();
  liveClusterDirs.add(clusterDir);

  const argsFor = (port: number): string[] => [
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    path.join(clusterDir, `nodes-${port}.conf`),
    '--cluster-node-timeout',
    String(nodeTimeoutMs),
    // A replica is always eligible for promotion, however long its link was down.
    '--cluster-replica-validity-factor',
    '0',
    // Replicas sync right away (7.0 default: wait 5 s for more replicas).
    '--repl-diskless-sync-delay',
    '0',
    // SIGTERM on a master must not wait for (possibly SIGSTOPped) replicas.
    '--shutdown-timeout',
    '0',
    ...(options.extraArgs ?? []),
  ];

  const handles = new Map<number, NodeHandle>();
  const clients = new Set<Cluster>();
  let stopping: Promise<void> | undefined;

  const adminFor = (h: NodeHandle): Redis => {
    if (h.admin && h.admin.status !== 'end') return h.admin;
    h.admin = new Redis({
      host: HOST,
      port: h.port,
      connectTimeout: ADMIN_TIMEOUT_MS,
      commandTimeout: ADMIN_TIMEOUT_MS,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      enableReadyCheck: false,
      lazyConnect: false,
    });
    h.admin.on('error', () => {
      /* reported by the failing command */
    });
    return h.admin;
  };

  const dropAdmin = (h: NodeHandle): void => {
    h.admin?.disconnect();
    h.admin = undefined;
  };

  const running = (): NodeHandle[] => [...handles.values()].filter((h) => h.state === 'running');

  const handleOf = (port: number): NodeHandle => {
    const h = handles.get(port);
    if (!h) throw new Error(`no node of this cluster on port ${port}`);
    return h;
  };

  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      await Promise.all(
        [...clients].map(
          (c) =>
            new Promise<void>((resolve) => {
              if (c.status === 'end') return resolve();
              const timer = setTimeout(resolve, 2_000);
              c.once('end', () => {
                clearTimeout(timer);
                resolve();
              });
              c.disconnect();
            }),
        ),
      );
      clients.clear();
      await Promise.all(
        [...handles.values()].map(async (h) => {
          dropAdmin(h);
          // SIGKILL works on a SIGSTOPped process too; nothing to persist anyway.
          if (h.state !== 'dead' && processAlive(h.server.pid)) {
            try {
              process.kill(h.server.pid, 'SIGKILL');
            } catch {
              /* already gone */
            }
          }
          h.state = 'dead';
          await h.server.stop();
        }),
      );
      fs.rmSync(clusterDir, { recursive: true, force: true });
      liveClusterDirs.delete(clusterDir);
    })();
    return stopping;
  };

  const spawnNode = (port?: number): Promise<SpawnedRedisServer> =>
    spawnRedisServer(argsFor, {
      pickPort: port ? () => Promise.resolve(port) : getFreeClusterPort,
    });

  /** This node's own CLUSTER NODES line, as ClusterNodeInfo. */
  const selfInfo = async (h: NodeHandle): Promise<ClusterNodeInfo> => {
    const text = (await adminFor(h).call('CLUSTER', 'NODES')) as string;
    const me = parseClusterNodes(text).find((l) => l.flags.includes('myself'));
    const role = me && roleOf(me.flags);
    if (!me || !role)
      throw new Error(`node ${h.port}: no usable myself line in CLUSTER NODES:\n${text}`);
    return {
      host: HOST,
      port: h.port,
      role,
      pid: h.server.pid,
      id: me.id,
      masterId: role === 'replica' ? me.masterId : undefined,
      slots: role === 'master' ? me.slots : [],
    };
  };

  const nodeInfos = async (): Promise<ClusterNodeInfo[]> => {
    const infos = await Promise.all(running().map((h) => selfInfo(h)));
    return infos.sort((a, b) => a.port - b.port);
  };

  /** Problems standing between the cluster and health; empty when healthy. */
  const healthProblems = async (): Promise<string[]> => {
    const live = running();
    const livePorts = new Set(live.map((h) => h.port));
    const problems: string[] = [];
    let reference: string | undefined;
    const results = await Promise.all(
      live.map(async (h) => {
        try {
          const admin = adminFor(h);
          const [info, nodes] = await Promise.all([
            admin.call('CLUSTER', 'INFO') as Promise<string>,
            admin.call('CLUSTER', 'NODES') as Promise<string>,
          ]);
          return { h, info: parseInfo(info), nodes: parseClusterNodes(nodes) };
        } catch (e) {
          problems.push(`${h.port}: ${(e as Error).message}`);
          return undefined;
        }
      }),
    );
    for (const r of results) {
      if (!r) continue;
      const { h, info, nodes } = r;
      if (info.cluster_state !== 'ok')
        problems.push(`${h.port}: cluster_state:${info.cluster_state}`);
      const owners: string[] = [];
      let covered = 0;
      for (const n of nodes) {
        if (livePorts.has(n.port) && (n.flags.includes('fail') || n.flags.includes('handshake'))) {
          problems.push(`${h.port}: sees running node ${n.port} as ${n.flags.join(',')}`);
        }
        if (!n.flags.includes('master') || n.slots.length === 0) continue;
        if (!livePorts.has(n.port)) {
          problems.push(
            `${h.port}: slots ${JSON.stringify(n.slots)} owned by non-running ${n.port}`,
          );
        }
        for (const [a, b] of n.slots) {
          covered += b - a + 1;
          owners.push(`${a}-${b}@${n.port}`);
        }
      }
      if (covered !== SLOTS) problems.push(`${h.port}: ${covered}/${SLOTS} slots assigned`);
      const view = owners.sort().join(' ');
      if (reference === undefined) reference = view;
      else if (view !== reference) problems.push(`${h.port}: slot owners differ from other nodes`);
    }
    if (problems.length === 0) {
      // The owners must see themselves as masters (a just-promoted replica does at once).
      const infos = await Promise.all(live.map((h) => selfInfo(h).catch(() => undefined)));
      const masterSlots = infos
        .filter((i): i is ClusterNodeInfo => i?.role === 'master')
        .reduce((n, i) => n + i.slots.reduce((m, [a, b]) => m + b - a + 1, 0), 0);
      if (masterSlots !== SLOTS)
        problems.push(`running masters claim ${masterSlots}/${SLOTS} slots`);
    }
    return problems;
  };

  const describeNodes = async (): Promise<string> => {
    const parts = await Promise.all(
      [...handles.values()].map(async (h) => {
        const head = `--- node ${h.port} (pid ${h.server.pid}, ${h.state})`;
        if (h.state !== 'running') return head;
        try {
          const admin = adminFor(h);
          const info = (await admin.call('CLUSTER', 'INFO')) as string;
          const nodes = (await admin.call('CLUSTER', 'NODES')) as string;
          return `${head}\n${info.trim()}\n${nodes.trim()}`;
        } catch (e) {
          return `${head}: ${(e as Error).message}\n${logTail(h.server.dir)}`;
        }
      }),
    );
    return parts.join('\n');
  };

  const waitUntil = async (
    what: string,
    timeoutMs: number,
    problemsOf: () => Promise<string[]>,
  ): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    let problems: string[];
    for (;;) {
      problems = await problemsOf().catch((e: Error) => [e.message]);
      if (problems.length === 0) return;
      if (Date.now() > deadline) break;
      await sleep(POLL_MS);
    }
    throw new Error(
      `Redis Cluster not ${what} after ${timeoutMs} ms:\n  ${problems.join('\n  ')}\n` +
        (await describeNodes()),
    );
  };

  const waitForHealthy = (timeoutMs = 15_000): Promise<void> =>
    waitUntil('healthy', timeoutMs, healthProblems);

  /** Every master has its replicas, each with master_link_status:up. */
  const replicationProblems = async (): Promise<string[]> => {
    const problems: string[] = [];
    const infos = await nodeInfos();
    const masters = infos.filter((i) => i.role === 'master');
    if (masters.length !== masterCount) problems.push(`${masters.length}/${masterCount} masters`);
    for (const m of masters) {
      const n = infos.filter((i) => i.masterId === m.id).length;
      if (n !== replicasPerMaster) problems.push(`master ${m.port} has ${n} replicas`);
    }
    await Promise.all(
      infos
        .filter((i) => i.role === 'replica')
        .map(async (i) => {
          const repl = parseInfo(await adminFor(handleOf(i.port)).info('replication'));
          if (repl.master_link_status !== 'up') {
            problems.push(`replica ${i.port}: master_link_status:${repl.master_link_status}`);
          }
        }),
    );
    return problems;
  };

  try {
    const spawned = await Promise.allSettled(Array.from({ length: total }, () => spawnNode()));
    for (const s of spawned) {
      if (s.status === 'fulfilled') {
        handles.set(s.value.port, { port: s.value.port, server: s.value, state: 'running' });
      }
    }
    const failed = spawned.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;

    const ports = [...handles.keys()];
    const created = await runRedisCli(
      [
        '--cluster',
        'create',
        ...ports.map((p) => `${HOST}:${p}`),
        '--cluster-replicas',
        String(replicasPerMaster),
        '--cluster-yes',
      ],
      CREATE_TIMEOUT_MS,
    );
    if (created.code !== 0 || !/All 16384 slots covered/.test(created.output)) {
      throw new Error(
        `redis-cli --cluster create failed (exit ${created.code}):\n${created.output}`,
      );
    }
    await waitForHealthy(STARTUP_HEALTH_TIMEOUT_MS);
    await waitUntil('replicated', STARTUP_HEALTH_TIMEOUT_MS, replicationProblems);
  } catch (e) {
    await stop();
    throw e;
  }

  const nodes = Object.freeze(
    [...handles.keys()].map((port) => Object.freeze({ host: HOST, port })),
  );

  const createClient = async (clusterOptions: ClusterOptions = {}): Promise<Cluster> => {
    if (stopping) throw new Error('the cluster is stopped');
    const client = new Cluster(
      nodes.map((n) => ({ ...n })),
      {
        ...clusterOptions,
        redisOptions: {
          connectTimeout: 2_000,
          maxRetriesPerRequest: 1,
          ...clusterOptions.redisOptions,
        },
      },
    );
    clients.add(client);
    client.once('end', () => clients.delete(client));
    try {
      await new Promise<void>((resolve, reject) => {
        // 'error' is not fatal here: ioredis keeps trying until 'ready' or 'end'.
        let lastError: Error | undefined;
        const timer = setTimeout(
          () =>
            finish(
              new Error(
                `Cluster client not ready after ${CLIENT_READY_TIMEOUT_MS} ms` +
                  (lastError ? `: ${lastError.message}` : ''),
              ),
            ),
          CLIENT_READY_TIMEOUT_MS,
        );
        const onError = (e: Error): void => {
          lastError = e;
        };
        const onEnd = (): void =>
          finish(
            new Error(
              'Cluster client ended before it was ready' +
                (lastError ? `: ${lastError.message}` : ''),
            ),
          );
        const onReady = (): void => finish();
        function finish(err?: Error): void {
          clearTimeout(timer);
          client.off('ready', onReady);
          client.off('error', onError);
          client.off('end', onEnd);
          if (err) reject(err);
          else resolve();
        }
        client.once('ready', onReady);
        client.on('error', onError);
        client.once('end', onEnd);
      });
    } catch (e) {
      client.disconnect();
      throw e;
    }
    return client;
  };

  return {
    nodes,
    createClient,
    masters: async () => (await nodeInfos()).filter((i) => i.role === 'master'),
    replicas: async () => (await nodeInfos()).filter((i) => i.role === 'replica'),
    nodeInfos,
    masterForKey: async (key: string) => {
      const [first] = running();
      if (!first) throw new Error('no running node');
      const slot = Number(await adminFor(first).call('CLUSTER', 'KEYSLOT', key));
      const owner = (await nodeInfos()).find(
        (i) => i.role === 'master' && i.slots.some(([a, b]) => slot >= a && slot <= b),
      );
      if (!owner) throw new Error(`no running master serves slot ${slot} (key ${key})`);
      return owner;
    },
    killNode: async (port: number, signal: NodeJS.Signals = 'SIGKILL') => {
      const h = handleOf(port);
      if (h.state === 'dead') throw new Error(`node ${port} is not running`);
      process.kill(h.server.pid, signal);
      if (signal === 'SIGCONT') {
        h.state = 'running';
      } else if (STOP_SIGNALS.has(signal)) {
        h.state = 'paused';
        dropAdmin(h); // its replies would be stale or time out
      } else {
        h.state = 'dead';
        dropAdmin(h);
        await h.server.stop(); // waits for the exit (SIGKILLs after a grace period)
      }
    },
    restartNode: async (port: number) => {
      const h = handleOf(port);
      if (stopping) throw new Error('the cluster is stopped');
      if (h.state !== 'dead') throw new Error(`node ${port} is still ${h.state}`);
      h.server = await spawnNode(port);
      h.state = 'running';
    },
    waitForHealthy,
    stop,
  };
}
