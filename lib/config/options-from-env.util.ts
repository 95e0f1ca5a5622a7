import { parseDuration } from '../core/duration.util';
import { FAIL_MODES, type FailMode } from '../core/policy';
import { createClientIpResolver } from '../http/client-ip.util';
import { ipRangeList } from '../http/ip-range.util';
import { maskUrl } from './mask-url.util';
import { parsePolicySpec } from './policy-spec.util';
import { RedlimitConfigError } from './redlimit-config.error';
import { parseHostPortList } from './redis-sentinel.util';
import type {
  ClientIpHeader,
  ClientIpOptions,
  RateLimitHeaderStyle,
  RedlimitModuleOptions,
} from './redlimit-options.interface';

/** Environment variables: `process.env`, a plain record, or anything with `get(name)` (ConfigService). */
export type EnvSource =
  | Readonly<Record<string, string | undefined>>
  | {
      /** The variable's value, or `undefined` when it is not set (as `ConfigService.get` does). */
      get(name: string): unknown;
    };

/**
 * Module options from environment variables, on top of `defaults` (a variable that is set wins;
 * policies are merged by name). Every value is validated: a bad one throws a
 * {@link RedlimitConfigError} naming the variable and the value.
 *
 * | variable | meaning |
 * | --- | --- |
 * | `REDLIMIT_REDIS_URL`, else `REDIS_URL` | `redis://` or `rediss://` URL |
 * | `REDLIMIT_REDIS_SENTINELS` | `host:port,host:port`: the sentinels to ask (wins over `REDIS_URL`) |
 * | `REDLIMIT_REDIS_SENTINEL_NAME` | the master's name in Sentinel (required with the above) |
 * | `REDLIMIT_REDIS_CLUSTER_NODES` | `host:port,host:port`: startup nodes of a Redis Cluster (wins over `REDIS_URL`) |
 * | `REDLIMIT_PREFIX` | key prefix |
 * | `REDLIMIT_FAIL_MODE` | `closed`, `open` or `memory` |
 * | `REDLIMIT_TIMEOUT_MS` | whole ms ≥ 1 |
 * | `REDLIMIT_POLICIES` | `login=fixed-window:10/15m,api=sliding-window:100/1m` (see {@link parsePolicySpec}) |
 * | `REDLIMIT_DEFAULT_POLICY` | a policy name |
 * | `REDLIMIT_HEADERS` | `ietf`, `legacy`, `both` or `none` |
 * | `REDLIMIT_TRUSTED_PROXIES` | comma-separated addresses, CIDR ranges, `loopback`, `private`, `linklocal`, `unix` |
 * | `REDLIMIT_TRUSTED_HOPS` | whole number ≥ 1: how many proxies are in front of the app (`clientIp.trustedHops`) |
 * | `REDLIMIT_IPV6_SUBNET` | 1–128 |
 * | `REDLIMIT_CLIENT_IP_HEADER` | `x-forwarded-for`, `forwarded`, `cf-connecting-ip`, `true-client-ip`, `fly-client-ip`, `x-real-ip` |
 * | `REDLIMIT_KEY_SECRET` | HMAC secret for `@Attempt` keys, at least 16 characters; set but empty or blank is an error (never shown in errors) |
 * | `REDLIMIT_RECEIPT_SECRET` | signs receipts (`receiptSecret`), at least 16 characters |
 * | `REDLIMIT_DEVICES_SECRET` | signs trusted-device tokens (`devices.secret`), at least 16 characters; turns `devices` on |
 * | `REDLIMIT_DEVICES_TTL` | how long a device token lasts (`devices.ttl`), e.g. `30d`; turns `devices` on |
 * | `REDLIMIT_ALLOW_IPS` | comma-separated addresses, CIDR ranges, `loopback`, `private`, `linklocal`: `allow.ips` |
 * | `REDLIMIT_DENY_IPS` | the same, for `deny.ips` |
 * | `REDLIMIT_SHADOW` | `true` or `false`: shadow mode for every policy that sets none |
 * | `REDLIMIT_REFUSAL_CACHE` | `true`, `false`, or the most refusals kept (whole number ≥ 1) |
 *
 * @example
 * RedlimitModule.forRootAsync({
 *   imports: [ConfigModule],
 *   inject: [ConfigService],
 *   useFactory: (config: ConfigService) =>
 *     redlimitOptionsFromEnv(config, { policies: { login: { algorithm: 'fixed-window', limit: 10, window: '15m' } } }),
 * });
 */
