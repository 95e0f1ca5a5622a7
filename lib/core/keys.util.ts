import type { LimitRule } from './policy';
/** Caller keys as accepted by {@link Limiter.consume}: one key or a non-empty list. */
export type Keys = string | readonly string[];

/**
 * Validates caller keys and drops repeats (a key named twice is charged once), keeping call order.
 *
 * @throws TypeError naming `keys` when the list is empty or holds a non-string, an empty string or
 *   a string that is not well-formed UTF-16 (a lone surrogate: Redis would store it as U+FFFD,
 *   so two such keys could share a budget)
 * @example
 * normalizeKeys(['ip:1', 'email:a', 'ip:1']); // ['ip:1', 'email:a']
 */
export function normalizeKeys(keys: Keys): string[] {
  // One key (the common call) costs one array: the checks below, without the repeat filter.
  if (typeof keys === 'string' && keys.length > 0 && keys.isWellFormed()) return [keys];
  const list: readonly unknown[] = typeof keys === 'string' ? [keys] : keys;
  if (!Array.isArray(list) || list.length === 0) {
    throw new TypeError(
      `keys must be a non-empty string or a non-empty array of non-empty strings; got ${describe(keys)}`,
    );
  }
  // A few keys are told apart by a scan of those kept; a long list by a set.
  const seen = list.length > 16 ? new Set<string>() : undefined;
  const out: string[] = [];
  for (let index = 0; index < list.length; index++) {
    if (!(index in list)) continue; // a hole of a sparse array, skipped as forEach would
    const key: unknown = list[index];
    if (typeof key !== 'string' || key.length === 0) {
      throw new TypeError(`keys[${index}] must be a non-empty string; got ${describe(key)}`);
    }
    if (!key.isWellFormed()) {
      throw new TypeError(
        `keys[${index}] must be well-formed UTF-16; got ${JSON.stringify(key)}, which holds a lone surrogate`,
      );
    }
    if (seen === undefined ? !out.includes(key) : !seen.has(key)) {
      seen?.add(key);
      out.push(key);
    }
  }
  return out;
}

/**
 * Validates a cost against the largest a policy can ever allow (its smallest limit or burst).
 *
 * @throws RangeError naming `cost`
 * @example
 * normalizeCost(undefined, 10); // 1
 * normalizeCost(11, 10); // throws RangeError: cost 11 is above the policy's limit of 10
 */
export function normalizeCost(cost: unknown, maxCost: number): number {
  if (cost === undefined) return 1;
  if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 1) {
    throw new RangeError(`cost must be a whole number of at least 1; got ${describe(cost)}`);
  }
  if (cost > maxCost) {
    throw new RangeError(
      `cost ${cost} is above the policy's limit of ${maxCost}: it could never be allowed`,
    );
  }
  return cost;
}

/**
 * Checks the cost a spend is adjusted to: a whole number ≥ 0, small enough that every limit's
 * arithmetic stays exact (cost × window in doubles).
 */
export function checkActualCost(
  actualCost: unknown,
  limits: readonly LimitRule[],
  name = 'adjust(): actualCost',
): asserts actualCost is number {
  if (typeof actualCost !== 'number' || !Number.isSafeInteger(actualCost) || actualCost < 0) {
    throw new RangeError(`${name} must be a whole number ≥ 0; got ${String(actualCost)}`);
  }
  for (const { windowMs, burst } of limits) {
    if ((actualCost + burst) * windowMs > Number.MAX_SAFE_INTEGER) {
      throw new RangeError(
        `${name} ${actualCost} is too large for a window of ${windowMs} ms: at most ${Math.floor(Number.MAX_SAFE_INTEGER / windowMs) - burst}`,
      );
    }
  }
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return value.length === 0 ? 'an empty array' : 'an array';
  if (value === null) return 'null';
  return typeof value === 'number' ? String(value) : typeof value;
}
