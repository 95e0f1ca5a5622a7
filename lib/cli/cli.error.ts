/** Exit codes of the `redlimit` command. */
export const EXIT_CODES = {
  /** The command did what was asked. */
  ok: 0,
  /** A bug: an error the command did not expect (reported on one line all the same). */
  internal: 1,
  /** Bad usage, configuration, key or policy name: nothing was sent to Redis. */
  usage: 2,
  /** Redis could not be reached, did not answer in time, or answered with an error. */
  store: 3,
} as const;

/** One of {@link EXIT_CODES}. */
export type ExitCode = (typeof EXIT_CODES)[keyof typeof EXIT_CODES];

/**
 * An error the `redlimit` command reports as one line on stderr, exiting with its code.
 *
 * @example
 * throw new CliError("no policy named 'logn' (known: login, api)", EXIT_CODES.usage);
 */
export class CliError extends Error {
  override readonly name = 'CliError';

  constructor(
    message: string,
    /** The process exit code. */
    readonly exitCode: ExitCode,
  ) {
    super(message);
  }
}

/** A usage error (exit code 2). */
export function usageError(message: string): CliError {
  return new CliError(message, EXIT_CODES.usage);
}

/** A store error (exit code 3). */
export function storeError(message: string): CliError {
  return new CliError(message, EXIT_CODES.store);
}
