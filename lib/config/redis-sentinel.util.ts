import type { CommonRedisOptions, SentinelConnectionOptions } from 'ioredis';
import { checkKnownNames } from '../core/options.util';

/** Where a Redis server (a Sentinel, a Cluster node) listens. */
export interface RedisHostPort {
  /** Host name or IP address. */
  readonly host: string;
  /** TCP port, 1–65535. */
  readonly port: number;
}

/**
 * `redis: { sentinels, name, ...options }`: the module asks the sentinels where the master
 * called `name` is and follows it through failovers (ioredis's Sentinel support). The other
 * fields are ioredis options of the connection to the master (`password`, `db`, `tls`, …) and of
 * the sentinels (`sentinelPassword`, `sentinelTLS`, …).
 *
 * @example
 * RedlimitModule.forRoot({
 *   redis: {
 *     sentinels: [{ host: 'sentinel-0', port: 26379 }, { host: 'sentinel-1', port: 26379 }],
 *     name: 'mymaster',
 *     password: process.env.REDIS_PASSWORD,
 *   },
 * });
 */
export type RedisSentinelOptions = Omit<
  CommonRedisOptions & SentinelConnectionOptions,
  'sentinels' | 'name'
> & {
  /** The sentinels to ask, at least one (list them all: any one of them may be down). */
  readonly sentinels: readonly RedisHostPort[];
  /** The master's name in the sentinels' configuration (`sentinel monitor <name> …`). */
  readonly name: string;
};

/**
 * Every field a Sentinel connection takes; the compiler keeps it in step with ioredis's types.
 * `role` is checked apart: redlimit writes, so it must talk to the master.
 */
const SENTINEL_FIELDS: Readonly<
  Record<keyof CommonRedisOptions | keyof SentinelConnectionOptions, true>
> = {
  keyPrefix: true,
  showFriendlyErrorStack: true,
  Connector: true,
  retryStrategy: true,
  commandTimeout: true,
  blockingTimeout: true,
  blockingTimeoutGrace: true,
  socketTimeout: true,
  keepAlive: true,
  noDelay: true,
  connectionName: true,
  disableClientInfo: true,
  clientInfoTag: true,
  username: true,
  password: true,
  db: true,
  autoResubscribe: true,
  autoResendUnfulfilledCommands: true,
  reconnectOnError: true,
  readOnly: true,
  stringNumbers: true,
  connectTimeout: true,
  monitor: true,
  maxRetriesPerRequest: true,
  maxLoadingRetryTime: true,
  enableAutoPipelining: true,
  autoPipeliningIgnoredCommands: true,
  offlineQueue: true,
  commandQueue: true,
  enableOfflineQueue: true,
  enableReadyCheck: true,
  lazyConnect: true,
  scripts: true,
  name: true,
  role: true,
  tls: true,
  sentinelUsername: true,
  sentinelPassword: true,
  sentinels: true,
  sentinelRetryStrategy: true,
  sentinelReconnectStrategy: true,
  preferredSlaves: true,
  disconnectTimeout: true,
  sentinelCommandTimeout: true,
  enableTLSForSentinelMode: true,
  sentinelTLS: true,
  natMap: true,
  updateSentinels: true,
  sentinelMaxConnections: true,
  failoverDetector: true,
};

/** Fields of a single-server connection that have no meaning once the sentinels name the master. */
const SERVER_ADDRESS_FIELDS: ReadonlySet<string> = new Set([
  'url',
  'host',
  'port',
  'path',
  'nodes',
]);

/**
 * Checks `redis: { sentinels, name, … }` before anything connects: at least one sentinel, each
 * `{ host, port }` with nothing else, a master name, no address of a single server (`url`,
 * `host`, `port`, `path`) or of a cluster (`nodes`) beside them, and no field ioredis does not
 * know. Also catches `name` given without `sentinels`.
 *
 * @throws TypeError naming the field (`redis.sentinels[1].port`) and what was expected
 * @example
 * validateSentinelOptions({ sentinels: [{ host: 's0', port: 26379 }], name: 'mymaster' }); // ok
 */
