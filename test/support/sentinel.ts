/**
 * A real, local, throwaway Redis Sentinel deployment for tests: one master, one replica and
 * three sentinels (quorum 2), each a `redis-server` spawned by ./redis-server.ts (free port,
 * never 6379, nothing persisted, dies with the Jest worker). Sentinels are the same binary run
 * as `redis-server <conf> --sentinel`. No Docker, no mocks.
 *
 *   const deployment = await startRedisSentinel();    // resolves once every sentinel knows
 *                                                      // the replica and the other sentinels
 *   const client = await deployment.createClient();   // ioredis with { sentinels, name }, 'ready'
 *   const old = await deployment.killMaster();        // SIGKILL the master...
 *   await deployment.waitForFailover(old);            // ...until the replica is the new master
 *   await deployment.stop();                          // afterAll: kills everything, removes dirs
 *
 * Failover timing (defaults, measured on a 2-core machine): a killed master is subjectively
 * down after `down-after-milliseconds` (1000), objectively down a moment later once a second
 * sentinel agrees, and the replica answers as master ~1-3 s after the kill. A failover attempt
 * that fails (split vote) is retried after twice `failover-timeout` (2000 here, so 4 s).
 */
import Redis, { type RedisOptions } from 'ioredis';
import { spawnRedisServer, type SpawnedRedisServer } from './redis-server';

/** Where a server listens. */
export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** Options of {@link startRedisSentinel}. */
export interface StartRedisSentinelOptions {
  /** The master's name in Sentinel (default `'redlimit'`). */
  readonly name?: string;
  /** `sentinel down-after-milliseconds` (default 1000). */
  readonly downAfterMs?: number;
  /** `sentinel failover-timeout` (default 2000). */
  readonly failoverTimeoutMs?: number;
}

/** A running deployment; see the file comment. */
export interface StartedRedisSentinel {
  /** The master's name in Sentinel. */
  readonly name: string;
  /** The three sentinels. */
  readonly sentinels: readonly HostPort[];
  /** The master and the replica, in start order (the master first). */
  readonly servers: readonly HostPort[];
  /** What the sentinels report as the master now (asks each running sentinel; majority). */
  masterAddress(): Promise<HostPort>;
  /** Runs `work` on a direct client to whatever the sentinels call the master now, then closes it. */
  onMaster<T>(work: (master: Redis) => Promise<T>): Promise<T>;
  /**
   * An ioredis client through the sentinels, resolved once 'ready'. Defaults (overridable):
   * `connectTimeout: 2000`, `maxRetriesPerRequest: 1`. Clients still open at stop() are
   * disconnected by it.
   */
  createClient(options?: RedisOptions): Promise<Redis>;
  /**
   * SIGKILLs the current master (no shutdown, no last replication); resolves with its address
   * and `killedAt`, the `performance.now()` at which the signal was sent.
   */
  killMaster(): Promise<HostPort & { readonly killedAt: number }>;
  /**
   * Resolves once every sentinel names a master other than `old` and that server answers
   * `ROLE` as master; rejects after `timeoutMs` (default 30 s).
   */
  waitForFailover(old: HostPort, timeoutMs?: number): Promise<HostPort>;
  /** Kills every server and sentinel and removes their directories. */
  stop(): Promise<void>;
}

const HOST = '127.0.0.1';
const READY_TIMEOUT_MS = 20_000;

/**
 * Starts a master, a replica in sync with it, and three sentinels monitoring it (quorum 2),
 * and resolves once each sentinel has discovered the replica and the two other sentinels, so
 * a failover can start at once. Takes ~2-3 s (sentinels announce themselves every 2 s).
 */