export function redlimitOptionsFromEnv(
  source: EnvSource = process.env,
  defaults: RedlimitModuleOptions = {},
): RedlimitModuleOptions {
  const read = reader(source);
  const options: { -readonly [K in keyof RedlimitModuleOptions]: RedlimitModuleOptions[K] } = {
    ...defaults,
  };

  const urlVariable = read('REDLIMIT_REDIS_URL') !== undefined ? 'REDLIMIT_REDIS_URL' : 'REDIS_URL';
  const url = read(urlVariable);
  if (url !== undefined) {
    if (!/^rediss?:\/\/[^\s]*$/.test(url)) {
      throw new RedlimitConfigError(
        urlVariable,
        maskUrl(url),
        'expected a redis:// or rediss:// URL',
      );
    }
    options.redis = url;
  }
  const topology = redisTopology(read);
  if (topology !== undefined) options.redis = topology;

  const prefix = read('REDLIMIT_PREFIX');
  if (prefix !== undefined) options.prefix = prefix;

  const failMode = read('REDLIMIT_FAIL_MODE');
  if (failMode !== undefined) {
    if (!FAIL_MODES.includes(failMode as FailMode)) {
      throw new RedlimitConfigError(
        'REDLIMIT_FAIL_MODE',
        failMode,
        "expected 'closed', 'open' or 'memory'",
      );
    }
    options.failMode = failMode as FailMode;
  }

  const timeout = read('REDLIMIT_TIMEOUT_MS');
  if (timeout !== undefined) {
    const ms = Number(timeout);
    if (!/^\d+$/.test(timeout) || !Number.isSafeInteger(ms) || ms < 1) {
      throw new RedlimitConfigError(
        'REDLIMIT_TIMEOUT_MS',
        timeout,
        'expected a whole number of milliseconds ≥ 1',
      );
    }
    options.timeoutMs = ms;
  }

  const spec = read('REDLIMIT_POLICIES');
  if (spec !== undefined) {
    try {
      options.policies = { ...defaults.policies, ...parsePolicySpec(spec) };
    } catch (error) {
      throw new RedlimitConfigError('REDLIMIT_POLICIES', spec, (error as Error).message);
    }
  }

  const defaultPolicy = read('REDLIMIT_DEFAULT_POLICY');
  if (defaultPolicy !== undefined) {
    if (!Object.prototype.hasOwnProperty.call(options.policies ?? {}, defaultPolicy)) {
      const known = Object.keys(options.policies ?? {}).join(', ') || 'none';
      throw new RedlimitConfigError(
        'REDLIMIT_DEFAULT_POLICY',
        defaultPolicy,
        `no such policy (known: ${known})`,
      );
    }
    options.defaultPolicy = defaultPolicy;
  }

  const headers = read('REDLIMIT_HEADERS');
  if (headers !== undefined) options.headers = headerStyle(headers);

  const clientIp: { -readonly [K in keyof ClientIpOptions]: ClientIpOptions[K] } = {
    ...defaults.clientIp,
  };
  const proxies = read('REDLIMIT_TRUSTED_PROXIES');
  if (proxies !== undefined) {
    clientIp.trustedProxies = proxies
      .split(',')
      .map((p) => p.trim())
      .filter((p) => p !== '');
    validateClientIp('REDLIMIT_TRUSTED_PROXIES', proxies, clientIp);
  }
  const subnet = read('REDLIMIT_IPV6_SUBNET');
  if (subnet !== undefined) {
    clientIp.ipv6Subnet = /^\d+$/.test(subnet) ? Number(subnet) : NaN;
    validateClientIp('REDLIMIT_IPV6_SUBNET', subnet, clientIp);
  }
  const ipHeader = read('REDLIMIT_CLIENT_IP_HEADER');
  if (ipHeader !== undefined) {
    clientIp.header = ipHeader.toLowerCase() as ClientIpHeader;
    validateClientIp('REDLIMIT_CLIENT_IP_HEADER', ipHeader, clientIp);
  }
  const hops = read('REDLIMIT_TRUSTED_HOPS');
  if (hops !== undefined) {
    clientIp.trustedHops = /^\d+$/.test(hops) ? Number(hops) : NaN;
    validateClientIp('REDLIMIT_TRUSTED_HOPS', hops, clientIp);
  }
  if (
    proxies !== undefined ||
    subnet !== undefined ||
    ipHeader !== undefined ||
    hops !== undefined
  ) {
    options.clientIp = clientIp;
  }

  const secret = secretVariable(
    source,
    read,
    'REDLIMIT_KEY_SECRET',
    'unset it to go without a secret, or give at least 16 characters',
  );
  if (secret !== undefined) options.keySecret = secret;

  const receiptSecret = secretVariable(
    source,
    read,
    'REDLIMIT_RECEIPT_SECRET',
    'unset it to go without signed receipts, or give at least 16 characters',
  );
  if (receiptSecret !== undefined) options.receiptSecret = receiptSecret;

  // Trusted devices: either variable turns them on (the secret defaults to the key secret).
  const deviceSecret = secretVariable(
    source,
    read,
    'REDLIMIT_DEVICES_SECRET',
    'unset it to sign device tokens with the key secret',
  );
  const deviceTtl = read('REDLIMIT_DEVICES_TTL');
  if (deviceTtl !== undefined) {
    try {
      parseDuration(deviceTtl, 'REDLIMIT_DEVICES_TTL');
    } catch {
      throw new RedlimitConfigError(
        'REDLIMIT_DEVICES_TTL',
        deviceTtl,
        "expected a duration such as '30d' or '12h'",
      );
    }
  }
  if (deviceSecret !== undefined || deviceTtl !== undefined) {
    options.devices = {
      ...defaults.devices,
      ...(deviceSecret !== undefined && { secret: deviceSecret }),
      ...(deviceTtl !== undefined && { ttl: deviceTtl }),
    };
  }

  // Replaces the defaults' ips, keeps their apiKeys and userAgents.
  const allowIps = read('REDLIMIT_ALLOW_IPS');
  if (allowIps !== undefined) {
    options.allow = {
      ...defaults.allow,
      ips: ipEntries('REDLIMIT_ALLOW_IPS', allowIps, 'allow.ips'),
    };
  }
  const denyIps = read('REDLIMIT_DENY_IPS');
  if (denyIps !== undefined) {
    options.deny = { ...defaults.deny, ips: ipEntries('REDLIMIT_DENY_IPS', denyIps, 'deny.ips') };
  }
  const shadow = read('REDLIMIT_SHADOW');
  if (shadow !== undefined) options.shadow = flag('REDLIMIT_SHADOW', shadow);
  const refusalCache = read('REDLIMIT_REFUSAL_CACHE');
  if (refusalCache !== undefined) {
    if (/^\d+$/.test(refusalCache)) {
      const maxKeys = Number(refusalCache);
      if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
        throw new RedlimitConfigError(
          'REDLIMIT_REFUSAL_CACHE',
          refusalCache,
          'expected true, false or a whole number of at least 1',
        );
      }
      options.refusalCache = { maxKeys };
    } else {
      options.refusalCache = flag('REDLIMIT_REFUSAL_CACHE', refusalCache);
    }
  }
  return options;
}

