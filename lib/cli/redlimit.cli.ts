import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Limiter } from '../core/limiter';
import type { EnvSource } from '../config/options-from-env.util';
import { RedisStore } from '../stores/redis.store';
import { type CliArgs, DEFAULT_TIMEOUT_MS, parseCliArgs } from './cli-args.util';
import { type CliConfig, cliConfig } from './cli-config.util';
import { readDotenv, withDotenv } from './cli-dotenv.util';
import { callerKeys, loginKeys } from './cli-keys.util';
import { connectRedis } from './cli-redis.util';
import { CliError, EXIT_CODES, type ExitCode, usageError } from './cli.error';
import { serveBoard } from './board.command';
import { peekCommand } from './peek.command';
import { type CommandOutput, policiesCommand } from './policies.command';
import { resetCommand } from './reset.command';
import { grantCommand } from './grant.command';
import {
  changeOf,
  instantOf,
  listOverridesCommand,
  overrideHistoryCommand,
  setOverrideCommand,
  unsetOverrideCommand,
} from './overrides.command';
import { resolvePolicy } from '../core/policy';
import { applyChange, checkScope } from '../core/overrides';
import { cliActor } from './cli-actor.util';
import { revokeDevicesCommand } from './revoke-devices.command';

/** Where the `redlimit` command reads its environment and writes its output. */
export interface CliIo {
  /** Environment variables (`process.env`). */
  readonly env: EnvSource;
  /** Results. */
  readonly stdout: { write(text: string): unknown };
  /** Errors: one line each. */
  readonly stderr: { write(text: string): unknown };
  /** Stops a command that serves (`board`); default: SIGINT or SIGTERM. */
  readonly signal?: AbortSignal;
}

/** `redlimit --help`. */
export const HELP = `Usage: redlimit <command> [options]

Inspect and unlock rate limits of a redlimit app, from the configuration the app reads.

Commands:
  policies                 the policies of REDLIMIT_POLICIES (no Redis needed)
  policies set <policy> [--limit N | --limits N/WINDOW,…] [--burst N] [--shadow true|false]
           [--fail-mode M] [--block DURATION|none] [--scope PREFIX] [--from T] [--until T]
           [--reason TEXT]
                           a live override of a policy for the whole fleet (in force within the
                           apps' overridesPollMs), for every key or keys starting with PREFIX;
                           T: an ISO time or a duration from now (90m); window cannot change
  policies unset <policy> [--scope PREFIX] [--reason TEXT]
                           removes that override: the configured policy applies again
  policies list            the overrides stored, in force or not
  policies history [--count N]
                           the latest changes to the overrides, with who and why
  peek <policy> <key…>     budget left per key (writes nothing)
  reset <policy> <key…>    deletes the policy's state for the keys: full budget again (unlock)
  grant <policy> <key…> --units N
                           gives each key N units of room now under every limit of the policy
                           (a one-off allowance, never beyond a full budget; a lockout stays)
  revoke-devices <login…>  every trusted-device token of the logins is untrusted from now on
                           (RedlimitDevices.revokeAll); logins as part=value or --key part:hash
  board                    serves the ops board (policies, refusals, lockouts, unlock, audit)
                           until interrupted; prints a login link that carries an access token

Keys:
  part=value               an @Attempt part, normalised and hashed as the app does:
                           email=alice@example.com  ip=203.0.113.7  user=42
                           (--exact: hashed as typed, for parts with normalize: false)
  --route 'Controller.method /path' --ip ADDRESS
                           the default @Throttle key: handler, route template and client IP
                           (--ip may repeat), e.g. --route 'LinksController.create /links' --ip 203.0.113.7
  --key KEY                a caller key used as given (key functions, Limiter calls); may repeat

Options:
  --json                   machine-readable output
  --exact                  part=value values are not normalised (parts with normalize: false)
  --redis URL              instead of REDLIMIT_REDIS_URL / REDIS_URL
  --cluster HOST:PORT[,…]  a Redis Cluster, by some of its nodes
                           (instead of REDLIMIT_REDIS_CLUSTER_NODES)
  --sentinel HOST:PORT[,…] --sentinel-name NAME
                           the master NAME the sentinels name (instead of
                           REDLIMIT_REDIS_SENTINELS / REDLIMIT_REDIS_SENTINEL_NAME)
  --prefix PREFIX          instead of REDLIMIT_PREFIX (default rl:)
  --policies SPEC          more policies, REDLIMIT_POLICIES syntax (for policies defined in code)
  --timeout MS             bound on connecting and on each command (default ${DEFAULT_TIMEOUT_MS})
  --port N, --host ADDR    board: where to listen (default 4040 on 127.0.0.1)
  --read-only              board: show figures only, no unlock or grant
  --units N                grant: the room to give each key
  --token TOKEN            board: the access token (default: a random one; 16+ of A-Z a-z 0-9 - _)
  --dotenv PATH            read variables from a dotenv file too (variables already set win),
                           e.g. the app's own: --dotenv sample/redlimit.env
  -h, --help               this help
  --version                the redlimit version

Environment: REDLIMIT_REDIS_URL or REDIS_URL, REDLIMIT_REDIS_CLUSTER_NODES,
REDLIMIT_REDIS_SENTINELS and REDLIMIT_REDIS_SENTINEL_NAME, REDLIMIT_PREFIX, REDLIMIT_POLICIES,
REDLIMIT_KEY_SECRET, REDLIMIT_IPV6_SUBNET, REDLIMIT_FAIL_MODE — read and validated as
RedlimitModule reads them.

Exit codes: 0 done; 2 bad usage, configuration, key or policy (Redis untouched);
3 Redis unreachable, too slow or failing; 1 unexpected error.

Examples:
  redlimit peek login email=alice@example.com ip=203.0.113.7
  redlimit reset login email=alice@example.com
  redlimit reset links --route 'LinksController.create /links' --ip 203.0.113.7 --json
  redlimit grant login email=alice@example.com --units 3
  redlimit policies set api --limit 5000 --scope tenant:acme: --until 2h --reason 'launch day'
  redlimit revoke-devices email=alice@example.com
  redlimit board --redis redis://10.0.0.5:6379 --port 4040
`;

