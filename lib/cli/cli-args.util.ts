import { parseArgs } from 'node:util';
import { usageError } from './cli.error';

/** What `redlimit policies set` was given, before it is checked against the policy. */
export interface OverrideFlags {
  /** `--limit N`. */
  readonly limit?: string;
  /** `--limits N/DURATION,…` (each window must be the policy's). */
  readonly limits?: string;
  /** `--burst N`. */
  readonly burst?: string;
  /** `--shadow true|false`. */
  readonly shadow?: string;
  /** `--fail-mode closed|open|memory`. */
  readonly failMode?: string;
  /** `--block DURATION` or `--block none`. */
  readonly block?: string;
}

/** The commands of `redlimit`. */
export const COMMANDS = ['policies', 'peek', 'reset', 'grant', 'revoke-devices', 'board'] as const;

/** One of {@link COMMANDS}. */
export type CommandName = (typeof COMMANDS)[number];

/** The command line of `redlimit`, parsed and checked for shape (not yet against configuration). */
export interface CliArgs {
  /** The command; undefined with `--help` or `--version` alone. */
  readonly command?: CommandName;
  /** `peek`, `reset` and `grant`: the policy name. */
  readonly policy?: string;
  /** `grant`: `--units`, the room to give each key (a whole number ≥ 1). */
  readonly units?: number;
  /** `policies set|unset|list|history`: what to do with live overrides (none: the configured list). */
  readonly subcommand?: 'set' | 'unset' | 'list' | 'history';
  /** `policies set`: the change's flags (checked against the policy later). */
  readonly override?: OverrideFlags;
  /** `policies set|unset`: `--scope`, the key prefix (default every key). */
  readonly scope?: string;
  /** `policies set`: `--from`, an ISO time or a duration from now. */
  readonly from?: string;
  /** `policies set`: `--until`, an ISO time or a duration from now. */
  readonly until?: string;
  /** `policies set|unset`: `--reason`, kept in the history. */
  readonly reason?: string;
  /** `policies history`: `--count`, how many entries (default 50). */
  readonly count: number;
  /** `peek`, `reset`, `grant` and `revoke-devices`: `part=value` arguments (`@Attempt` parts). */
  readonly parts: readonly string[];
  /** `--key`: caller keys used as given. */
  readonly rawKeys: readonly string[];
  /** `--route`: `Controller.method /template` of a `@Throttle` default key. */
  readonly route?: string;
  /** `--ip`: client IPs of `@Throttle` default keys. */
  readonly ips: readonly string[];
  /** `--json`: machine-readable output. */
  readonly json: boolean;
  /** `--help` / `-h`. */
  readonly help: boolean;
  /** `--version`. */
  readonly version: boolean;
  /** `--redis`: overrides `REDLIMIT_REDIS_URL` / `REDIS_URL`. */
  readonly redis?: string;
  /** `--cluster`: `host:port[,host:port…]` of Redis Cluster nodes, instead of a URL. */
  readonly cluster?: string;
  /** `--sentinel`: `host:port[,host:port…]` of sentinels, instead of a URL. */
  readonly sentinel?: string;
  /** `--sentinel-name`: the master's name in Sentinel (with `--sentinel`). */
  readonly sentinelName?: string;
  /** `--prefix`: overrides `REDLIMIT_PREFIX`. */
  readonly prefix?: string;
  /** `--policies`: more policies in the `REDLIMIT_POLICIES` syntax. */
  readonly policies?: string;
  /** `--timeout`: bound on connecting and on each Redis command, in ms. */
  readonly timeoutMs: number;
  /** `--exact`: `part=value` values hashed as given (parts with `normalize: false`). */
  readonly exact: boolean;
  /** `--dotenv`: a dotenv file read under the environment (variables already set win). */
  readonly dotenv?: string;
  /** `board`: the port to listen on (default 4040; 0 for any free port). */
  readonly port: number;
  /** `board`: the address to listen on (default 127.0.0.1). */
  readonly host: string;
  /** `board`: actions hidden and refused. */
  readonly readOnly: boolean;
  /** `board`: the access token (default: a random one). */
  readonly token?: string;
}

const COMMAND_LIST = `${COMMANDS.slice(0, -1).join(', ')} or ${COMMANDS[COMMANDS.length - 1]!}`;