/**
 * `redis: { nodes }` from REDLIMIT_REDIS_CLUSTER_NODES, or `redis: { sentinels, name }` from
 * REDLIMIT_REDIS_SENTINELS and REDLIMIT_REDIS_SENTINEL_NAME. Each wins over the generic
 * REDIS_URL (often set for another client of the app), never over REDLIMIT_REDIS_URL or the
 * other: two Redis named for redlimit is an error.
 */
function redisTopology(
  read: (name: string) => string | undefined,
): RedlimitModuleOptions['redis'] | undefined {
  const url = read('REDLIMIT_REDIS_URL');
  const nodes = read('REDLIMIT_REDIS_CLUSTER_NODES');
  const sentinels = read('REDLIMIT_REDIS_SENTINELS');
  const name = read('REDLIMIT_REDIS_SENTINEL_NAME');
  const alone = (variable: string, value: string, others: Record<string, unknown>): void => {
    const other = Object.keys(others).find((key) => others[key] !== undefined);
    if (other !== undefined) {
      throw new RedlimitConfigError(variable, value, `${other} is set too; set one of them`);
    }
  };
  const addresses = (variable: string, value: string) => {
    try {
      return parseHostPortList(value);
    } catch (error) {
      throw new RedlimitConfigError(variable, value, (error as Error).message);
    }
  };
  if (nodes !== undefined) {
    alone('REDLIMIT_REDIS_CLUSTER_NODES', nodes, {
      REDLIMIT_REDIS_URL: url,
      REDLIMIT_REDIS_SENTINELS: sentinels,
    });
    return { nodes: addresses('REDLIMIT_REDIS_CLUSTER_NODES', nodes) };
  }
  if (sentinels === undefined) {
    if (name !== undefined) {
      throw new RedlimitConfigError(
        'REDLIMIT_REDIS_SENTINEL_NAME',
        name,
        'set REDLIMIT_REDIS_SENTINELS too (host:port of the sentinels)',
      );
    }
    return undefined;
  }
  alone('REDLIMIT_REDIS_SENTINELS', sentinels, { REDLIMIT_REDIS_URL: url });
  const parsed = addresses('REDLIMIT_REDIS_SENTINELS', sentinels);
  if (name === undefined) {
    throw new RedlimitConfigError(
      'REDLIMIT_REDIS_SENTINEL_NAME',
      '',
      "required with REDLIMIT_REDIS_SENTINELS: the master's name in Sentinel",
    );
  }
  return { sentinels: parsed, name };
}