/**
 * Runs the `redlimit` command: parses `argv` (without `node` and the script), reads the
 * configuration from `io.env`, does the command and returns the exit code. Errors are written to
 * `io.stderr` as one line (no stack trace); bad input is reported before Redis is contacted.
 *
 * @example
 * process.exitCode = await runCli(process.argv.slice(2), process);
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<ExitCode> {
  try {
    const args = parseCliArgs(argv);
    if (args.help) {
      io.stdout.write(HELP);
      return EXIT_CODES.ok;
    }
    if (args.version && args.command === undefined) {
      io.stdout.write(`${packageVersion()}\n`);
      return EXIT_CODES.ok;
    }
    const env = args.dotenv === undefined ? io.env : withDotenv(io.env, readDotenv(args.dotenv));
    if (args.command === 'board') {
      await boardUntilStopped(args, cliConfig(args, env), io);
      return EXIT_CODES.ok;
    }
    const output = await execute(args, cliConfig(args, env), io);
    io.stdout.write(args.json ? `${JSON.stringify(output.json, null, 2)}\n` : `${output.text}\n`);
    return EXIT_CODES.ok;
  } catch (error) {
    if (error instanceof CliError) {
      io.stderr.write(`redlimit: ${oneLine(error.message)}\n`);
      return error.exitCode;
    }
    const message = error instanceof Error ? error.message : String(error);
    io.stderr.write(`redlimit: unexpected error: ${oneLine(message)}\n`);
    return EXIT_CODES.internal;
  }
}

async function execute(
  args: CliArgs,
  config: CliConfig,
  io: Pick<CliIo, 'stderr'>,
): Promise<CommandOutput> {
  if (args.command === 'policies') {
    const sub = args.subcommand;
    if (sub === undefined) return policiesCommand(config);
    if (sub === 'list') return withStore(args, config, (store) => listOverridesCommand(store));
    if (sub === 'history') {
      return withStore(args, config, (store) => overrideHistoryCommand(store, args.count));
    }
    const definition = policyDefinition(args.policy!, config);
    const call = {
      actor: cliActor(),
      ...(args.scope !== undefined && { scope: args.scope }),
      ...(args.from !== undefined && { from: args.from }),
      ...(args.until !== undefined && { until: args.until }),
      ...(args.reason !== undefined && { reason: args.reason }),
    };
    if (sub === 'unset') {
      return withStore(args, config, (store) => unsetOverrideCommand(store, args.policy!, call));
    }
    // Everything that can be wrong with the change is found before Redis is contacted.
    const policy = resolvePolicy({ ...definition, name: args.policy! });
    const change = changeOf(args.override ?? {});
    try {
      applyChange(policy, change);
      checkScope(args.scope);
      instantOf(args.from, '--from', Date.now());
      instantOf(args.until, '--until', Date.now());
    } catch (error) {
      if (error instanceof RangeError || error instanceof TypeError)
        throw usageError(error.message);
      throw error;
    }
    return withStore(args, config, (store) => setOverrideCommand(store, policy, change, call));
  }
  // Everything that can be wrong with the input is found before Redis is contacted.
  if (args.command === 'revoke-devices') {
    const logins = loginKeys(args, config);
    return withStore(args, config, (store) =>
      revokeDevicesCommand(store, logins, { timeoutMs: args.timeoutMs }),
    );
  }
  const definition = policyDefinition(args.policy!, config);
  const keys = callerKeys(args, config);
  return withStore(args, config, async (store) => {
    // Fail mode closed, silently: a failure must become an error here, never a made-up budget.
    const limiter = new Limiter(
      store,
      { ...definition, name: args.policy!, failMode: 'closed' },
      { timeoutMs: args.timeoutMs, onStoreFailure: () => undefined },
    );
    if (args.command === 'peek') return peekCommand(limiter, keys);
    const output =
      args.command === 'grant'
        ? await grantCommand(limiter, keys, args.units!)
        : await resetCommand(limiter, keys);
    await audited(store, io, {
      action: args.command === 'grant' ? 'grant' : 'unlock',
      policy: args.policy!,
      keys: keys.map(({ key }) => key),
      ...(args.command === 'grant' && {
        detail: `${args.units!} unit${args.units === 1 ? '' : 's'}`,
      }),
    });
    return output;
  });
}

/**
 * Writes the audit entry of an action taken from the command line (the board's Audit page lists
 * it, `via: 'cli'`, actor `cli:<user>`), one per key. The action has happened by then: an entry
 * that cannot be written is a warning on stderr, not a failure.
 */
