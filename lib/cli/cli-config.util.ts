import type { FailMode } from '../core/policy';
import { type ClientIpResolver, createClientIpResolver } from '../http/client-ip.util';
import { type EnvSource, redlimitOptionsFromEnv } from '../config/options-from-env.util';
import { parsePolicySpec } from '../config/policy-spec.util';
import { maskUrl } from '../config/mask-url.util';
import {
  isSentinelConnection,
  parseHostPortList,
  type RedisHostPort,
} from '../config/redis-sentinel.util';
import type { PolicyDefinition, RedlimitModuleOptions } from '../config/redlimit-options.interface';
import type { CliArgs } from './cli-args.util';
import { usageError } from './cli.error';

/**
 * What the `redlimit` command works with: the module's environment configuration (read by the
 * same {@link redlimitOptionsFromEnv} as the app), with command-line overrides applied.
 */
export interface CliConfig {
  /**
   * `--redis`, `--cluster` or `--sentinel`, else what the environment names as the module reads
   * it (`REDLIMIT_REDIS_CLUSTER_NODES`, `REDLIMIT_REDIS_SENTINELS`, `REDLIMIT_REDIS_URL`,
   * `REDIS_URL`).
   */
  readonly redis?: CliRedisTarget;
  /** `--prefix`, else `REDLIMIT_PREFIX`, else `'rl:'` (the module's default). */
  readonly prefix: string;
  /** `REDLIMIT_POLICIES`, then `--policies` (a name given in both: `--policies` wins). */
  readonly policies: Readonly<Record<string, PolicyDefinition>>;
  /** `REDLIMIT_FAIL_MODE`, else `'closed'`: the fail mode of policies that set none. */
  readonly defaultFailMode: FailMode;
  /** `REDLIMIT_KEY_SECRET`: the HMAC secret of `@Attempt` key hashes. */
  readonly keySecret?: string;
  /** Groups a client IP as the app does (`REDLIMIT_IPV6_SUBNET`). */
  readonly clientIp: ClientIpResolver;
}

/**
 * The Redis a command works on: one server by URL, a Cluster by some of its nodes, or the master
 * a set of sentinels names.
 */
export type CliRedisTarget =
  | { readonly url: string }
  | { readonly nodes: readonly RedisHostPort[] }
  | { readonly sentinels: readonly RedisHostPort[]; readonly name: string };

/** The module's default key prefix. */
const DEFAULT_PREFIX = 'rl:';

/**
 * Reads the configuration from `env` and applies `--redis` (or `--cluster`, or `--sentinel` with
 * `--sentinel-name`), `--prefix` and `--policies`.
 *
 * @throws CliError (exit code 2) naming the variable or option whose value is wrong
 * @example
 * cliConfig(parseCliArgs(['policies']), process.env).policies; // { login: { … } }
 */
export function cliConfig(args: CliArgs, env: EnvSource): CliConfig {
  const options = fromEnv(() => redlimitOptionsFromEnv(env));
  const redis = commandLineTarget(args) ?? envTarget(options.redis);
  let policies: Record<string, PolicyDefinition> = { ...options.policies };
  if (args.policies !== undefined) {
    try {
      policies = { ...policies, ...parsePolicySpec(args.policies) };
    } catch (error) {
      throw usageError(`--policies: ${(error as Error).message}`);
    }
  }
  return {
    ...(redis !== undefined && { redis }),
    prefix: args.prefix ?? options.prefix ?? DEFAULT_PREFIX,
    policies,
    defaultFailMode: options.failMode ?? 'closed',
    ...(options.keySecret !== undefined && { keySecret: options.keySecret }),
    clientIp: createClientIpResolver(options.clientIp),
  };
}

/**
 * How a target is shown: a URL with its password masked, `cluster h:p,h:p` or
 * `sentinel 'name' at h:p,h:p`.
 *
 * @example
 * describeTarget({ sentinels: [{ host: 's0', port: 26379 }], name: 'mymaster' });
 * // "sentinel 'mymaster' at s0:26379"
 */
export function describeTarget(target: CliRedisTarget): string {
  const list = (addresses: readonly RedisHostPort[]) =>
    addresses
      .map(({ host, port }) => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`))
      .join(',');
  if ('url' in target) return maskUrl(target.url);
  if ('nodes' in target) return `cluster ${list(target.nodes)}`;
  return `sentinel '${target.name}' at ${list(target.sentinels)}`;
}

/** `--redis`, `--cluster` or `--sentinel` (at most one), checked before anything connects. */
function commandLineTarget(args: CliArgs): CliRedisTarget | undefined {
  const given = (
    [
      ['--redis', args.redis],
      ['--cluster', args.cluster],
      ['--sentinel', args.sentinel],
    ] as const
  ).filter(([, value]) => value !== undefined);
  if (given.length > 1) {
    throw usageError(
      `--redis, --cluster and --sentinel are alternatives: got ${given.map(([flag]) => flag).join(' and ')}`,
    );
  }
  if (args.sentinelName !== undefined && args.sentinel === undefined) {
    throw usageError('--sentinel-name needs --sentinel (host:port of the sentinels)');
  }
  if (args.redis !== undefined) {
    fromEnv(() => redlimitOptionsFromEnv({ REDLIMIT_REDIS_URL: args.redis }), '--redis');
    return { url: args.redis };
  }
  if (args.cluster !== undefined) return { nodes: addresses('--cluster', args.cluster) };
  if (args.sentinel !== undefined) {
    const sentinels = addresses('--sentinel', args.sentinel);
    if (args.sentinelName === undefined || args.sentinelName.trim() === '') {
      throw usageError("--sentinel needs --sentinel-name (the master's name in Sentinel)");
    }
    return { sentinels, name: args.sentinelName };
  }
  return undefined;
}

/** The Redis of the module's environment options, if any. */
function envTarget(redis: RedlimitModuleOptions['redis']): CliRedisTarget | undefined {
  if (typeof redis === 'string') return { url: redis };
  if (redis !== undefined && 'nodes' in redis) {
    return { nodes: redis.nodes as readonly RedisHostPort[] };
  }
  if (redis !== undefined && isSentinelConnection(redis)) {
    return { sentinels: redis.sentinels, name: redis.name };
  }
  return undefined;
}

function addresses(flag: string, value: string): RedisHostPort[] {
  try {
    return parseHostPortList(value);
  } catch (error) {
    throw usageError(`${flag}: ${(error as Error).message}`);
  }
}

/** Runs the env helper; its `RedlimitConfigError` (already naming the variable) exits 2. */
function fromEnv<T>(read: () => T, option?: string): T {
  try {
    return read();
  } catch (error) {
    const message = (error as Error).message;
    throw usageError(option ? `${option}: expected a redis:// or rediss:// URL` : message);
  }
}
