/** The longest a device epoch is kept after its last use: 366 days, in ms. */
export const MAX_EPOCH_KEEP_MS = 366 * 86_400_000;

/**
 * Checks the arguments of `Store.readEpoch` / `Store.bumpEpoch` before the store is touched: the
 * key as a limiter key (a non-empty, well-formed string) and `keepMs` a whole number of ms from 1
 * to 366 days.
 *
 * @throws TypeError naming `key`, RangeError naming `keepMs`
 * @example
 * checkEpochArguments('email:5f4dcc3b', 30 * 86_400_000, 'readEpoch'); // passes
 */
export function checkEpochArguments(key: unknown, keepMs: unknown, operation: string): void {
  if (typeof key !== 'string' || key.length === 0) {
    throw new TypeError(
      `${operation}(): key must be a non-empty string; got ${typeof key === 'string' ? '""' : typeof key}`,
    );
  }
  if (!key.isWellFormed()) {
    throw new TypeError(
      `${operation}(): key must be well-formed UTF-16; got ${JSON.stringify(key)}, which holds a lone surrogate`,
    );
  }
  if (
    typeof keepMs !== 'number' ||
    !Number.isSafeInteger(keepMs) ||
    keepMs < 1 ||
    keepMs > MAX_EPOCH_KEEP_MS
  ) {
    throw new RangeError(
      `${operation}(): keepMs must be a whole number of ms from 1 to ${MAX_EPOCH_KEEP_MS} (366 days); got ${String(keepMs)}`,
    );
  }
}