export function validateSentinelOptions(redis: Readonly<Record<string, unknown>>): void {
  const hasSentinels = redis.sentinels !== undefined;
  if (!hasSentinels) {
    if (redis.name !== undefined) {
      fail('redis.name', 'is the Sentinel master name: it needs redis.sentinels');
    }
    return;
  }
  // The first field set that is not an option of a Sentinel connection (a server address is not).
  checkKnownNames(
    Object.fromEntries(Object.entries(redis).filter(([, value]) => value !== undefined)),
    Object.keys(SENTINEL_FIELDS),
    (field) =>
      `RedlimitModule redis.${field} ` +
      (SERVER_ADDRESS_FIELDS.has(field)
        ? 'cannot be combined with redis.sentinels: the sentinels say where the master is'
        : 'is not an option of a Sentinel connection (an ioredis option)'),
  );
  const { sentinels, name, role } = redis;
  if (!Array.isArray(sentinels) || sentinels.length === 0) {
    fail('redis.sentinels', `must be a non-empty array of { host, port }; got ${show(sentinels)}`);
  }
  (sentinels as readonly unknown[]).forEach((entry, i) =>
    checkAddress(entry, `redis.sentinels[${i}]`),
  );
  if (typeof name !== 'string' || name.trim() === '') {
    fail(
      'redis.name',
      `must be the master's name in Sentinel (a non-empty string); got ${show(name)}`,
    );
  }
  if (role !== undefined && role !== 'master') {
    fail('redis.role', `must be 'master' (redlimit writes); got ${show(role)}`);
  }
}

/**
 * Whether module Redis options are the Sentinel form (`sentinels` set).
 *
 * @example
 * isSentinelConnection({ sentinels: [{ host: 's0', port: 26379 }], name: 'mymaster' }); // true
 */
export function isSentinelConnection(options: object): options is RedisSentinelOptions {
  return (options as { sentinels?: unknown }).sentinels !== undefined;
}

/**
 * Parses `host:port[,host:port…]` (IPv6 as `[::1]:26379`), as the environment and the CLI give
 * sentinels and cluster nodes.
 *
 * @throws Error saying which entry is wrong and what was expected
 * @example
 * parseHostPortList('sentinel-0:26379, sentinel-1:26379');
 * // [{ host: 'sentinel-0', port: 26379 }, { host: 'sentinel-1', port: 26379 }]
 */
export function parseHostPortList(value: string): RedisHostPort[] {
  const entries = value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (entries.length === 0) throw new Error('expected host:port[,host:port…]');
  return entries.map((entry) => {
    const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^\s:[\]]+)):(\d{1,5})$/.exec(entry);
    const port = Number(match?.[3]);
    if (!match || port < 1 || port > 65535) {
      throw new Error(`'${entry}' is not host:port (e.g. sentinel-0:26379 or [::1]:26379)`);
    }
    return { host: (match[1] ?? match[2])!, port };
  });
}

function checkAddress(entry: unknown, field: string): void {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
    fail(field, `must be { host, port }; got ${show(entry)}`);
  }
  const address = entry as Record<string, unknown>;
  checkKnownNames(
    address,
    ['host', 'port'],
    (key) => `RedlimitModule ${field}.${key} is not a field of { host, port }`,
  );
  if (typeof address.host !== 'string' || address.host.trim() === '') {
    fail(`${field}.host`, `must be a non-empty string; got ${show(address.host)}`);
  }
  const port = address.port;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) {
    fail(`${field}.port`, `must be a port number, 1–65535; got ${show(port)}`);
  }
}

function fail(field: string, problem: string): never {
  throw new TypeError(`RedlimitModule ${field} ${problem}`);
}

function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return 'a function';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
