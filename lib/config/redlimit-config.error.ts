/**
 * An environment variable (or config key) read by {@link redlimitOptionsFromEnv} has a value
 * that cannot be used. The message names the variable, shows the value (secrets masked) and says
 * what was expected; thrown from `forRootAsync`'s factory, it stops the app from booting.
 *
 * @example
 * try {
 *   redlimitOptionsFromEnv({ REDLIMIT_FAIL_MODE: 'sometimes' });
 * } catch (err) {
 *   if (err instanceof RedlimitConfigError) console.error(err.variable); // 'REDLIMIT_FAIL_MODE'
 * }
 */
export class RedlimitConfigError extends Error {
  /** Always `'RedlimitConfigError'`: survives serialisation and minification, unlike the class name. */
  override readonly name = 'RedlimitConfigError';

  constructor(
    /** The variable that holds the bad value. */
    readonly variable: string,
    /** The value as shown in the message (secrets masked). */
    readonly shownValue: string,
    /** What is wrong with it and what is expected. */
    readonly problem: string,
  ) {
    super(`${variable}=${JSON.stringify(shownValue)} is invalid: ${problem}`);
  }
}
