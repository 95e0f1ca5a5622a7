/**
 * The Redis a bench runs against: `--redis <url>`, else REDIS_URL, else a private redis-server
 * started on a free port the way the tests start theirs (nothing persisted, stopped on exit).
 * With a URL, point it at a scratch database: the benches write keys (and delete them after).
 */
import Redis from 'ioredis';
import { spawnRedisServer } from '../../test/support/redis-server';
import { isLocalProcess } from './load.util';

export interface BenchRedis {
  readonly url: string;
  /** Whether this process started the server (it stops it in `stop()`). */
  readonly private: boolean;
  /**
   * The server's process id when it runs on this machine (a private server, or a given URL whose
   * `INFO server` process_id is a local redis-server): its CPU is the bench's own, not foreign.
   */
  readonly pid: number | undefined;
  stop(): Promise<void>;
}

export async function benchRedis(url: string | undefined): Promise<BenchRedis> {
  const given = url || process.env.REDIS_URL;
  if (given)
    return { url: given, private: false, pid: await localPid(given), stop: async () => {} };
  const server = await spawnRedisServer();
  return { url: server.url, private: true, pid: server.pid, stop: () => server.stop() };
}

async function localPid(url: string): Promise<number | undefined> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await client.connect();
    const pid = Number(/process_id:(\d+)/.exec(await client.info('server'))?.[1]);
    return pid && isLocalProcess(pid, 'redis-server') ? pid : undefined;
  } finally {
    client.disconnect();
  }
}

/** Deletes every key matching `pattern` (SCAN, never KEYS). */
export async function deleteKeys(client: Redis, pattern: string): Promise<number> {
  let cursor = '0';
  let deleted = 0;
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (keys.length) deleted += await client.unlink(...keys);
  } while (cursor !== '0');
  return deleted;
}

/** Every key name in the database (SCAN). */
export async function allKeys(client: Redis): Promise<Set<string>> {
  const found = new Set<string>();
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) found.add(key);
  } while (cursor !== '0');
  return found;
}

/** Sum of `MEMORY USAGE` over keys (pipelined). */
export async function memoryUsage(client: Redis, keys: readonly string[]): Promise<number> {
  let bytes = 0;
  for (let i = 0; i < keys.length; i += 500) {
    const pipeline = client.pipeline();
    for (const key of keys.slice(i, i + 500)) pipeline.memory('USAGE', key, 'SAMPLES', '0');
    for (const [error, usage] of (await pipeline.exec()) ?? []) {
      if (error) throw error;
      bytes += Number(usage ?? 0);
    }
  }
  return bytes;
}

/** Commands a client sends itself; what scripts call from inside is counted under them too. */
const SCRIPT_COMMANDS = new Set(['eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro']);
const ADMIN_COMMANDS = new Set(['config', 'info', 'ping', 'client', 'select', 'hello']);

/**
 * Redis-side cost since the last `CONFIG RESETSTAT`, from `INFO commandstats` and `INFO cpu`:
 * `commandUsec` is the time spent executing the client's commands (script calls when there are any,
 * so the commands a script runs are not counted twice), `cpuUsec` the server's user + system CPU
 * (needs the `INFO cpu` reading taken at the reset), `calls` the number of commands per name.
 */
export interface RedisCost {
  readonly commandUsec: number;
  readonly cpuSeconds: number;
  readonly calls: Readonly<Record<string, number>>;
}

export async function redisCost(admin: Redis): Promise<RedisCost> {
  const info = await admin.info('commandstats');
  const cpu = await admin.info('cpu');
  const calls: Record<string, number> = {};
  let scriptUsec = 0;
  let otherUsec = 0;
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    const [, name, count, usec] = match as unknown as [string, string, string, string];
    const command = name.split('|')[0]!; // Redis 7 names subcommands: config|resetstat
    if (ADMIN_COMMANDS.has(command)) continue;
    calls[command] = Number(count);
    if (SCRIPT_COMMANDS.has(command)) scriptUsec += Number(usec);
    else otherUsec += Number(usec);
  }
  const seconds = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(cpu)?.[1]);
  return {
    commandUsec: scriptUsec > 0 ? scriptUsec : otherUsec,
    cpuSeconds: seconds('used_cpu_user') + seconds('used_cpu_sys'),
    calls,
  };
}

export async function redisVersion(client: Redis): Promise<string> {
  return /redis_version:(\S+)/.exec(await client.info('server'))?.[1] ?? 'unknown';
}
