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

/** A master of a node-redis Cluster, as the cluster lists it. */
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
 * Any client {@link RedisStore} runs on: ioredis or iovalkey (`Redis`, `Cluster`), or node-redis
 * (`createClient()`, `createCluster()`), told apart by shape.
 *
 * @example
 * new RedisStore({ client: await createClient({ url }).connect() });
 * new RedisStore({ client: new Redis(url) });
 */
export type RedisStoreClient = IoredisLikeClient | NodeRedisLikeClient | NodeRedisLikeCluster;
