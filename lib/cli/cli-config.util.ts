import type { FailMode } from '../core/policy';
import { type ClientIpResolver, createClientIpResolver } from '../nest/client-ip.util';
import { type EnvSource, redlimitOptionsFromEnv } from '../nest/options-from-env.util';
import { parsePolicySpec } from '../nest/policy-spec.util';
import type { PolicyDefinition } from '../nest/redlimit-options.interface';
import type { CliArgs } from './cli-args.util';
import { usageError } from './cli.error';

/**
 * What the `redlimit` command works with: the module's environment configuration (read by the
 * same {@link redlimitOptionsFromEnv} as the app), with command-line overrides applied.
 */
export interface CliConfig {
  /** `--redis`, else `REDLIMIT_REDIS_URL`, else `REDIS_URL`. */
  readonly redisUrl?: string;
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

/** The module's default key prefix. */
const DEFAULT_PREFIX = 'rl:';

/**
 * Reads the configuration from `env` and applies `--redis`, `--prefix` and `--policies`.
 *
 * @throws CliError (exit code 2) naming the variable or option whose value is wrong
 * @example
 * cliConfig(parseCliArgs(['policies']), process.env).policies; // { login: { … } }
 */
export function cliConfig(args: CliArgs, env: EnvSource): CliConfig {
  const options = fromEnv(() => redlimitOptionsFromEnv(env));
  let redisUrl = typeof options.redis === 'string' ? options.redis : undefined;
  if (args.redis !== undefined) {
    fromEnv(() => redlimitOptionsFromEnv({ REDLIMIT_REDIS_URL: args.redis }), '--redis');
    redisUrl = args.redis;
  }
  let policies: Record<string, PolicyDefinition> = { ...options.policies };
  if (args.policies !== undefined) {
    try {
      policies = { ...policies, ...parsePolicySpec(args.policies) };
    } catch (error) {
      throw usageError(`--policies: ${(error as Error).message}`);
    }
  }
  return {
    ...(redisUrl !== undefined && { redisUrl }),
    prefix: args.prefix ?? options.prefix ?? DEFAULT_PREFIX,
    policies,
    defaultFailMode: options.failMode ?? 'closed',
    ...(options.keySecret !== undefined && { keySecret: options.keySecret }),
    clientIp: createClientIpResolver(options.clientIp),
  };
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
