import { StoreTimeoutError } from '../core/errors';
import type { Limiter } from '../core/limiter';
import type { CliKey } from './cli-keys.util';
import { columns } from './cli-format.util';
import { storeError } from './cli.error';
import type { CommandOutput } from './policies.command';

/**
 * `redlimit reset`: deletes the policy's stored state for the keys (every limit, and any lockout)
 * and moves each key's reset mark in its refund ledger, so receipts of earlier spends refund
 * nothing; each key has its full budget again — e.g. unlocking an account. One script call (on a
 * Cluster, one per slot group).
 *
 * @throws CliError (exit code 3) when Redis fails or does not answer in time
 * @example
 * (await resetCommand(limiter, [{ input: 'email=alice@example.com', key: 'email:…' }])).text;
 * // "reset login for 1 key:\n  email=alice@example.com  email:…"
 */
export async function resetCommand(
  limiter: Limiter,
  keys: readonly CliKey[],
): Promise<CommandOutput> {
  try {
    await limiter.reset(keys.map(({ key }) => key));
  } catch (error) {
    throw storeError(
      error instanceof StoreTimeoutError
        ? `Redis did not answer within ${limiter.timeoutMs} ms; the reset may or may not have happened`
        : `Redis failed: ${(error as Error).message}`,
    );
  }
  const name = limiter.policy.name;
  return {
    json: { policy: name, reset: keys.map(({ input, key }) => ({ input, key })) },
    text: `reset ${name} for ${keys.length} key${keys.length === 1 ? '' : 's'}:\n${columns(
      keys.map(({ input, key }) => [input, key]),
      '  ',
    )}`,
  };
}
