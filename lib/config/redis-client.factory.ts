import type { RedisOptions } from 'ioredis';
import { clientPort } from '../stores/clients/client-port';
import type { RedisStoreClient } from '../stores/clients/redis-client.shape';
import type { RedisClient } from '../stores/redis.store';
import type { RedisConnectionOptions } from './redlimit-options.interface';
import { isSentinelConnection, validateSentinelOptions } from './redis-sentinel.util';

/**
 * A Redis client for the module, and whether the module made it (and so must close it): an
 * ioredis client it created, or the client given in `{ client }`, of any supported shape.
 */
export type ModuleRedisClient =
  | {
      /** The ioredis client the module created. */
      readonly client: RedisClient;
      /** The module created the client: it closes it on shutdown. */
      readonly owned: true;
    }
  | {
      /** The client given in `{ client }`. */
      readonly client: RedisStoreClient;
      /** The module leaves the client open. */
      readonly owned: false;
    };

/**
 * Defaults of clients the module creates. A spend that timed out must not run later:
 * - `autoResendUnfulfilledCommands: false`: commands written to a connection that broke are not
 *   sent again on reconnect (the caller was already answered by the fail mode);
 * - `maxRetriesPerRequest: 1`: a queued command fails after one reconnection attempt;
 * - the offline queue is on only until the first connection is ready, so decisions made while
 *   the app boots wait for it (bounded by `timeoutMs`), and off afterwards, so a command issued
 *   while Redis is away fails at once instead of waiting to be sent when it is back.
 */
const SAFE_DEFAULTS: RedisOptions = {
  maxRetriesPerRequest: 1,
  autoResendUnfulfilledCommands: false,
  connectTimeout: 5_000,
  // ioredis arms this timer on every disconnect, even of a socket that is already gone (Redis
  // unreachable): a shutdown then lingers this long. Half a second is plenty to flush a QUIT.
  disconnectTimeout: 500,
};

/**
 * Returns the given client (`{ client }`), or creates one from a URL, ioredis options, cluster
 * nodes or sentinels (`{ sentinels, name }`, checked by {@link validateSentinelOptions} before
 * anything connects). ioredis is loaded only here, so an app using another store does not need it.
 *
 * @example
 * const { client, owned } = await createRedisClient('redis://localhost:6379');
 */
export async function createRedisClient(
  options: RedisConnectionOptions,
): Promise<ModuleRedisClient> {
  if (typeof options === 'object' && options !== null && 'client' in options) {
    clientPort(options.client, 'RedlimitModule redis.client'); // throws unless of a known shape
    return { client: options.client, owned: false };
  }
  if (typeof options === 'object' && options !== null) {
    validateSentinelOptions(options as Readonly<Record<string, unknown>>);
  }
  const { Redis, Cluster } = await import('ioredis');
  if (typeof options === 'object' && options !== null && 'nodes' in options) {
    const { clusterOptions = {} } = options;
    const userOffline = clusterOptions.enableOfflineQueue;
    const cluster = new Cluster([...options.nodes], {
      ...clusterOptions,
      redisOptions: { ...SAFE_DEFAULTS, ...clusterOptions.redisOptions },
    });
    if (userOffline === undefined) closeOfflineQueueWhenReady(cluster, cluster.options);
    return { client: cluster, owned: true };
  }
  if (typeof options === 'string') {
    const redis = new Redis(options, { ...SAFE_DEFAULTS });
    closeOfflineQueueWhenReady(redis, redis.options);
    return { client: redis, owned: true };
  }
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(
      'RedlimitModule redis must be a URL, ioredis options, { client }, { nodes } or { sentinels, name }',
    );
  }
  if (isSentinelConnection(options)) {
    // ioredis asks the sentinels for the master on every (re)connection, so a failover is
    // followed: the offline queue and retries are bounded as for a single server.
    const { sentinels, ...rest } = options;
    const redis = new Redis({
      ...SAFE_DEFAULTS,
      ...rest,
      sentinels: sentinels.map(({ host, port }) => ({ host, port })),
    });
    if (rest.enableOfflineQueue === undefined) closeOfflineQueueWhenReady(redis, redis.options);
    return { client: redis, owned: true };
  }
  const { url, ...rest } = options;
  const settings: RedisOptions = { ...SAFE_DEFAULTS, ...rest };
  const redis = url === undefined ? new Redis(settings) : new Redis(url, settings);
  if (rest.enableOfflineQueue === undefined) closeOfflineQueueWhenReady(redis, redis.options);
  return { client: redis, owned: true };
}

function closeOfflineQueueWhenReady(
  client: RedisClient,
  options: { enableOfflineQueue?: boolean },
): void {
  // ioredis reads the option on every command, so turning it off after the first `ready` works.
  client.once('ready', () => {
    options.enableOfflineQueue = false;
  });
}

/**
 * Closes a client the module created: `QUIT` when it is connected (bounded by `timeoutMs`, a hung
 * server must not hold the shutdown), else an immediate disconnect.
 */
export async function closeRedisClient(client: RedisClient, timeoutMs: number): Promise<void> {
  if (client.status === 'end') return;
  if (client.status !== 'ready') {
    client.disconnect();
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  const settled = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, timeoutMs);
    client.once('end', resolve);
  });
  client.quit().catch(() => client.disconnect());
  await settled;
  clearTimeout(timer);
  if ((client.status as string) !== 'end') client.disconnect(); // QUIT did not finish in time
}
