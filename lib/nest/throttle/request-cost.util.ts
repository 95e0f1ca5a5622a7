import type { ExecutionContext } from '@nestjs/common';
import type { Limiter } from '../../core/limiter';
import { IdentityInputError } from '../../http/identity-input.error';
import type { CostFn } from './redlimit.metadata';

/**
 * Checks a decorator's `cost` option when the decorator is applied: absent, a whole number ≥ 1, or
 * a function of the context.
 *
 * @throws TypeError naming the decorator
 */
export function checkCostOption(cost: unknown, where: string): void {
  if (cost === undefined || typeof cost === 'function') return;
  if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 1) {
    throw new TypeError(
      `${where} cost must be a whole number of at least 1 or a function of the context; got ${typeof cost === 'number' ? cost : typeof cost}`,
    );
  }
}

/**
 * The units one call is charged: the option as it is, or what its function returns for this call.
 * A computed cost that is not a whole number from 1 to the policy's smallest limit is the
 * request's fault: an {@link IdentityInputError} (part `'cost'`, HTTP 400), before anything is
 * charged.
 *
 * @example
 * const cost = await requestCost(context, metadata.cost, limiter);
 */
export function requestCost(
  context: ExecutionContext,
  cost: number | CostFn | undefined,
  limiter: Limiter,
): number | undefined | Promise<number> {
  if (typeof cost !== 'function') return cost;
  const computed: unknown = cost(context);
  if (typeof (computed as { then?: unknown } | null)?.then === 'function') {
    return Promise.resolve(computed).then((value) => checked(value, limiter));
  }
  return checked(computed, limiter);
}

function checked(value: unknown, limiter: Limiter): number {
  if (
    typeof value !== 'number' ||
    !Number.isSafeInteger(value) ||
    value < 1 ||
    value > limiter.policy.maxCost
  ) {
    throw new IdentityInputError('cost', 'not-a-cost');
  }
  return value;
}
