import { parseArgs } from 'node:util';
import { usageError } from './cli.error';

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
  if (name === 'policies') {
    if (policy !== undefined) throw usageError(`policies takes no arguments; got '${policy}'`);
    return { ...base, command: name };
  }
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
