import { parseDuration } from '../core/duration.util';
import { createClientIpResolver } from '../http/client-ip.util';
import { ipRangeList } from '../http/ip-range.util';
import { parseHostPortList } from './redis-sentinel.util';
import type { ClientIpOptions, RedlimitModuleOptions } from './redlimit-options.interface';

// The parsers and landing steps the rows of ENV_VARIABLES (env-variables.table.ts) share. A
// parser fails through its context, which throws a RedlimitConfigError naming the variable.

/** Module options while the environment is applied to them. */
export type EnvOptions = { -readonly [K in keyof RedlimitModuleOptions]: RedlimitModuleOptions[K] };

/** What a row sees while its variable is applied. */
export interface EnvContext {
  /** The variable read: the row's `name`, or its `fallback` when only that one is set. */
  readonly variable: string;
  /** Another variable, trimmed; `undefined` when it is unset, empty or blank. */
  readonly read: (name: string) => string | undefined;
  /**
   * Throws a `RedlimitConfigError` naming the variable, its value as the row shows it (a secret
   * as `***`), and `reason`.
   */
  readonly fail: (reason: string) => never;
  /** The caller's defaults, which the variables are applied on top of. */
  readonly defaults: RedlimitModuleOptions;
  /** The options so far: the defaults and the rows above this one. */
  readonly options: EnvOptions;
}

/** Parses and validates a value that is set, or fails through `context.fail`. */
export type Parser<T> = (value: string, context: EnvContext) => T;

/** The value as it is. */
export const text: Parser<string> = (value) => value;

/** Runs `parse`; an error it throws becomes the variable's, with its message as the reason. */
export function checked<T>(context: EnvContext, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    return context.fail((error as Error).message);
  }
}

/** Digits only, a safe integer ≥ 1; else `reason`. */
export function wholeNumber(reason: string): Parser<number> {
  return (value, context) => {
    const number = Number(value);
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(number) || number < 1) context.fail(reason);
    return number;
  };
}

/** A whole number from `min` to `max`; else `reason`. */
export function wholeNumberIn(min: number, max: number, reason: string): Parser<number> {
  return (value, context) => {
    const number = Number(value);
    if (!/^\d+$/.test(value) || number < min || number > max) context.fail(reason);
    return number;
  };
}

/** `true` or `false`, any case. */
export const flag: Parser<boolean> = (value, context) => {
  const lower = value.toLowerCase();
  if (lower === 'true') return true;
  if (lower === 'false') return false;
  return context.fail('expected true or false');
};

/** One of `allowed` (lower-cased first with `ignoreCase`); else `reason`. */
export function oneOf<T extends string>(
  allowed: readonly T[],
  reason: string,
  ignoreCase = false,
): Parser<T> {
  return (value, context) => {
    const word = ignoreCase ? value.toLowerCase() : value;
    return allowed.includes(word as T) ? (word as T) : context.fail(reason);
  };
}

/** A duration such as `30d`, kept as written; else `reason`. */
export function duration(reason: string): Parser<string> {
  return (value, context) => {
    try {
      parseDuration(value, context.variable);
    } catch {
      context.fail(reason);
    }
    return value;
  };
}

/** Comma-separated addresses, ranges and names, each checked as the module option `option`. */
export function ipRanges(option: string): Parser<string[]> {
  return (value, context) => {
    const entries = list(value);
    checked(context, () => ipRangeList(entries, option));
    return entries;
  };
}

/** A secret of at least 16 characters. */
export const secretText: Parser<string> = (value, context) =>
  value.length < 16 ? context.fail('expected at least 16 characters') : value;

/** `host:port,host:port`. */
export const hostPorts: Parser<ReturnType<typeof parseHostPortList>> = (value, context) =>
  checked(context, () => parseHostPortList(value));

/**
 * The options' `clientIp` with `field` set from the value, checked as a whole as the module
 * checks it (so a combination that cannot work names the variable that completed it).
 */
export function clientIpField<K extends keyof ClientIpOptions>(
  field: K,
  toValue: (value: string) => ClientIpOptions[K],
): Parser<ClientIpOptions> {
  return (value, context) => {
    const clientIp: ClientIpOptions = { ...context.options.clientIp, [field]: toValue(value) };
    checked(context, () => createClientIpResolver(clientIp));
    return clientIp;
  };
}

/** Fails when one of `others` is set too: two Redis named for redlimit. */
export function alone(context: EnvContext, others: readonly string[]): void {
  const other = others.find((name) => context.read(name) !== undefined);
  if (other !== undefined) context.fail(`${other} is set too; set one of them`);
}

/** A comma-separated list, entries trimmed, empty ones dropped. */
export function list(value: string): string[] {
  return value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}

/** Digits as a number, anything else `NaN` (for a check that names the range itself). */
export const digitsOrNaN = (value: string): number => (/^\d+$/.test(value) ? Number(value) : NaN);

/** Lands the parsed value as the option `key`. */
export function set<K extends keyof EnvOptions>(
  key: K,
): (options: EnvOptions, value: EnvOptions[K]) => void {
  return (options, value) => {
    options[key] = value;
  };
}
