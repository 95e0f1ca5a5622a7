import { IoredisPort } from './ioredis.port';
import { NodeRedisClusterPort, NodeRedisPort, NodeRedisSentinelPort } from './node-redis.port';
import type {
  IoredisLikeClient,
  NodeRedisLikeClient,
  NodeRedisLikeCluster,
  NodeRedisLikeSentinel,
  RedisStoreClient,
} from './redis-client.shape';
import type { ClientPort } from './port-contract';

export type { ClientPort, CommandSender, EvalScript } from './port-contract';

/** The connection state of a client RedisStore runs on (`ready`, …; see {@link ClientPort}). */
export function clientStatus(client: RedisStoreClient): string {
  return clientPort(client, 'client').status();
}

/** Whether `client` has the shape of a client RedisStore runs on (see {@link RedisStoreClient}). */
export function isRedisStoreClient(client: unknown): client is RedisStoreClient {
  return shapeOf(client) !== undefined;
}

/**
 * The port of a client, chosen by its shape: ioredis/iovalkey (`defineCommand`), a node-redis
 * Cluster (`nodeClient`, `masters`), Sentinel client (`getMasterNode`) or client (`sendCommand`,
 * `isReady`).
 *
 * @throws TypeError naming `name` when the client has none of these shapes, or is a node-redis
 *   client pool (not supported)
 */
export function clientPort(client: unknown, name: string): ClientPort {
  switch (shapeOf(client)) {
    case 'ioredis':
      return new IoredisPort(client as IoredisLikeClient);
    case 'node-redis cluster':
      return new NodeRedisClusterPort(client as NodeRedisLikeCluster);
    case 'node-redis sentinel':
      return new NodeRedisSentinelPort(client as NodeRedisLikeSentinel);
    case 'node-redis':
      return new NodeRedisPort(client as NodeRedisLikeClient);
  }
  const has = (member: string) =>
    typeof client === 'object' &&
    client !== null &&
    typeof (client as Record<string, unknown>)[member] === 'function';
  if (isLegacyMode(client)) {
    throw new TypeError(
      `${name} is a node-redis v4 client in legacyMode; pass its promise client, client.v4`,
    );
  }
  if (has('execute')) {
    throw new TypeError(
      `${name} is a node-redis client pool: redlimit needs one connection (a pool runs commands ` +
        'on several, out of issue order); pass a createClient() client',
    );
  }
  throw new TypeError(
    `${name} must be an ioredis or iovalkey Redis or Cluster, or a node-redis createClient(), ` +
      'createCluster() or createSentinel() client',
  );
}

function shapeOf(
  client: unknown,
): 'ioredis' | 'node-redis' | 'node-redis cluster' | 'node-redis sentinel' | undefined {
  if (typeof client !== 'object' || client === null) return undefined;
  const members = client as Record<string, unknown>;
  if (typeof members.defineCommand === 'function') return 'ioredis';
  if (typeof members.sendCommand !== 'function' || isLegacyMode(client)) return undefined;
  if (typeof members.nodeClient === 'function' && 'masters' in members) return 'node-redis cluster';
  if (typeof members.isReady !== 'boolean') return undefined; // a pool has none
  // A Sentinel client sends commands as (isReadonly, args).
  return typeof members.getMasterNode === 'function' ? 'node-redis sentinel' : 'node-redis';
}

/**
 * A node-redis v4 client in legacyMode: it sends commands with callbacks (its promise client is
 * `.v4`, a getter that throws on other clients, so the option is read instead).
 */
function isLegacyMode(client: unknown): boolean {
  if (typeof client !== 'object' || client === null) return false;
  const { options } = client as { options?: { legacyMode?: unknown } };
  return typeof options === 'object' && options !== null && options.legacyMode === true;
}
