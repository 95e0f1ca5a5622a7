/** The interval of redlimit's repeated warnings: a failing store fails every call alike. */
export const WARNING_INTERVAL_MS = 10_000;

/**
 * A warning given at most once per interval (a store that fails, fails every call alike: one line
 * per call would flood the log). Each call counts; the message is built only when it is given, and
 * is told how many calls there were since the last one given (this one included).
 *
 * @param emit where a warning goes, e.g. `process.emitWarning` or a Nest `Logger`
 * @param intervalMs the shortest time between two warnings, in ms (default 10 s)
 * @param now the clock, in ms (default `performance.now`)
 * @returns the function to call on every occurrence
 * @example
 * const warn = warnEvery((message) => process.emitWarning(message, 'RedlimitWarning'));
 * warn((count) => `redlimit: ${count} refusals let through since the last report`);
 */
export function warnEvery(
  emit: (message: string) => void,
  intervalMs: number = WARNING_INTERVAL_MS,
  now: () => number = () => performance.now(),
): (message: (count: number) => string) => void {
  let lastAt = -Infinity;
  let count = 0;
  return (message) => {
    count += 1;
    const at = now();
    if (at - lastAt < intervalMs) return;
    lastAt = at;
    const since = count;
    count = 0;
    emit(message(since));
  };
}

/** `process.emitWarning` as a `RedlimitWarning`. */
export function processWarning(message: string): void {
  process.emitWarning(message, 'RedlimitWarning');
}
