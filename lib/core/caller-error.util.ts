/** Marks an error as the caller's own (see {@link callerError}); shared by every copy of the library. */
const CALLER_ERROR = Symbol.for('redlimit.callerError');

/**
 * Marks an error as the caller's mistake (a broken custom clock, bad input found inside a store),
 * not a store failure: a limiter passes it on to the caller as it is, whatever its fail mode,
 * instead of absorbing it into a decision that fails open or closed.
 *
 * @example
 * throw callerError(new RangeError('RedisStore options.clock returned NaN'));
 */
export function callerError<E extends Error>(error: E): E {
  Object.defineProperty(error, CALLER_ERROR, { value: true });
  return error;
}

/** Whether `error` was marked by {@link callerError}. */
export function isCallerError(error: unknown): boolean {
  return error instanceof Error && (error as { [CALLER_ERROR]?: unknown })[CALLER_ERROR] === true;
}
