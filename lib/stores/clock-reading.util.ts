import { callerError } from '../core/caller-error.util';

/**
 * A custom clock whose every reading is checked where it is read, before anything is sent to a
 * store: ms as a finite number from 0 (the epoch) to 2^53 − 1; a fraction is floored to whole ms.
 * A bad reading is the caller's error (see {@link callerError}): a limiter throws it to its
 * caller, never turns it into a store failure that a fail mode would admit or refuse.
 *
 * @param name how errors name the clock (`RedisStore options.clock`)
 * @throws TypeError when a reading is not a number (or the clock throws), RangeError when it is
 *   NaN, infinite, negative or above 2^53 − 1
 * @example
 * const now = checkedClock(() => Date.now(), 'MemoryStore options.clock');
 * now(); // 1800000000000
 */
export function checkedClock(clock: () => number, name: string): () => number {
  return () => {
    let reading: unknown;
    try {
      reading = clock();
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw callerError(new TypeError(`${name} threw: ${reason}`, { cause: error }));
    }
    // NaN fails both comparisons.
    if (typeof reading === 'number' && reading >= 0 && reading <= Number.MAX_SAFE_INTEGER) {
      return Math.floor(reading);
    }
    const expected =
      'a clock must return ms since the epoch as a finite number ≥ 0 (e.g. Date.now())';
    const got = typeof reading === 'number' ? String(reading) : describe(reading);
    throw callerError(
      typeof reading === 'number'
        ? new RangeError(`${name} returned ${got}; ${expected}`)
        : new TypeError(`${name} returned ${got}; ${expected}`),
    );
  };
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'string') return `the string ${JSON.stringify(value)}`;
  return `a ${typeof value}`;
}
