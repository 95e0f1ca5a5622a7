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

/** Module options while the environment is applied to them. */
export type EnvOptions = { -readonly [K in keyof RedlimitModuleOptions]: RedlimitModuleOptions[K] };

/** What a row sees while its variable is applied. */
export interface EnvContext {
  /** The variable read: the row's `name`, or its `fallback` when only that one is set. */
  readonly variable: string;
  /** Another variable, trimmed; `undefined` when it is unset, empty or blank. */
  readonly read: (name: string) => string | undefined;
  /** Throws a {@link RedlimitConfigError} naming the variable, its value as the row shows it, and `reason`. */
  readonly fail: (reason: string) => never;
  /** The caller's defaults, which the variables are applied on top of. */
  readonly defaults: RedlimitModuleOptions;
  /** The options so far: the defaults and the rows above this one. */
  readonly options: EnvOptions;
}

/** One environment variable of `redlimitOptionsFromEnv`: a row of {@link ENV_VARIABLES}. */
export interface EnvVariable {
  /** The variable. */
  readonly name: string;
  /** Read instead when `name` is unset (`REDIS_URL` for `REDLIMIT_REDIS_URL`). */
  readonly fallback?: string;
  /** The one-line meaning shown in the docs (the JSDoc of `redlimitOptionsFromEnv`). */
  readonly meaning: string;
  /**
   * A secret: shown as `***` in errors, and set but empty or blank is an error (every other
   * variable reads as unset then) ending with this advice.
   */
  readonly secret?: { readonly blankAdvice: string };
  /** How the value is shown in errors, when not as it is (a URL with its password masked). */
  readonly show?: (value: string) => string;
  /** Parses and validates a value that is set, and lands it in `context.options`. */
  apply(value: string, context: EnvContext): void;
}

/** A row from its parse step and its landing step. */
function row<T>(spec: {
  readonly name: string;
  readonly fallback?: string;
  readonly meaning: string;
  readonly secret?: { readonly blankAdvice: string };
  readonly show?: (value: string) => string;
  readonly parse: (value: string, context: EnvContext) => T;
  readonly land: (options: EnvOptions, parsed: NoInfer<T>, context: EnvContext) => void;
}): EnvVariable {
  const { parse, land, ...variable } = spec;
  return {
    ...variable,
    apply: (value, context) => land(context.options, parse(value, context), context),
  };
}

type Parser<T> = (value: string, context: EnvContext) => T;

/** The value as it is. */
const text: Parser<string> = (value) => value;

/** Runs `parse`; an error it throws becomes the variable's, with its message as the reason. */
function checked<T>(context: EnvContext, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    return context.fail((error as Error).message);
  }
}

/** Digits only, a safe integer ≥ 1; else `reason`. */
function wholeNumber(reason: string): Parser<number> {
  return (value, context) => {
    const number = Number(value);
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(number) || number < 1) context.fail(reason);
    return number;
  };
}

/** `true` or `false`, any case. */
const flag: Parser<boolean> = (value, context) => {
  const lower = value.toLowerCase();
  if (lower === 'true') return true;
  if (lower === 'false') return false;
  return context.fail('expected true or false');
};

/** One of `allowed` (lower-cased first with `ignoreCase`); else `reason`. */
function oneOf<T extends string>(
  allowed: readonly T[],
  reason: string,
  ignoreCase = false,
): Parser<T> {
  return (value, context) => {
    const word = ignoreCase ? value.toLowerCase() : value;
    return allowed.includes(word as T) ? (word as T) : context.fail(reason);
  };
}

/** A duration such as `30d`, kept as written; else `reason`. */
function duration(reason: string): Parser<string> {
  return (value, context) => {
    try {
      parseDuration(value, context.variable);
    } catch {
      context.fail(reason);
    }
    return value;
  };
}

/** Comma-separated addresses, ranges and names, each checked as the module option `option`. */
function ipRanges(option: string): Parser<string[]> {
  return (value, context) => {
    const entries = list(value);
    checked(context, () => ipRangeList(entries, option));
    return entries;
  };
}

/** A secret of at least 16 characters. */
const secretText: Parser<string> = (value, context) =>
  value.length < 16 ? context.fail('expected at least 16 characters') : value;

/** `host:port,host:port`. */
const hostPorts: Parser<ReturnType<typeof parseHostPortList>> = (value, context) =>
  checked(context, () => parseHostPortList(value));

/**
 * The options' `clientIp` with `field` set from the value, checked as a whole as the module
 * checks it (so a combination that cannot work names the variable that completed it).
 */
function clientIpField<K extends keyof ClientIpOptions>(
  field: K,
  toValue: (value: string) => ClientIpOptions[K],
): Parser<ClientIpOptions> {
  return (value, context) => {
    const clientIp: ClientIpOptions = { ...context.options.clientIp, [field]: toValue(value) };
    checked(context, () => createClientIpResolver(clientIp));
    return clientIp;
  };
}

/** Fails when one of `others` is set too: two Redis named for redlimit. */
function alone(context: EnvContext, others: readonly string[]): void {
  const other = others.find((name) => context.read(name) !== undefined);
  if (other !== undefined) context.fail(`${other} is set too; set one of them`);
}

