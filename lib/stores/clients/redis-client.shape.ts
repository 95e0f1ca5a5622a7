/*
 * The Redis clients RedisStore runs on, by shape: whatever has these members works, whichever
 * package (and version of it) made it. Only what redlimit calls is required.
 */

/**
 * An ioredis `Redis` or `Cluster` (ioredis 5+), or an iovalkey client (the ioredis fork for
 * Valkey): what redlimit uses of one.
 *
 * @example
 * const client: IoredisLikeClient = new Redis(process.env.REDIS_URL!);
 */
export interface IoredisLikeClient {
  /** The connection state (`ready`, `reconnecting`, `end`, …). */
  readonly status: string;
  /** `true` on a Cluster client. */
  readonly isCluster?: boolean;
  /** Sends any command, its arguments given one by one. */
  call(command: string, ...args: Array<string | number>): Promise<unknown>;
  /** Sends any command, its arguments given as one array. */
  call(command: string, args: Array<string | number>): Promise<unknown>;
  /** Runs a script by source (the fallback after `NOSCRIPT`). */
  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>;
  /** Defines a script command (sent as EVALSHA, loaded with EVAL when Redis lacks it). */
  defineCommand(name: string, definition: { lua: string }): void;
  /** A Cluster's nodes of a role (Cluster clients only). */
  nodes?(role: 'master'): IoredisLikeClient[];
}

/**
 * A node-redis client (`createClient()` of `redis` v4 or v5): what redlimit uses of one. Commands
 * go through `sendCommand`, so a client made with modules, scripts or a type mapping works too,
 * as long as replies keep their default types (strings and numbers, RESP2 or RESP3).
 *
 * @example
 * const client: NodeRedisLikeClient = await createClient({ url: process.env.REDIS_URL }).connect();
 */
export interface NodeRedisLikeClient {
  /** Whether the socket is open (connected or reconnecting). */
  readonly isOpen: boolean;
  /** Whether the client is connected and ready for commands. */
  readonly isReady: boolean;
  /** Sends any command, as its arguments. */
  sendCommand(args: string[]): Promise<unknown>;
}

/** A master of a node-redis Cluster (or the master of a Sentinel client), as the client lists it. */
export interface NodeRedisClusterNode {
  /** The node's host. */
  readonly host: string;
  /** The node's port. */
  readonly port: number;
}

/**
 * A node-redis Cluster client (`createCluster()` of `redis` v4 or v5): what redlimit uses of one.
 * Each script call is routed by its first key (all keys of one call share a slot).
 *
 * @example
 * const cluster: NodeRedisLikeCluster = await createCluster({ rootNodes: [{ url }] }).connect();
 */
export interface NodeRedisLikeCluster {
  /** Whether the cluster client is open. */
  readonly isOpen: boolean;
  /** The masters of the cluster, as last discovered. */
  readonly masters: readonly NodeRedisClusterNode[];
  /** The client of one node. */
  nodeClient(node: NodeRedisClusterNode): Promise<NodeRedisLikeClient> | NodeRedisLikeClient;
  /** Sends a command to the master serving `firstKey`'s slot (any node when undefined). */
  sendCommand(
    firstKey: string | undefined,
    isReadonly: boolean | undefined,
    args: string[],
  ): Promise<unknown>;
}

/**
 * A node-redis Sentinel client (`createSentinel()` of `redis` v5): what redlimit uses of one.
 * Every command is sent as a write, so it goes to the master the sentinels name (node-redis finds
 * the new master after a failover); commands in flight together share one connection of its
 * master pool, so they run in issue order.
 *
 * @example
 * const sentinel: NodeRedisLikeSentinel = await createSentinel({
 *   name: 'mymaster',
 *   sentinelRootNodes: [{ host: 'sentinel-0', port: 26379 }],
 * }).connect();
 */
export interface NodeRedisLikeSentinel {
  /** Whether the client is open (connected, or finding the master again). */
  readonly isOpen: boolean;
  /** Whether the client has connected to the master and takes commands. */
  readonly isReady: boolean;
  /** Sends any command, as its arguments: to the master when `isReadonly` is false. */
  sendCommand(isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  /** The master the client is on, as the sentinels last named it. */
  getMasterNode(): NodeRedisClusterNode | undefined;
}

/**
 * Any client {@link RedisStore} runs on: ioredis or iovalkey (`Redis`, `Cluster`), or node-redis
 * (`createClient()`, `createCluster()`, `createSentinel()`), told apart by shape.
 *
 * @example
 * new RedisStore({ client: await createClient({ url }).connect() });
 * new RedisStore({ client: new Redis(url) });
 */
export type RedisStoreClient =
  IoredisLikeClient | NodeRedisLikeClient | NodeRedisLikeCluster | NodeRedisLikeSentinel;