/** `true` or `false` (any case). */
function flag(variable: string, value: string): boolean {
  const lower = value.toLowerCase();
  if (lower === 'true') return true;
  if (lower === 'false') return false;
  throw new RedlimitConfigError(variable, value, 'expected true or false');
}

/** A comma-separated list of addresses, ranges and names, each checked. */
function ipEntries(variable: string, value: string, option: string): string[] {
  const entries = value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  try {
    ipRangeList(entries, option);
  } catch (error) {
    throw new RedlimitConfigError(variable, value, (error as Error).message);
  }
  return entries;
}

/** Reads a variable as a trimmed string; unset and empty both mean "not set". */
/** A variable's value as the source holds it, untrimmed. */
function rawValue(source: EnvSource, name: string): unknown {
  return typeof (source as { get?: unknown }).get === 'function'
    ? (source as { get(name: string): unknown }).get(name)
    : (source as Readonly<Record<string, unknown>>)[name];
}

function isBlankString(value: unknown): boolean {
  return typeof value === 'string' && value.trim() === '';
}

function reader(source: EnvSource): (name: string) => string | undefined {
  return (name) => {
    const value = rawValue(source, name);
    if (value === undefined || value === null) return undefined;
    const text = (typeof value === 'string' ? value : JSON.stringify(value)).trim();
    return text === '' ? undefined : text;
  };
}

function headerStyle(value: string): RateLimitHeaderStyle {
  const style = value.toLowerCase();
  if (style === 'ietf' || style === 'legacy' || style === 'both') return style;
  if (style === 'none' || style === 'false') return false;
  throw new RedlimitConfigError(
    'REDLIMIT_HEADERS',
    value,
    "expected 'ietf', 'legacy', 'both' or 'none'",
  );
}

function validateClientIp(variable: string, value: string, options: ClientIpOptions): void {
  try {
    createClientIpResolver(options);
  } catch (error) {
    throw new RedlimitConfigError(variable, value, (error as Error).message);
  }
}

/**
 * A secret variable: at least 16 characters (never shown in errors). Empty means unset for every
 * other variable; a secret set to '' or blanks is a mistake that would silently go without it
 * (plain SHA-256 keys, tokens signed with another secret): refused, as the module option is.
 */
function secretVariable(
  source: EnvSource,
  read: (name: string) => string | undefined,
  name: string,
  blankAdvice: string,
): string | undefined {
  const secret = read(name);
  if (secret === undefined && isBlankString(rawValue(source, name))) {
    throw new RedlimitConfigError(name, '***', `it is set but empty or blank; ${blankAdvice}`);
  }
  if (secret !== undefined && secret.length < 16) {
    throw new RedlimitConfigError(name, '***', 'expected at least 16 characters');
  }
  return secret;
}
