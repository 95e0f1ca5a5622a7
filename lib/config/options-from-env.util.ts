import type { EnvOptions } from './env-parsers.util';
import { ENV_VARIABLES } from './env-variables.table';
import { RedlimitConfigError } from './redlimit-config.error';
import type { RedlimitModuleOptions } from './redlimit-options.interface';

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
 * | `REDLIMIT_IPV6_SUBNET` | 1–128 |
 * | `REDLIMIT_CLIENT_IP_HEADER` | `x-forwarded-for`, `forwarded`, `cf-connecting-ip`, `true-client-ip`, `fly-client-ip`, `x-real-ip` |
 * | `REDLIMIT_TRUSTED_HOPS` | whole number ≥ 1: how many proxies are in front of the app (`clientIp.trustedHops`) |
 * | `REDLIMIT_KEY_SECRET` | HMAC secret for `@Attempt` keys, at least 16 characters; set but empty or blank is an error (never shown in errors) |
 * | `REDLIMIT_RECEIPT_SECRET` | signs receipts (`receiptSecret`), at least 16 characters |
 * | `REDLIMIT_DEVICES_SECRET` | signs trusted-device tokens (`devices.secret`), at least 16 characters; turns `devices` on |
 * | `REDLIMIT_DEVICES_TTL` | how long a device token lasts (`devices.ttl`), e.g. `30d`; turns `devices` on |
 * | `REDLIMIT_ALLOW_IPS` | comma-separated addresses, CIDR ranges, `loopback`, `private`, `linklocal`: `allow.ips` |
 * | `REDLIMIT_DENY_IPS` | the same, for `deny.ips` |
 * | `REDLIMIT_SHADOW` | `true` or `false`: shadow mode for every policy that sets none |
 * | `REDLIMIT_REFUSAL_CACHE` | `true`, `false`, or the most refusals kept (whole number ≥ 1) |
 * | `REDLIMIT_OUTCOME_MARKERS` | `true` or `false`: outcome markers for lost replies (`outcomeMarkers`) |
 * | `REDLIMIT_FLEET_BEAT_MS` | whole ms, 100–60000: how often the process beats in its fleet for `failMode: 'memory'` |
 * | `REDLIMIT_FLEET_TTL_MS` | whole ms, 3 beats to one day: how long a process stays in its fleet after its latest beat |
 * | `REDLIMIT_OVERRIDES_POLL_MS` | whole ms, 50–60000: how often each process checks for changed live limits (`overridesPollMs`) |
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
  const options: EnvOptions = { ...defaults };
  for (const row of ENV_VARIABLES) {
    const variable =
      row.fallback !== undefined && read(row.name) === undefined ? row.fallback : row.name;
    const value = read(variable);
    if (value === undefined) {
      // Empty means unset for every other variable; a secret set to '' or blanks is a mistake
      // that would silently go without it (plain SHA-256 keys, tokens signed with another
      // secret): refused, as the module option is.
      if (row.secret !== undefined && isBlankString(rawValue(source, variable))) {
        throw new RedlimitConfigError(
          variable,
          '***',
          `it is set but empty or blank; ${row.secret.blankAdvice}`,
        );
      }
      continue;
    }
    const shown = row.secret !== undefined ? '***' : (row.show?.(value) ?? value);
    row.apply(value, {
      variable,
      read,
      defaults,
      options,
      fail: (reason) => {
        throw new RedlimitConfigError(variable, shown, reason);
      },
    });
  }
  return options;
}

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
