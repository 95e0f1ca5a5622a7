/**
 * Command lines of the bench scripts, on `node:util`'s `parseArgs` in strict mode: an unknown
 * option, a missing value or a stray argument stops the script with the error and the usage;
 * `--help` (or `-h`) prints the usage and exits 0. Values stay strings (parseArgs has no
 * numbers); {@link positive}, {@link positiveInteger} and {@link nonNegative} turn them into
 * checked numbers. Node 20's parseArgs has no `--no-<flag>` negation: such flags are declared as
 * booleans of their own (`'no-write'`).
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;
type Values<T extends Options> = ReturnType<
  typeof parseArgs<{ options: T; strict: true; allowPositionals: false }>
>['values'];

/** Parses `process.argv` (or `argv`) against `options`; exits on `--help` or a bad command line. */
export function parseCommandLine<const T extends Options>(
  usage: string,
  options: T,
  argv: readonly string[] = process.argv.slice(2),
): Values<T> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    });
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${usage}\n`);
    process.exit(2);
  }
  if ((parsed.values as { help?: boolean }).help) {
    console.log(usage);
    process.exit(0);
  }
  return parsed.values;
}

/** A number > 0 from an option's text (`20_000` and `2e4` allowed); exits with usage if not. */
export function positive(text: string | undefined, name: string, usage: string): number {
  const value = Number((text ?? '').replace(/_/g, ''));
  if (!Number.isFinite(value) || value <= 0)
    fail(`--${name} must be a positive number`, text, usage);
  return value;
}

/** A whole number > 0 from an option's text. */
export function positiveInteger(text: string | undefined, name: string, usage: string): number {
  const value = positive(text, name, usage);
  if (!Number.isInteger(value)) fail(`--${name} must be a whole number`, text, usage);
  return value;
}

/** A number ≥ 0 from an option's text. */
export function nonNegative(text: string | undefined, name: string, usage: string): number {
  const value = Number((text ?? '').replace(/_/g, ''));
  if (!Number.isFinite(value) || value < 0) fail(`--${name} must be a number ≥ 0`, text, usage);
  return value;
}

function fail(message: string, text: string | undefined, usage: string): never {
  usageError(`${message}; got ${text ?? 'nothing'}`, usage);
}

/** Stops the script with `message` and the usage (exit code 2, as for any bad command line). */
export function usageError(message: string, usage: string): never {
  process.stderr.write(`${message}\n\n${usage}\n`);
  process.exit(2);
}
