import { ALGORITHM_DEFINITIONS } from '../core/algorithms/algorithm.registry';
import { resolvePolicy } from '../core/policy';
import { type CliConfig, describeTarget } from './cli-config.util';
import { columns, formatLimits } from './cli-format.util';

/** What a command prints: `json` with `--json`, else `text`. */
export interface CommandOutput {
  /** Printed as JSON with `--json`. */
  readonly json: Readonly<Record<string, unknown>>;
  /** Printed otherwise. */
  readonly text: string;
}

/**
 * `redlimit policies`: the configured policies, their limits and fail modes, the key prefix and
 * the Redis (a URL with its password masked, cluster nodes or sentinels). Needs no Redis.
 *
 * @example
 * policiesCommand(config).text;
 * // 'login  fixed-window  10/15m  closed\n…'
 */
export function policiesCommand(config: CliConfig): CommandOutput {
  const policies = Object.entries(config.policies).map(([name, definition]) => {
    const policy = resolvePolicy({ ...definition, name });
    return {
      name,
      algorithm: policy.algorithm,
      limits: policy.limits.map(({ limit, windowMs, burst }) => ({
        limit,
        windowMs,
        ...(ALGORITHM_DEFINITIONS[policy.algorithm].usesBurst && { burst }),
      })),
      failMode: policy.failMode ?? config.defaultFailMode,
      spec: formatLimits(policy),
    };
  });
  const redis = config.redis === undefined ? null : describeTarget(config.redis);
  const header = `redis ${redis ?? '(not configured)'}, prefix '${config.prefix}'`;
  const text =
    policies.length === 0
      ? `${header}\nno policies: set REDLIMIT_POLICIES (e.g. login=fixed-window:10/15m) or pass --policies`
      : `${header}\n${columns(policies.map((p) => [p.name, p.algorithm, p.spec, p.failMode]))}`;
  return {
    json: {
      redis,
      prefix: config.prefix,
      policies: policies.map(({ spec: _spec, ...policy }) => policy),
    },
    text,
  };
}
