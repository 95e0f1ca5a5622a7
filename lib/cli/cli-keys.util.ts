import { canonicalIp } from '../http/client-ip.util';
import { attemptKey, MISSING_VALUE } from '../http/key-hash.util';
import { ipKey, routeKey, routeName } from '../http/throttle-key.util';
import type { CliArgs } from './cli-args.util';
import type { CliConfig } from './cli-config.util';
import { usageError } from './cli.error';

/** A caller key the command addresses, and the argument it came from. */
export interface CliKey {
  /** What the operator typed: `email=alice@example.com`, `--key user:42`, … */
  readonly input: string;
  /**
   * The caller key as the app passes it to the limiter (`email:<hash>`,
   * `ItemsController.get /items/:id|ip:…`).
   */
  readonly key: string;
}

/**
 * The caller keys of a `peek` or `reset`, built exactly as the app builds them:
 *
 * - `part=value` → the `@Attempt` key of that part: the value normalised (`normalizeIdentity`;
 *   as given with `--exact`, for parts with `normalize: false`) and hashed
 *   (HMAC with `REDLIMIT_KEY_SECRET` when set); `ip=` values are grouped like client IPs;
 * - `--route 'Controller.method /template'` with `--ip ADDRESS` → the default `@Throttle` key;
 * - `--key KEY` → used as given (key functions, direct `Limiter` calls).
 *
 * @throws CliError (exit code 2) naming the argument that is not a usable key
 * @example
 * callerKeys(parseCliArgs(['reset', 'login', 'email=Alice@Example.com']), config);
 * // [{ input: 'email=Alice@Example.com', key: 'email:…' }], the key @Attempt(['email']) charges
 */
export function callerKeys(args: CliArgs, config: CliConfig): CliKey[] {
  const keys: CliKey[] = args.parts.map((part) => partKey(part, config, args.exact));
  keys.push(...throttleKeys(args, config));
  for (const key of args.rawKeys) {
    if (key.trim() === '') throw usageError('--key needs a non-empty caller key');
    keys.push({ input: `--key ${key}`, key });
  }
  if (keys.length === 0) {
    throw usageError(
      `${args.command ?? 'peek'} needs at least one key: part=value (e.g. email=alice@example.com), ` +
        "--route 'Controller.method /path' --ip ADDRESS, or --key KEY",
    );
  }
  return keys;
}

/** A login part's key name as `RedlimitDevices` accepts it (`email`, `username`, `x-user`). */
const LOGIN_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
/** A login part's caller key: a field's value is always hashed to 22 base64url characters. */
const LOGIN_KEY = /^([A-Za-z0-9_.-]{1,64}):[A-Za-z0-9_-]{22}$/;
/** Parts that name the requester, never a login (`@Attempt(…, { devices })` refuses them). */
const NOT_LOGINS: ReadonlySet<string> = new Set(['ip', 'apiKey', 'device']);

/**
 * The login keys of a `revoke-devices`, each the caller key of the login part of an
 * `@Attempt(…, { devices })` route, as `RedlimitDevices.revokeAll` computes it:
 *
 * - `part=value` → `<part>:<hash>`, normalised and hashed as {@link callerKeys} does (`--exact`
 *   for parts with `normalize: false`);
 * - `--key <part>:<hash>` → used as given, once checked to be such a key.
 *
 * `ip`, `apiKey`, an empty login and `--route` / `--ip` are refused: none names a login.
 *
 * @throws CliError (exit code 2) naming the argument that is not a login
 * @example
 * loginKeys(parseCliArgs(['revoke-devices', 'email=Ada@Example.com']), config);
 * // [{ input: 'email=Ada@Example.com', key: 'email:…' }], the key RedlimitDevices.revokeAll('email', …) bumps
 */