export async function startRedisSentinel(
  options: StartRedisSentinelOptions = {},
): Promise<StartedRedisSentinel> {
  const name = options.name ?? 'redlimit';
  const downAfterMs = options.downAfterMs ?? 1_000;
  const failoverTimeoutMs = options.failoverTimeoutMs ?? 2_000;
  const processes: SpawnedRedisServer[] = [];
  const clients = new Set<Redis>();
  const stop = async (): Promise<void> => {
    for (const client of clients) client.disconnect();
    clients.clear();
    await Promise.all(processes.map((p) => p.stop()));
  };
  try {
    // A diskless full sync waits 5 s by default for more replicas to join: none will.
    const serverArgs = ['--repl-diskless-sync-delay', '0'];
    const master = await spawnRedisServer(serverArgs);
    processes.push(master);
    const replica = await spawnRedisServer([
      ...serverArgs,
      '--replicaof',
      HOST,
      String(master.port),
    ]);
    processes.push(replica);
    await until(
      async () =>
        /master_link_status:up/.test(String(await command(replica.port, ['INFO', 'replication']))),
      'the replica to sync with the master',
    );
    const sentinelArgs = [
      ...['--sentinel', 'monitor', name, HOST, String(master.port), '2'],
      ...['--sentinel', 'down-after-milliseconds', name, String(downAfterMs)],
      ...['--sentinel', 'failover-timeout', name, String(failoverTimeoutMs)],
      ...['--sentinel', 'parallel-syncs', name, '1'],
    ];
    const sentinels: SpawnedRedisServer[] = [];
    for (let i = 0; i < 3; i++) {
      const sentinel = await spawnRedisServer(sentinelArgs, { sentinel: true });
      processes.push(sentinel);
      sentinels.push(sentinel);
    }

    await until(async () => {
      for (const s of sentinels) {
        const replicas = await command(s.port, ['SENTINEL', 'REPLICAS', name]);
        const peers = await command(s.port, ['SENTINEL', 'SENTINELS', name]);
        if (!Array.isArray(replicas) || replicas.length !== 1) return false;
        if (!Array.isArray(peers) || peers.length !== 2) return false;
      }
      return true;
    }, 'every sentinel to know the replica and the other sentinels');

    const servers = [master, replica];
    const sentinelAddresses = sentinels.map((s) => ({ host: HOST, port: s.port }));
    const running = (): SpawnedRedisServer[] => sentinels.filter((s) => alive(s.pid));

    const masterAddress = async (): Promise<HostPort> => {
      const votes = new Map<number, number>();
      for (const s of running()) {
        const reply = await command(s.port, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name]);
        if (Array.isArray(reply)) {
          const port = Number(reply[1]);
          votes.set(port, (votes.get(port) ?? 0) + 1);
        }
      }
      const [port] = [...votes].sort((a, b) => b[1] - a[1])[0] ?? [];
      if (port === undefined) throw new Error('no sentinel named a master');
      return { host: HOST, port };
    };

    return {
      name,
      sentinels: sentinelAddresses,
      servers: servers.map((s) => ({ host: HOST, port: s.port })),
      masterAddress,
      async onMaster<T>(work: (master: Redis) => Promise<T>): Promise<T> {
        const { host, port } = await masterAddress();
        const master = new Redis({ host, port, maxRetriesPerRequest: 1 });
        try {
          return await work(master);
        } finally {
          master.disconnect();
        }
      },
      async createClient(clientOptions: RedisOptions = {}): Promise<Redis> {
        const client = new Redis({
          sentinels: sentinelAddresses.map((s) => ({ ...s })),
          name,
          connectTimeout: 2_000,
          maxRetriesPerRequest: 1,
          ...clientOptions,
        });
        clients.add(client);
        client.once('end', () => clients.delete(client));
        client.on('error', () => undefined); // reconnections during a failover are expected
        if (client.status !== 'ready') {
          let timer: NodeJS.Timeout | undefined;
          await new Promise<void>((resolve, reject) => {
            client.once('ready', resolve);
            timer = setTimeout(
              () => reject(new Error('sentinel client not ready in 10 s')),
              10_000,
            );
          }).finally(() => clearTimeout(timer));
        }
        return client;
      },
      async killMaster(): Promise<HostPort & { readonly killedAt: number }> {
        const address = await masterAddress();
        const server = servers.find((s) => s.port === address.port);
        if (!server) throw new Error(`the master ${address.port} is not one of this deployment`);
        const killedAt = performance.now();
        process.kill(server.pid, 'SIGKILL');
        await until(() => Promise.resolve(!alive(server.pid)), `the master ${address.port} to die`);
        return { ...address, killedAt };
      },
      async waitForFailover(old: HostPort, timeoutMs = 30_000): Promise<HostPort> {
        let promoted: HostPort | undefined;
        await until(
          async () => {
            const ports = new Set<number>();
            for (const s of running()) {
              const reply = await command(s.port, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name]);
              ports.add(Array.isArray(reply) ? Number(reply[1]) : NaN);
            }
            const [port] = [...ports];
            if (ports.size !== 1 || port === undefined || port === old.port) return false;
            const role = await command(port, ['ROLE']);
            if (!Array.isArray(role) || role[0] !== 'master') return false;
            promoted = { host: HOST, port };
            return true;
          },
          `a new master in place of ${old.port}`,
          timeoutMs,
        );
        return promoted!;
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** One command on a fresh connection (null when the server does not answer). */
async function command(port: number, args: readonly string[]): Promise<unknown> {
  const client = new Redis({
    host: HOST,
    port,
    lazyConnect: true,
    connectTimeout: 1_000,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const [name, ...rest] = args;
    return await client.call(name!, ...rest);
  } catch {
    return null;
  } finally {
    client.disconnect();
  }
}

async function until(
  condition: () => Promise<boolean>,
  what: string,
  timeoutMs = READY_TIMEOUT_MS,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
