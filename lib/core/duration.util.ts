const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

const DURATION_PATTERN = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;

/**
 * A span of time: whole milliseconds, or a string such as `'500ms'`, `'30s'`, `'15m'`, `'1h'`,
 * `'1d'` (a decimal amount such as `'1.5h'` is allowed when it comes to whole milliseconds).
 */
export type Duration = number | string;

/**
 * Converts a {@link Duration} to whole milliseconds.
 *
 * @param value the duration to convert
 * @param name the argument's name, used in the error message
 * @throws RangeError when the value is not a positive whole number of milliseconds
 * @example
 * parseDuration('15m', 'window'); // 900000
 */
export function parseDuration(value: Duration, name: string): number {
  let ms: number;
  if (typeof value === 'number') {
    ms = value;
  } else if (typeof value === 'string') {
    const match = DURATION_PATTERN.exec(value.trim());
    if (!match) {
      throw new RangeError(
        `${name} must be a positive duration such as 500, '30s', '15m' or '1h'; got '${value}'`,
      );
    }
    ms = Number(match[1]) * (UNIT_MS[match[2] as string] as number);
  } else {
    throw new TypeError(
      `${name} must be a number of milliseconds or a duration string; got ${typeof value}`,
    );
  }
  if (!Number.isSafeInteger(ms) || ms < 1) {
    throw new RangeError(
      `${name} must be a whole number of milliseconds of at least 1; got ${String(value)}`,
    );
  }
  return ms;
}