export function loginKeys(args: CliArgs, config: CliConfig): CliKey[] {
  if (args.route !== undefined || args.ips.length > 0) {
    throw usageError(
      '--route and --ip name @Throttle keys, not logins: revoke-devices takes part=value ' +
        '(e.g. email=alice@example.com) or --key <part>:<hash>',
    );
  }
  const keys = args.parts.map((input) => {
    const eq = input.indexOf('=');
    const name = eq < 0 ? undefined : input.slice(0, eq).trim();
    if (name === undefined || name === '') {
      throw usageError(
        `bad login '${input}': expected part=value such as email=alice@example.com ` +
          '(revoke-devices takes no policy name)',
      );
    }
    checkLoginName(name, `bad login '${input}'`);
    if (normalizedEmpty(input.slice(eq + 1), args.exact)) {
      throw usageError(
        `bad login '${input}': empty value (requests without a ${name} are never trusted, ` +
          'so they hold no device tokens)',
      );
    }
    return partKey(input, config, args.exact);
  });
  for (const key of args.rawKeys) {
    const match = LOGIN_KEY.exec(key);
    if (!match) {
      throw usageError(
        `--key '${key}' is not a login key: expected <part>:<hash> as @Attempt builds it ` +
          '(e.g. email: and 22 characters), or give the login as part=value',
      );
    }
    checkLoginName(match[1]!, `--key '${key}'`);
    keys.push({ input: `--key ${key}`, key });
  }
  if (keys.length === 0) {
    throw usageError(
      'revoke-devices needs at least one login: part=value (e.g. email=alice@example.com) ' +
        'or --key <part>:<hash>',
    );
  }
  return keys;
}

function checkLoginName(name: string, what: string): void {
  if (NOT_LOGINS.has(name)) {
    throw usageError(`${what}: '${name}' is not a login (devices name the login part, e.g. email)`);
  }
  if (/^(?:body|query|params|headers)\./.test(name)) {
    const bare = name.slice(name.lastIndexOf('.') + 1);
    throw usageError(
      `${what}: name the part by its key name, as @Attempt keys it: ${bare}=…, not ${name}=…`,
    );
  }
  if (!LOGIN_NAME.test(name)) {
    throw usageError(
      `${what}: '${name}' is not a part's key name (letters, digits, '_', '.', '-'; up to 64)`,
    );
  }
}

/** Whether `value` is a missing login once `@Attempt` has normalised it (its key `<part>:-`). */
function normalizedEmpty(value: string, exact: boolean): boolean {
  return attemptKey('x', value, undefined, { normalize: !exact }) === `x:${MISSING_VALUE}`;
}

function partKey(input: string, config: CliConfig, exact: boolean): CliKey {
  const eq = input.indexOf('=');
  if (eq < 0) {
    throw usageError(
      `bad key '${input}': expected part=value such as email=alice@example.com ` +
        '(or --key KEY for a caller key used as given)',
    );
  }
  const name = input.slice(0, eq).trim();
  const value = input.slice(eq + 1);
  if (name === '' || /\s/.test(name)) {
    throw usageError(`bad key '${input}': no part name before '=' (e.g. email=…, ip=…, user=…)`);
  }
  if (value.trim() === '') {
    throw usageError(
      `bad key '${input}': empty value (requests without a ${name} share the key ` +
        `'${name}:-'; address it with --key '${name}:-')`,
    );
  }
  const hashed = name === 'ip' ? clientIp(input, value, config) : value;
  const normalize = name === 'ip' || !exact;
  return { input, key: attemptKey(name, hashed, config.keySecret, { normalize }) };
}

function throttleKeys(args: CliArgs, config: CliConfig): CliKey[] {
  if (args.route === undefined) {
    if (args.ips.length > 0) {
      throw usageError("--ip needs --route 'Controller.method /path' (a @Throttle key)");
    }
    return [];
  }
  const example = "e.g. 'ItemsController.get /items/:id'";
  if (/^\s*[A-Za-z]+\s+\//.test(args.route)) {
    throw usageError(
      `--route '${args.route}': default @Throttle keys name the handler, not the HTTP method ` +
        `(one budget per handler, @All included): 'Controller.method /template', ${example}`,
    );
  }
  const match = /^\s*([A-Za-z_$][\w$]*\.[A-Za-z_$][\w$]*)(?:\s+(\/\S*))?\s*$/.exec(args.route);
  if (!match) {
    throw usageError(
      `--route '${args.route}': expected the handler and its route template, 'Controller.method /template', ${example}`,
    );
  }
  if (args.ips.length === 0) throw usageError('--route needs --ip ADDRESS (the client IP)');
  const route = routeName(match[1]!, match[2]);
  return args.ips.map((ip) => ({
    input: `--route '${args.route}' --ip ${ip}`,
    key: routeKey(route, ipKey(clientIp(`--ip ${ip}`, ip, config))),
  }));
}

/** The client IP as the app's resolver reports it (IPv4-mapped → IPv4, IPv6 grouped). */
function clientIp(input: string, value: string, config: CliConfig): string {
  if (canonicalIp(value) === undefined) {
    throw usageError(`bad key '${input}': '${value.trim()}' is not an IP address`);
  }
  return config.clientIp(value)!; // a valid address always names itself
}
