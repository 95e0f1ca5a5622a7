import { StoreTimeoutError } from '../core/errors';
import type { Limiter } from '../core/limiter';
import type { CliKey } from './cli-keys.util';
import { columns } from './cli-format.util';
import { storeError, usageError } from './cli.error';
import type { CommandOutput } from './policies.command';

/**
 * `redlimit grant`: gives each key `units` of room now under every limit of the policy
 * (`Limiter.grant`: a one-off allowance, never beyond a full budget; a lockout stays). One script
 * call (on a Cluster, one per slot group).
 *
 * @throws CliError (exit code 2) for a `concurrency` policy or units too large for its windows,
 *   before Redis is touched; (exit code 3) when Redis fails or does not answer in time
 * @example
 * (await grantCommand(limiter, [{ input: 'email=alice@example.com', key: 'email:…' }], 3)).text;
 * // "granted 3 units under login to 1 key:\n  email=alice@example.com  email:…"
 */
export async function grantCommand(
  limiter: Limiter,
  keys: readonly CliKey[],
  units: number,
): Promise<CommandOutput> {
  const name = limiter.policy.name;
  if (limiter.policy.algorithm === 'concurrency') {
    throw usageError(
      `policy '${name}' leases (concurrency): nothing to grant; a lease ends when released or at its window`,
    );
  }
  try {
    await limiter.grant(
      keys.map(({ key }) => key),
      units,
    );
  } catch (error) {
    if (error instanceof RangeError || error instanceof TypeError) {
      throw usageError(error.message);
    }
    throw storeError(
      error instanceof StoreTimeoutError
        ? `Redis did not answer within ${limiter.timeoutMs} ms; the grant may or may not have happened`
        : `Redis failed: ${(error as Error).message}`,
    );
  }
  const plural = units === 1 ? 'unit' : 'units';
  return {
    json: { policy: name, units, granted: keys.map(({ input, key }) => ({ input, key })) },
    text: `granted ${units} ${plural} under ${name} to ${keys.length} key${keys.length === 1 ? '' : 's'}:\n${columns(
      keys.map(({ input, key }) => [input, key]),
      '  ',
    )}`,
  };
}
