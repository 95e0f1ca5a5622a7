import { Attempt } from './attempt';
import type { Decision } from './decision';
import { RateLimitedError, refusedError, StoreUnavailableError } from './errors';
import { type Keys, normalizeCost, normalizeKeys } from './keys.util';
import type { ConsumeOptions, WaitForOptions } from './limiter-options';
import type { ResolvedPolicy } from './policy';
import type { PolicyDecider } from './policy-decider';
import { checkWaitOptions, type Sleep, timerSleep, waitTurn } from './wait';

// The calls of `Limiter` built on one spend: `waitFor` (consume until allowed) and `begin` (a
// spend handed over as an `Attempt`). Their arguments are checked by the limiter; this module
// knows a limiter only by the members it uses ({@link SpendingLimiter}).

/** What {@link waitForTurn} and {@link beginAttempt} use of a `Limiter`. */
export interface SpendingLimiter {
  readonly policy: ResolvedPolicy;
  readonly options: { readonly sleep?: Sleep };
  readonly decider: PolicyDecider;
  consume(keys: Keys, options: ConsumeOptions): Promise<Decision>;
  refund(target: Decision): Promise<boolean>;
  adjust(target: Decision, actualCost: number): Promise<boolean>;
  extend(target: Decision): Promise<boolean>;
}

/**
 * `Limiter.waitFor`: consumes until allowed, sleeping out each refusal's `retryAfterMs`.
 *
 * @throws TypeError / RangeError for bad options, keys or cost, before any try
 */
export function waitForTurn(
  limiter: SpendingLimiter,
  keys: Keys,
  options: WaitForOptions,
): Promise<Decision> {
  const wait = checkWaitOptions(options, 'waitFor', ['cost']);
  // Bad keys or cost throw now, before any try.
  normalizeKeys(keys);
  normalizeCost(options.cost, limiter.policy.maxCost);
  const consume = { cost: options.cost };
  return waitTurn(
    () => limiter.consume(keys, consume),
    (decision) => decision.failure?.failMode === 'closed',
    refusedError,
    wait,
    limiter.options.sleep ?? timerSleep,
    () => limiter.policy.algorithm === 'concurrency', // a lease's expiry is only an upper bound
  );
}

/**
 * `Limiter.begin` (its options checked): spends, then hands an {@link Attempt} to settle.
 *
 * @throws RateLimitedError when refused; StoreUnavailableError when the store failed and the
 *   policy fails closed (nothing is spent)
 */
export async function beginAttempt(
  limiter: SpendingLimiter,
  keys: Keys,
  options: ConsumeOptions,
): Promise<Attempt> {
  const request = limiter.decider.request(keys, options);
  // The spend will be settled by its receipt: the store registers it in its keys' refund ledgers
  // (one more write on this path only), so its first refund or adjustment is never lost to the
  // ledger's bound. A lease needs none (it is released whatever the ledger holds).
  const decision = await limiter.decider.decide(
    limiter.policy.algorithm === 'concurrency' ? request : { ...request, settles: true },
    true,
  );
  if (!decision.allowed) {
    throw decision.failure?.failMode === 'closed'
      ? new StoreUnavailableError(decision)
      : new RateLimitedError(decision);
  }
  return new Attempt(
    decision,
    (spent) => limiter.refund(spent),
    (spent, actualCost) => limiter.adjust(spent, actualCost),
    (spent) => limiter.extend(spent),
  );
}
