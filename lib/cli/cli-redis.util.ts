import { maskUrl } from '../nest/mask-url.util';
import type { RedisClient } from '../stores/redis.store';
import { CliError, EXIT_CODES, storeError } from './cli.error';

/**
 * Connects to Redis for one command: no reconnection, no offline queue, at most `timeoutMs`
 * for the connection and its ready check — an unreachable or hung server becomes an error
 * (exit code 3) instead of a command that hangs.
 *
 * @throws CliError (exit code 3) saying which server could not be reached and why
 * @example
 * const client = await connectRedis('redis://localhost:6379', 5000);
 * try { … } finally { client.disconnect(); }
 */
export async function connectRedis(url: string, timeoutMs: number): Promise<RedisClient> {
  const { Redis } = await loadIoredis();
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
  });
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
    (client.stream as { destroy(): void } | undefined)?.destroy();
    const reason = lastError?.message ?? (error as Error).message;
    throw storeError(`cannot reach Redis at ${maskUrl(url)}: ${reason}`);
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