async function audited(
  store: RedisStore,
  io: Pick<CliIo, 'stderr'>,
  action: { action: string; policy: string; keys: readonly string[]; detail?: string },
): Promise<void> {
  const book = store.board();
  const actor = cliActor();
  try {
    for (const key of action.keys) {
      await book.appendAudit({
        actor,
        action: action.action,
        via: 'cli',
        policy: action.policy,
        key,
        ...(action.detail !== undefined && { detail: action.detail }),
      });
    }
  } catch (error) {
    io.stderr.write(
      `redlimit: warning: done, but its audit entry could not be written: ${oneLine((error as Error).message)}\n`,
    );
  }
}

/** `redlimit board`: serves the board until `io.signal` (or SIGINT / SIGTERM) stops it. */
async function boardUntilStopped(args: CliArgs, config: CliConfig, io: CliIo): Promise<void> {
  const stopped = io.signal ?? interrupted();
  await withStore(args, config, async (store) => {
    let board;
    try {
      board = await serveBoard(store, config, {
        port: args.port,
        host: args.host,
        readOnly: args.readOnly,
        timeoutMs: args.timeoutMs,
        ...(args.token !== undefined && { token: args.token }),
      });
    } catch (error) {
      throw usageError(`cannot listen on ${args.host}:${args.port}: ${(error as Error).message}`);
    }
    if (!/^(127\.|::1$|localhost$|::ffff:127\.)/.test(args.host)) {
      io.stderr.write(
        `redlimit: warning: the board listens on ${args.host}, beyond this machine, over plain ` +
          'HTTP: its access token and cookie travel in clear; put it behind TLS or use an SSH tunnel\n',
      );
    }
    io.stdout.write(
      `redlimit board${args.readOnly ? ' (read-only)' : ''} at ${board.url}\n` +
        `open ${board.loginUrl}\n`,
    );
    await new Promise<void>((resolve) => {
      if (stopped.aborted) resolve();
      else stopped.addEventListener('abort', () => resolve(), { once: true });
    });
    await board.close();
    return { json: {}, text: '' };
  });
}

/** Aborts on the first SIGINT or SIGTERM. */
function interrupted(): AbortSignal {
  const controller = new AbortController();
  const stop = () => {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    controller.abort();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  return controller.signal;
}

/** Connects (once the input is known to be good), runs `work` on the store, disconnects. */
async function withStore(
  args: CliArgs,
  config: CliConfig,
  work: (store: RedisStore) => Promise<CommandOutput>,
): Promise<CommandOutput> {
  if (config.redis === undefined) {
    throw usageError(
      'no Redis configured: set REDLIMIT_REDIS_URL or REDIS_URL (or REDLIMIT_REDIS_CLUSTER_NODES, ' +
        'or REDLIMIT_REDIS_SENTINELS with REDLIMIT_REDIS_SENTINEL_NAME), or pass --redis, ' +
        '--cluster or --sentinel',
    );
  }
  const client = await connectRedis(config.redis, args.timeoutMs);
  try {
    return await work(new RedisStore({ client, prefix: config.prefix }));
  } finally {
    client.disconnect();
  }
}

function policyDefinition(name: string, config: CliConfig): CliConfig['policies'][string] {
  if (Object.prototype.hasOwnProperty.call(config.policies, name)) return config.policies[name]!;
  const known = Object.keys(config.policies);
  throw usageError(
    `no policy named '${name}'; ` +
      (known.length > 0
        ? `known policies: ${known.join(', ')}`
        : 'no policies configured: set REDLIMIT_POLICIES or pass --policies'),
  );
}

function packageVersion(): string {
  // lib/cli and dist/cli both sit two levels below the package root.
  const manifest = readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8');
  return (JSON.parse(manifest) as { version: string }).version;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
