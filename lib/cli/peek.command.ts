import type { Decision } from '../core/decision';
import type { Limiter } from '../core/limiter';
import type { CliKey } from './cli-keys.util';
import { columns, formatLimits, formatWait } from './cli-format.util';
import { storeError } from './cli.error';
import type { CommandOutput } from './policies.command';

/**
 * `redlimit peek`: for each key, whether one more unit would be allowed now, how many units are
 * left and, when none is, how long until one is. Writes nothing (one read-only script per key).
 *
 * `remaining` is the budget left now (a `Limiter.peek` decision reports it after the spend it
 * asks about, so one unit is added back when that spend would be allowed).
 *
 * @throws CliError (exit code 3) when Redis fails or does not answer in time
 * @example
 * (await peekCommand(limiter, [{ input: 'email=alice@example.com', key: 'email:…' }])).text;
 * // 'login (fixed-window 3/15m)\n  email=alice@example.com  email:…  0 of 3 left, next in 14m 51s\n…'
 */
export async function peekCommand(
  limiter: Limiter,
  keys: readonly CliKey[],
): Promise<CommandOutput> {
  const decisions = await Promise.all(keys.map(({ key }) => limiter.peek(key)));
  decisions.forEach((decision) => throwIfFailed(decision, limiter.timeoutMs));
  const results = keys.map(({ input, key }, i) => {
    const decision = decisions[i]!;
    return {
      input,
      key,
      allowed: decision.allowed,
      remaining: decision.allowed ? decision.remaining + 1 : decision.remaining,
      limit: decision.limit,
      windowMs: decision.windowMs,
      retryAfterMs: decision.allowed ? 0 : decision.retryAfterMs,
    };
  });
  const allowed = results.every((r) => r.allowed);
  const retryAfterMs = Math.max(...results.map((r) => r.retryAfterMs));
  const { policy } = limiter;
  const rows = results.map((r) => [
    r.input,
    r.key,
    `${r.remaining} of ${r.limit} left` +
      (r.allowed ? '' : `, next in ${formatWait(r.retryAfterMs)}`),
  ]);
  const together = allowed ? 'allowed' : `refused, retry in ${formatWait(retryAfterMs)}`;
  return {
    json: {
      policy: policy.name,
      algorithm: policy.algorithm,
      allowed,
      retryAfterMs,
      keys: results,
    },
    text:
      `${policy.name} (${policy.algorithm} ${formatLimits(policy)})\n${columns(rows, '  ')}\n` +
      `one more unit on ${keys.length > 1 ? 'all these keys' : 'this key'}: ${together}`,
  };
}

/** A decision the store did not make (fail mode) must not be shown as a budget. */
export function throwIfFailed(decision: Decision, timeoutMs: number): void {
  const { failure } = decision;
  if (!failure) return;
  throw storeError(
    failure.reason === 'timeout'
      ? `Redis did not answer within ${timeoutMs} ms`
      : `Redis failed: ${failure.error.message}`,
  );
}