/** Default of `--timeout`: an operator's command may wait longer than a request would. */
export const DEFAULT_TIMEOUT_MS = 5000;

/**
 * Parses `redlimit` arguments (without `node` and the script).
 *
 * @throws CliError (exit code 2) naming the unknown option, missing argument or bad value
 * @example
 * parseCliArgs(['reset', 'login', 'email=alice@example.com']);
 * // { command: 'reset', policy: 'login', parts: ['email=alice@example.com'], … }
 */
export function parseCliArgs(argv: readonly string[]): CliArgs {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        json: { type: 'boolean', default: false },
        exact: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
        version: { type: 'boolean', default: false },
        redis: { type: 'string' },
        cluster: { type: 'string' },
        sentinel: { type: 'string' },
        'sentinel-name': { type: 'string' },
        prefix: { type: 'string' },
        policies: { type: 'string' },
        timeout: { type: 'string' },
        dotenv: { type: 'string' },
        key: { type: 'string', multiple: true, default: [] },
        route: { type: 'string' },
        ip: { type: 'string', multiple: true, default: [] },
        port: { type: 'string' },
        host: { type: 'string' },
        'read-only': { type: 'boolean', default: false },
        token: { type: 'string' },
        units: { type: 'string' },
        limit: { type: 'string' },
        limits: { type: 'string' },
        burst: { type: 'string' },
        shadow: { type: 'string' },
        'fail-mode': { type: 'string' },
        block: { type: 'string' },
        scope: { type: 'string' },
        from: { type: 'string' },
        until: { type: 'string' },
        reason: { type: 'string' },
        count: { type: 'string' },
      },
    });
  } catch (error) {
    // parseArgs explains well; its first sentence is enough on one line.
    const message = error instanceof Error ? error.message : String(error);
    throw usageError(`${message.split(/\.\s/)[0]!.replace(/\.$/, '')} (see redlimit --help)`);
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  // revoke-devices takes no policy: every positional after it is a login.
  const takesPolicy = command !== 'revoke-devices';
  const policy = takesPolicy ? rest[0] : undefined;
  const parts = takesPolicy ? rest.slice(1) : rest;
  const base = {
    parts,
    rawKeys: values.key,
    ips: values.ip,
    json: values.json,
    exact: values.exact,
    help: values.help,
    version: values.version,
    timeoutMs: timeout(values.timeout),
    count: historyCount(values.count),
    port: port(values.port),
    host: values.host ?? '127.0.0.1',
    readOnly: values['read-only'],
    ...(values.token !== undefined && { token: boardToken(values.token) }),
    ...(values.route !== undefined && { route: values.route }),
    ...(values.redis !== undefined && { redis: values.redis }),
    ...(values.cluster !== undefined && { cluster: values.cluster }),
    ...(values.sentinel !== undefined && { sentinel: values.sentinel }),
    ...(values['sentinel-name'] !== undefined && { sentinelName: values['sentinel-name'] }),
    ...(values.prefix !== undefined && { prefix: values.prefix }),
    ...(values.policies !== undefined && { policies: values.policies }),
    ...(values.dotenv !== undefined && { dotenv: values.dotenv }),
  };
  if (command === undefined) {
    if (values.help || values.version) return base;
    throw usageError(`no command given: ${COMMAND_LIST} (see redlimit --help)`);
  }
  if (!(COMMANDS as readonly string[]).includes(command)) {
    throw usageError(
      `unknown command '${command}': expected ${COMMAND_LIST} (see redlimit --help)`,
    );
  }
  const name = command as CommandName;
  if (values.units !== undefined && name !== 'grant') {
    throw usageError(`--units is for grant only; ${name} takes none`);
  }
  if (name === 'grant' && !values.help) {
    if (values.units === undefined) {
      throw usageError('grant needs --units N: the room to give each key (a whole number ≥ 1)');
    }
    const units = Number(values.units);
    if (!/^\d+$/.test(values.units) || !Number.isSafeInteger(units) || units < 1) {
      throw usageError(`--units ${JSON.stringify(values.units)}: expected a whole number ≥ 1`);
    }
    if (policy === undefined) {
      throw usageError(
        'grant needs a policy name and keys: redlimit grant <policy> <key…> --units N',
      );
    }
    return { ...base, command: name, policy, units };
  }
  const overrideFlags: OverrideFlags = {
    ...(values.limit !== undefined && { limit: values.limit }),
    ...(values.limits !== undefined && { limits: values.limits }),
    ...(values.burst !== undefined && { burst: values.burst }),
    ...(values.shadow !== undefined && { shadow: values.shadow }),
    ...(values['fail-mode'] !== undefined && { failMode: values['fail-mode'] }),
    ...(values.block !== undefined && { block: values.block }),
  };
  const sub = name === 'policies' ? policy : undefined;
  const flagsFor = (flags: Record<string, unknown>, allowed: string, where: string) => {
    for (const [flag, value] of Object.entries(flags)) {
      if (value !== undefined && !allowed.split(' ').includes(flag)) {
        throw usageError(`--${flag} is for ${where} only`);
      }
    }
  };
  const overrideUse = {
    limit: values.limit,
    limits: values.limits,
    burst: values.burst,
    shadow: values.shadow,
    'fail-mode': values['fail-mode'],
    block: values.block,
    scope: values.scope,
    from: values.from,
    until: values.until,
    reason: values.reason,
    count: values.count,
  };
  if (name === 'policies') {
    const allowed =
      sub === 'set'
        ? 'limit limits burst shadow fail-mode block scope from until reason'
        : sub === 'unset'
          ? 'scope reason'
          : sub === 'history'
            ? 'count'
            : '';
    flagsFor(overrideUse, allowed, `policies ${sub ?? 'set'}`);
    if (sub === undefined) return { ...base, command: name };
    if (sub === 'list' || sub === 'history') {
      if (parts.length > 0)
        throw usageError(`policies ${sub} takes no arguments; got '${parts[0]!}'`);
      return { ...base, command: name, subcommand: sub };
    }
    if (sub !== 'set' && sub !== 'unset') {
      throw usageError(
        `policies takes set, unset, list or history (or nothing, for the configured policies); got '${sub}'`,
      );
    }
    const [target, ...extra] = parts;
    if (target === undefined) {
      throw usageError(`policies ${sub} needs a policy name: redlimit policies ${sub} <policy> …`);
    }
    if (extra.length > 0)
      throw usageError(`policies ${sub} takes one policy; got '${extra[0]!}' too`);
    return {
      ...base,
      parts: [],
      command: name,
      subcommand: sub,
      policy: target,
      ...(sub === 'set' && { override: overrideFlags }),
      ...(values.scope !== undefined && { scope: values.scope }),
      ...(values.from !== undefined && { from: values.from }),
      ...(values.until !== undefined && { until: values.until }),
      ...(values.reason !== undefined && { reason: values.reason }),
    };
  }
  flagsFor(overrideUse, '', 'policies set, unset and history');
  if (name === 'revoke-devices') return { ...base, command: name };
  if (name === 'board') {
    if (policy !== undefined) throw usageError(`board takes no arguments; got '${policy}'`);
    return { ...base, command: name };
  }
  if (policy === undefined && !values.help) {
    throw usageError(`${name} needs a policy name and keys: redlimit ${name} <policy> <key…>`);
  }
  return { ...base, command: name, ...(policy !== undefined && { policy }) };
}

function historyCount(value: string | undefined): number {
  if (value === undefined) return 50;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > 10_000) {
    throw usageError(`--count ${JSON.stringify(value)}: expected a whole number from 1 to 10000`);
  }
  return n;
}

function port(value: string | undefined): number {
  if (value === undefined) return 4040;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65_535) {
    throw usageError(`--port ${JSON.stringify(value)}: expected a port number from 0 to 65535`);
  }
  return n;
}

function boardToken(value: string): string {
  if (!/^[A-Za-z0-9_-]{16,200}$/.test(value)) {
    throw usageError(
      '--token: expected 16 to 200 letters, digits, - or _ (a token a browser cookie can hold)',
    );
  }
  return value;
}

function timeout(value: string | undefined): number {
  if (value === undefined) return DEFAULT_TIMEOUT_MS;
  const ms = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(ms) || ms < 1) {
    throw usageError(`--timeout ${JSON.stringify(value)}: expected whole milliseconds ≥ 1`);
  }
  return ms;
}
