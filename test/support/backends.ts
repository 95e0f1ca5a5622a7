import Redis, { Cluster } from 'ioredis';
import { MemoryStore, RedisStore, type RedisStoreClient, type Store } from '../../lib';
import { clusterNodes } from './cluster-handle';
import {
  connectNodeRedis,
  connectNodeRedisCluster,
  type NodeRedisClient,
  type NodeRedisCluster,
} from './node-redis';
import { createTestClient, redisUrl, uniquePrefix, warmPool } from './redis';

/** A controllable clock, aligned to a whole hour so windows start at known instants. */
export class TestClock {
  static readonly BASE = 1_800_000_000_000; // a whole hour (and minute, and second)
  now = TestClock.BASE;
  readonly read = (): number => this.now;
  advance(ms: number): void {
    this.now += ms;
  }
}

/** One store implementation under test. */
export interface Backend {
  readonly name:
    | 'redis'
    | 'redis, coalesce: false'
    | 'cluster'
    | 'cluster, coalesce: false'
    | 'node-redis'
    | 'node-redis cluster'
    | 'memory';
  /** A fresh, isolated store (own key prefix on Redis), optionally on a test clock. */
  store(clock?: TestClock): Store;
  /**
   * An ioredis Redis or Cluster client on the backend's server, for looking at stored keys
   * (Redis backends only; node-redis backends too: their stores run on `storeClient`).
   */
  readonly client?: Redis | Cluster;
  /** The client the backend's stores run on (Redis backends only). */
  readonly storeClient?: RedisStoreClient;
  /** Keys matching a pattern, on every master (Redis backends only). */
  keys?(pattern: string): Promise<string[]>;
}

/**
 * The stores every guarantee is tested on: a single Redis, the run's Redis Cluster (when it has
 * one, see global-setup.ts) and MemoryStore; with `uncoalesced`, also a single Redis store and a
 * Cluster store with coalescing off (for specs about the order operations reach Redis in); with
 * `nodeRedis`, also stores on node-redis clients (`createClient()`, and `createCluster()` when the
 * run has a Cluster). Call at the top of a spec file: it opens the clients before the specs, warms
 * them, and closes them after.
 */
export function backends(
  specName: string,
  { uncoalesced = false, nodeRedis = false } = {},
): Backend[] {
  let client: Redis | undefined;
  let cluster: Cluster | undefined;
  let nodeClient: NodeRedisClient | undefined;
  let nodeCluster: NodeRedisCluster | undefined;
  const nodes = clusterNodes();
  beforeAll(async () => {
    client = createTestClient();
    await warmPool(client);
    if (nodes) {
      cluster = new Cluster(nodes, { redisOptions: { maxRetriesPerRequest: 2 } });
      await new Promise<void>((resolve, reject) => {
        cluster!.once('ready', resolve);
        cluster!.once('error', reject);
      });
      await Promise.all(Array.from({ length: 20 }, (_, i) => cluster!.get(`warm:{${i}}`)));
    }
    if (nodeRedis) {
      nodeClient = await connectNodeRedis(redisUrl());
      if (nodes) nodeCluster = await connectNodeRedisCluster(nodes);
    }
  });
  afterAll(async () => {
    await client?.quit();
    await cluster?.quit();
    await nodeClient?.close();
    await nodeCluster?.close();
  });
  const redis: Backend = {
    name: 'redis',
    store: (clock) =>
      new RedisStore({ client: client!, prefix: uniquePrefix(specName), clock: clock?.read }),
    get client() {
      return client;
    },
    get storeClient() {
      return client;
    },
    keys: (pattern) => client!.keys(pattern),
  };
  const onCluster: Backend = {
    name: 'cluster',
    store: (clock) =>
      new RedisStore({ client: cluster!, prefix: uniquePrefix(specName), clock: clock?.read }),
    get client() {
      return cluster;
    },
    get storeClient() {
      return cluster;
    },
    keys: async (pattern) =>
      (await Promise.all(cluster!.nodes('master').map((node) => node.keys(pattern)))).flat(),
  };
  const redisUncoalesced: Backend = {
    name: 'redis, coalesce: false',
    get client() {
      return client;
    },
    get storeClient() {
      return client;
    },
    keys: (pattern) => client!.keys(pattern),
    store: (clock) =>
      new RedisStore({
        client: client!,
        prefix: uniquePrefix(specName),
        clock: clock?.read,
        coalesce: false,
      }),
  };
  const clusterUncoalesced: Backend = {
    ...onCluster,
    name: 'cluster, coalesce: false',
    get client() {
      return cluster;
    },
    get storeClient() {
      return cluster;
    },
    store: (clock) =>
      new RedisStore({
        client: cluster!,
        prefix: uniquePrefix(specName),
        clock: clock?.read,
        coalesce: false,
      }),
  };
  const onNodeRedis: Backend = {
    name: 'node-redis',
    store: (clock) =>
      new RedisStore({ client: nodeClient!, prefix: uniquePrefix(specName), clock: clock?.read }),
    get client() {
      return client;
    },
    get storeClient() {
      return nodeClient;
    },
    keys: (pattern) => client!.keys(pattern),
  };
  const onNodeRedisCluster: Backend = {
    ...onCluster,
    name: 'node-redis cluster',
    store: (clock) =>
      new RedisStore({ client: nodeCluster!, prefix: uniquePrefix(specName), clock: clock?.read }),
    get client() {
      return cluster;
    },
    get storeClient() {
      return nodeCluster;
    },
  };
  const memory: Backend = {
    name: 'memory',
    store: (clock) => new MemoryStore(clock ? { clock: clock.read } : {}),
  };
  return [
    redis,
    ...(uncoalesced ? [redisUncoalesced] : []),
    ...(nodes ? [onCluster, ...(uncoalesced ? [clusterUncoalesced] : [])] : []),
    ...(nodeRedis ? [onNodeRedis, ...(nodes ? [onNodeRedisCluster] : [])] : []),
    memory,
  ];
}
