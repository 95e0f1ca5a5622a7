import type { RedisClient } from '../stores/redis.store';
import { type CliRedisTarget, describeTarget } from './cli-config.util';
import { CliError, EXIT_CODES, storeError } from './cli.error';

/**
 * Connects to Redis for one command: no reconnection, no offline queue, at most `timeoutMs`
 * for the connection and its ready check — an unreachable or hung server becomes an error
 * (exit code 3) instead of a command that hangs. A URL gives one server; `nodes` an ioredis
 * `Cluster`; `sentinels` the master they name (asked once, each sentinel tried in turn).
 *
 * @throws CliError (exit code 3) saying which server could not be reached and why
 * @example
 * const client = await connectRedis({ url: 'redis://localhost:6379' }, 5000);
 * try { … } finally { client.disconnect(); }
 */
export async function connectRedis(
  target: CliRedisTarget,
  timeoutMs: number,
): Promise<RedisClient> {
  const { Redis, Cluster } = await loadIoredis();
  const once = {
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
  };
  let client: RedisClient;
  if ('nodes' in target) {
    client = new Cluster(
      target.nodes.map(({ host, port }) => ({ host, port })),
      {
        lazyConnect: true,
        enableOfflineQueue: false,
        clusterRetryStrategy: () => null,
        slotsRefreshTimeout: timeoutMs,
        // Node connections are opened on first use: they need their offline queue.
        redisOptions: once,
      },
    );
  } else {
    const settings = {
      ...once,
      lazyConnect: true,
      retryStrategy: () => null,
      enableOfflineQueue: false,
    };
    client =
      'url' in target
        ? new Redis(target.url, settings)
        : new Redis({
            ...settings,
            sentinels: target.sentinels.map(({ host, port }) => ({ host, port })),
            name: target.name,
            sentinelRetryStrategy: () => null,
            sentinelCommandTimeout: timeoutMs,
          });
  }
  let lastError: Error | undefined;
  client.on('error', (error: Error) => {
    lastError = error; // reported below through connect()'s outcome
  });
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([client.connect(), deadline]);
    return client;
  } catch (error) {
    client.disconnect();
    // A hung server never answers the close: drop the socket, or it holds the process open.
    (client as { stream?: { destroy(): void } }).stream?.destroy();
    const reason = lastError?.message ?? (error as Error).message;
    throw storeError(`cannot reach Redis at ${describeTarget(target)}: ${reason}`);
  } finally {
    clearTimeout(timer);
  }
}

async function loadIoredis(): Promise<typeof import('ioredis')> {
  try {
    return await import('ioredis');
  } catch {
    throw new CliError(
      'the redlimit command needs ioredis (npm install ioredis)',
      EXIT_CODES.usage,
    );
  }
}