function list(value: string): string[] {
  return value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}

const digitsOrNaN = (value: string): number => (/^\d+$/.test(value) ? Number(value) : NaN);

const REDIS_URL_VARIABLE = 'REDLIMIT_REDIS_URL';
const SENTINELS = 'REDLIMIT_REDIS_SENTINELS';
const SENTINEL_NAME = 'REDLIMIT_REDIS_SENTINEL_NAME';
const CLUSTER_NODES = 'REDLIMIT_REDIS_CLUSTER_NODES';

/**
 * Every variable `redlimitOptionsFromEnv` reads, applied in this order to the defaults
 * (a row that reads the options sees the rows above it). Internal: the JSDoc table of
 * `redlimitOptionsFromEnv` and docs/nest.md list exactly these, checked by
 * test/unit/env-variables.spec.ts.
 */
export const ENV_VARIABLES: readonly EnvVariable[] = [
  row({
    name: REDIS_URL_VARIABLE,
    fallback: 'REDIS_URL',
    meaning: '`redis://` or `rediss://` URL',
    show: maskUrl,
    parse: (value, context) =>
      /^rediss?:\/\/[^\s]*$/.test(value)
        ? value
        : context.fail('expected a redis:// or rediss:// URL'),
    land: (options, url) => {
      options.redis = url;
    },
  }),
  // Sentinel and Cluster win over REDIS_URL (often set for another client of the app), never
  // over REDLIMIT_REDIS_URL or each other: two Redis named for redlimit is an error.
  row({
    name: SENTINELS,
    meaning: '`host:port,host:port`: the sentinels to ask (wins over `REDIS_URL`)',
    parse: (value, context) => {
      if (context.read(CLUSTER_NODES) !== undefined) return undefined; // its row says why
      alone(context, [REDIS_URL_VARIABLE]);
      const sentinels = hostPorts(value, context);
      const name = context.read(SENTINEL_NAME);
      if (name === undefined) {
        throw new RedlimitConfigError(
          SENTINEL_NAME,
          '',
          `required with ${SENTINELS}: the master's name in Sentinel`,
        );
      }
      return { sentinels, name };
    },
    land: (options, redis) => {
      if (redis !== undefined) options.redis = redis;
    },
  }),
  row({
    name: SENTINEL_NAME,
    meaning: "the master's name in Sentinel (required with the above)",
    parse: (_value, context) => {
      if (context.read(SENTINELS) === undefined && context.read(CLUSTER_NODES) === undefined) {
        context.fail(`set ${SENTINELS} too (host:port of the sentinels)`);
      }
    },
    land: () => {}, // lands with REDLIMIT_REDIS_SENTINELS, as `redis.name`
  }),
  row({
    name: CLUSTER_NODES,
    meaning: '`host:port,host:port`: startup nodes of a Redis Cluster (wins over `REDIS_URL`)',
    parse: (value, context) => {
      alone(context, [REDIS_URL_VARIABLE, SENTINELS]);
      return { nodes: hostPorts(value, context) };
    },
    land: (options, redis) => {
      options.redis = redis;
    },
  }),
  row({
    name: 'REDLIMIT_PREFIX',
    meaning: 'key prefix',
    parse: text,
    land: (options, prefix) => {
      options.prefix = prefix;
    },
  }),
  row<FailMode>({
    name: 'REDLIMIT_FAIL_MODE',
    meaning: '`closed`, `open` or `memory`',
    parse: oneOf(FAIL_MODES, "expected 'closed', 'open' or 'memory'"),
    land: (options, failMode) => {
      options.failMode = failMode;
    },
  }),
  row({
    name: 'REDLIMIT_TIMEOUT_MS',
    meaning: 'whole ms ≥ 1',
    parse: wholeNumber('expected a whole number of milliseconds ≥ 1'),
    land: (options, timeoutMs) => {
      options.timeoutMs = timeoutMs;
    },
  }),
  row({
    name: 'REDLIMIT_POLICIES',
    meaning: '`login=fixed-window:10/15m,api=sliding-window:100/1m` (see {@link parsePolicySpec})',
    parse: (value, context) => checked(context, () => parsePolicySpec(value)),
    land: (options, policies, { defaults }) => {
      options.policies = { ...defaults.policies, ...policies }; // merged by name
    },
  }),
  row({
    name: 'REDLIMIT_DEFAULT_POLICY',
    meaning: 'a policy name',
    parse: (value, { options, fail }) => {
      // Checked against the policies merged above.
      if (!Object.prototype.hasOwnProperty.call(options.policies ?? {}, value)) {
        fail(`no such policy (known: ${Object.keys(options.policies ?? {}).join(', ') || 'none'})`);
      }
      return value;
    },
    land: (options, name) => {
      options.defaultPolicy = name;
    },
  }),
  row({
    name: 'REDLIMIT_HEADERS',
    meaning: '`ietf`, `legacy`, `both` or `none`',
    parse: oneOf(
      ['ietf', 'legacy', 'both', 'none', 'false'],
      "expected 'ietf', 'legacy', 'both' or 'none'",
      true,
    ),
    land: (options, style) => {
      options.headers =
        style === 'none' || style === 'false' ? false : (style as RateLimitHeaderStyle);
    },
  }),
  // The client-IP rows merge over defaults.clientIp, each checked with those above it.
  row<ClientIpOptions>({
    name: 'REDLIMIT_TRUSTED_PROXIES',
    meaning: 'comma-separated addresses, CIDR ranges, `loopback`, `private`, `linklocal`, `unix`',
    parse: clientIpField('trustedProxies', list),
    land: (options, clientIp) => {
      options.clientIp = clientIp;
    },
  }),
  row<ClientIpOptions>({
    name: 'REDLIMIT_IPV6_SUBNET',
    meaning: '1–128',
    parse: clientIpField('ipv6Subnet', digitsOrNaN),
    land: (options, clientIp) => {
      options.clientIp = clientIp;
    },
  }),
  row<ClientIpOptions>({
    name: 'REDLIMIT_CLIENT_IP_HEADER',
    meaning:
      '`x-forwarded-for`, `forwarded`, `cf-connecting-ip`, `true-client-ip`, `fly-client-ip`, `x-real-ip`',
    parse: clientIpField('header', (value) => value.toLowerCase() as ClientIpHeader),
    land: (options, clientIp) => {
      options.clientIp = clientIp;
    },
  }),
  row<ClientIpOptions>({
    name: 'REDLIMIT_TRUSTED_HOPS',
    meaning: 'whole number ≥ 1: how many proxies are in front of the app (`clientIp.trustedHops`)',
    parse: clientIpField('trustedHops', digitsOrNaN),
    land: (options, clientIp) => {
      options.clientIp = clientIp;
    },
  }),
  row({
    name: 'REDLIMIT_KEY_SECRET',
    meaning:
      'HMAC secret for `@Attempt` keys, at least 16 characters; set but empty or blank is an error (never shown in errors)',
    secret: { blankAdvice: 'unset it to go without a secret, or give at least 16 characters' },
    parse: secretText,
    land: (options, secret) => {
      options.keySecret = secret;
    },
  }),
  row({
    name: 'REDLIMIT_RECEIPT_SECRET',
    meaning: 'signs receipts (`receiptSecret`), at least 16 characters',
    secret: {
      blankAdvice: 'unset it to go without signed receipts, or give at least 16 characters',
    },
    parse: secretText,
    land: (options, secret) => {
      options.receiptSecret = secret;
    },
  }),
  // Trusted devices: either variable turns them on (the secret defaults to the key secret).
  row({
    name: 'REDLIMIT_DEVICES_SECRET',
    meaning:
      'signs trusted-device tokens (`devices.secret`), at least 16 characters; turns `devices` on',
    secret: { blankAdvice: 'unset it to sign device tokens with the key secret' },
    parse: secretText,
    land: (options, secret) => {
      options.devices = { ...options.devices, secret };
    },
  }),
  row({
    name: 'REDLIMIT_DEVICES_TTL',
    meaning: 'how long a device token lasts (`devices.ttl`), e.g. `30d`; turns `devices` on',
    parse: duration("expected a duration such as '30d' or '12h'"),
    land: (options, ttl) => {
      options.devices = { ...options.devices, ttl };
    },
  }),
  // The access lists replace the defaults' ips and keep their apiKeys and userAgents.
  row({
    name: 'REDLIMIT_ALLOW_IPS',
    meaning:
      'comma-separated addresses, CIDR ranges, `loopback`, `private`, `linklocal`: `allow.ips`',
    parse: ipRanges('allow.ips'),
    land: (options, ips, { defaults }) => {
      options.allow = { ...defaults.allow, ips };
    },
  }),
  row({
    name: 'REDLIMIT_DENY_IPS',
    meaning: 'the same, for `deny.ips`',
    parse: ipRanges('deny.ips'),
    land: (options, ips, { defaults }) => {
      options.deny = { ...defaults.deny, ips };
    },
  }),
  row({
    name: 'REDLIMIT_SHADOW',
    meaning: '`true` or `false`: shadow mode for every policy that sets none',
    parse: flag,
    land: (options, shadow) => {
      options.shadow = shadow;
    },
  }),
  row({
    name: 'REDLIMIT_REFUSAL_CACHE',
    meaning: '`true`, `false`, or the most refusals kept (whole number ≥ 1)',
    parse: (value, context) =>
      /^\d+$/.test(value)
        ? {
            maxKeys: wholeNumber('expected true, false or a whole number of at least 1')(
              value,
              context,
            ),
          }
        : flag(value, context),
    land: (options, refusalCache) => {
      options.refusalCache = refusalCache;
    },
  }),
];

/**
 * Every variable name of {@link ENV_VARIABLES}, fallbacks included (`REDIS_URL`), in table order.
 */
export const ENV_VARIABLE_NAMES: readonly string[] = ENV_VARIABLES.flatMap((variable) =>
  variable.fallback === undefined ? [variable.name] : [variable.name, variable.fallback],
);
