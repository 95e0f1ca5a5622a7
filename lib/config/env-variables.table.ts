import { FAIL_MODES, type FailMode } from '../core/policy';
import {
  alone,
  checked,
  clientIpField,
  digitsOrNaN,
  duration,
  type EnvContext,
  type EnvOptions,
  flag,
  hostPorts,
  ipRanges,
  list,
  oneOf,
  secretText,
  set,
  text,
  wholeNumber,
  wholeNumberIn,
} from './env-parsers.util';
import { maskUrl } from './mask-url.util';
import { parsePolicySpec } from './policy-spec.util';
import { RedlimitConfigError } from './redlimit-config.error';
import type { ClientIpHeader, ClientIpOptions } from './redlimit-options.interface';

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

const REDIS_URL_VARIABLE = 'REDLIMIT_REDIS_URL';
const SENTINELS = 'REDLIMIT_REDIS_SENTINELS';
const SENTINEL_NAME = 'REDLIMIT_REDIS_SENTINEL_NAME';
const CLUSTER_NODES = 'REDLIMIT_REDIS_CLUSTER_NODES';

/** `REDLIMIT_HEADERS`: the header styles, and `none` or `false` for no headers. */
const HEADER_WORDS = ['ietf', 'legacy', 'both', 'none', 'false'] as const;
const refusalsKept = wholeNumber('expected true, false or a whole number of at least 1');

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
    land: set('redis'),
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
    land: set('redis'),
  }),
  row({
    name: 'REDLIMIT_PREFIX',
    meaning: 'key prefix',
    parse: text,
    land: set('prefix'),
  }),
  row<FailMode>({
    name: 'REDLIMIT_FAIL_MODE',
    meaning: '`closed`, `open` or `memory`',
    parse: oneOf(FAIL_MODES, "expected 'closed', 'open' or 'memory'"),
    land: set('failMode'),
  }),
  row({
    name: 'REDLIMIT_TIMEOUT_MS',
    meaning: 'whole ms ≥ 1',
    parse: wholeNumber('expected a whole number of milliseconds ≥ 1'),
    land: set('timeoutMs'),
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
    land: set('defaultPolicy'),
  }),
  row<(typeof HEADER_WORDS)[number]>({
    name: 'REDLIMIT_HEADERS',
    meaning: '`ietf`, `legacy`, `both` or `none`',
    parse: oneOf(HEADER_WORDS, "expected 'ietf', 'legacy', 'both' or 'none'", true),
    land: (options, style) => {
      options.headers = style === 'none' || style === 'false' ? false : style;
    },
  }),
  // The client-IP rows merge over defaults.clientIp, each checked with those above it.
  row<ClientIpOptions>({
    name: 'REDLIMIT_TRUSTED_PROXIES',
    meaning: 'comma-separated addresses, CIDR ranges, `loopback`, `private`, `linklocal`, `unix`',
    parse: clientIpField('trustedProxies', list),
    land: set('clientIp'),
  }),
  row<ClientIpOptions>({
    name: 'REDLIMIT_IPV6_SUBNET',
    meaning: '1–128',
    parse: clientIpField('ipv6Subnet', digitsOrNaN),
    land: set('clientIp'),
  }),
  row<ClientIpOptions>({
    name: 'REDLIMIT_CLIENT_IP_HEADER',
    meaning:
      '`x-forwarded-for`, `forwarded`, `cf-connecting-ip`, `true-client-ip`, `fly-client-ip`, `x-real-ip`',
    parse: clientIpField('header', (value) => value.toLowerCase() as ClientIpHeader),
    land: set('clientIp'),
  }),
  row<ClientIpOptions>({
    name: 'REDLIMIT_TRUSTED_HOPS',
    meaning: 'whole number ≥ 1: how many proxies are in front of the app (`clientIp.trustedHops`)',
    parse: clientIpField('trustedHops', digitsOrNaN),
    land: set('clientIp'),
  }),
  row({
    name: 'REDLIMIT_KEY_SECRET',
    meaning:
      'HMAC secret for `@Attempt` keys, at least 16 characters; set but empty or blank is an error (never shown in errors)',
    secret: { blankAdvice: 'unset it to go without a secret, or give at least 16 characters' },
    parse: secretText,
    land: set('keySecret'),
  }),
  row({
    name: 'REDLIMIT_RECEIPT_SECRET',
    meaning: 'signs receipts (`receiptSecret`), at least 16 characters',
    secret: {
      blankAdvice: 'unset it to go without signed receipts, or give at least 16 characters',
    },
    parse: secretText,
    land: set('receiptSecret'),
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
    land: set('shadow'),
  }),
  row({
    name: 'REDLIMIT_REFUSAL_CACHE',
    meaning: '`true`, `false`, or the most refusals kept (whole number ≥ 1)',
    parse: (value, context) =>
      /^\d+$/.test(value) ? { maxKeys: refusalsKept(value, context) } : flag(value, context),
    land: set('refusalCache'),
  }),
  row({
    name: 'REDLIMIT_OUTCOME_MARKERS',
    meaning: '`true` or `false`: outcome markers for lost replies (`outcomeMarkers`)',
    parse: flag,
    land: set('outcomeMarkers'),
  }),
  row({
    name: 'REDLIMIT_FLEET_BEAT_MS',
    meaning:
      "whole ms, 100–60000: how often the process beats in its fleet for `failMode: 'memory'`",
    parse: wholeNumberIn(100, 60_000, 'expected a whole number of milliseconds from 100 to 60000'),
    land: set('fleetBeatMs'),
  }),
  row({
    name: 'REDLIMIT_FLEET_TTL_MS',
    meaning:
      'whole ms, 3 beats to one day: how long a process stays in its fleet after its latest beat',
    parse: wholeNumberIn(
      300,
      86_400_000,
      'expected a whole number of milliseconds from 300 (3 beats of 100) to 86400000 (one day)',
    ),
    land: set('fleetTtlMs'),
  }),
  row({
    name: 'REDLIMIT_OVERRIDES_POLL_MS',
    meaning:
      'whole ms, 50–60000: how often each process checks for changed live limits (`overridesPollMs`)',
    parse: wholeNumberIn(50, 60_000, 'expected a whole number of milliseconds from 50 to 60000'),
    land: set('overridesPollMs'),
  }),
];

/**
 * Every variable name of {@link ENV_VARIABLES}, fallbacks included (`REDIS_URL`), in table order.
 */
export const ENV_VARIABLE_NAMES: readonly string[] = ENV_VARIABLES.flatMap((variable) =>
  variable.fallback === undefined ? [variable.name] : [variable.name, variable.fallback],
);
