/**
 * Spawning of throwaway `redis-server` processes for the test harness.
 *
 * Used by the Jest globalSetup (one shared server per run, when neither
 * REDIS_URL nor a Docker engine is available) and by `startRedisServer()` in
 * ./redis.ts (extra servers with custom flags for individual specs).
 *
 * Guarantees:
 *  - never uses port 6379 and never talks to a Redis that happens to be running:
 *    every server gets a port freshly handed out by the OS;
 *  - nothing is persisted (`--save "" --appendonly no`), all files live in a
 *    fresh temp dir that is removed on stop;
 *  - the server does not outlive the process that spawned it: it is started
 *    through `setpriv --pdeathsig SIGKILL` where available (Linux, util-linux),
 *    it is killed from a `process.on('exit')` hook, and servers left behind by
 *    a previous run that was SIGKILLed are swept on the next start.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

export interface SpawnedRedisServer {
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  readonly dir: string;
  stop(): Promise<void>;
}

const TEMP_PREFIX = 'redlimit-redis-';
const OWNER_FILE = 'owner.pid';
const READY_TIMEOUT_MS = 10_000;
const STOP_GRACE_MS = 3_000;

/** Servers started by this process that have not been stopped yet. */
const live = new Map<number, { child: ChildProcess; dir: string }>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Synchronous last resort: kill whatever this process still owns.
  process.on('exit', () => {
    for (const [pid, { dir }] of live) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
      try {
        fs.rmSync(dir, { recursive: true, force: true });
      } catch {
        /* ignore */
      }
    }
    live.clear();
  });
}

/** Whether `file` is an executable regular file. */
export function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** The first executable named `name` on PATH. */
export function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

let cachedBinary: string | undefined;

/** Absolute path of redis-server (PATH, then /usr/bin, /usr/sbin, /usr/local/bin). */
export function findRedisServerBinary(): string {
  if (cachedBinary) return cachedBinary;
  const fromEnv = process.env.REDLIMIT_REDIS_SERVER_BIN;
  const found =
    (fromEnv && isExecutable(fromEnv) ? fromEnv : undefined) ??
    findOnPath('redis-server') ??
    ['/usr/bin/redis-server', '/usr/sbin/redis-server', '/usr/local/bin/redis-server'].find(
      isExecutable,
    );
  if (!found) {
    throw new Error(
      'redis-server not found (looked on PATH, /usr/bin, /usr/sbin, /usr/local/bin). ' +
        'Install it (e.g. `apt-get install -y redis-server`), set REDIS_URL to an existing ' +
        'Redis, or make a Docker engine available.',
    );
  }
  cachedBinary = found;
  return found;
}

let cachedCliBinary: string | undefined;

/**
 * Absolute path of redis-cli: REDLIMIT_REDIS_CLI_BIN, next to the redis-server
 * in use, then PATH, /usr/bin, /usr/sbin, /usr/local/bin.
 */
export function findRedisCliBinary(): string {
  if (cachedCliBinary) return cachedCliBinary;
  const fromEnv = process.env.REDLIMIT_REDIS_CLI_BIN;
  let sibling: string | undefined;
  try {
    sibling = path.join(path.dirname(findRedisServerBinary()), 'redis-cli');
  } catch {
    /* no redis-server either: reported below */
  }
  const found =
    (fromEnv && isExecutable(fromEnv) ? fromEnv : undefined) ??
    (sibling && isExecutable(sibling) ? sibling : undefined) ??
    findOnPath('redis-cli') ??
    ['/usr/bin/redis-cli', '/usr/sbin/redis-cli', '/usr/local/bin/redis-cli'].find(isExecutable);
  if (!found) {
    throw new Error(
      'redis-cli not found (looked next to redis-server, on PATH, /usr/bin, /usr/sbin, ' +
        '/usr/local/bin). Install it (e.g. `apt-get install -y redis-tools`).',
    );
  }
  cachedCliBinary = found;
  return found;
}

let cachedMajor: number | undefined;

function redisServerMajorVersion(binary: string): number {
  if (cachedMajor !== undefined) return cachedMajor;
  const out = spawnSync(binary, ['--version'], { encoding: 'utf8', timeout: 5_000 });
  const m = /v=(\d+)\./.exec(out.stdout ?? '');
  cachedMajor = m ? Number(m[1]) : 0;
  return cachedMajor;
}

let cachedSetpriv: string | null | undefined;

function setprivSupportsPdeathsig(): string | null {
  if (cachedSetpriv !== undefined) return cachedSetpriv;
  cachedSetpriv = null;
  if (process.platform === 'linux') {
    const bin = findOnPath('setpriv') ?? ['/usr/bin/setpriv', '/bin/setpriv'].find(isExecutable);
    if (bin) {
      const help = spawnSync(bin, ['--help'], { encoding: 'utf8', timeout: 5_000 });
      if (`${help.stdout ?? ''}${help.stderr ?? ''}`.includes('--pdeathsig')) cachedSetpriv = bin;
    }
  }
  return cachedSetpriv;
}

/** Ask the OS for a free TCP port on 127.0.0.1 (listen on 0, read it, close). */
export async function getFreePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const srv = net.createServer();
      srv.unref();
      srv.once('error', reject);
      srv.listen(0, '127.0.0.1', () => {
        const addr = srv.address();
        const p = typeof addr === 'object' && addr ? addr.port : 0;
        srv.close(() => resolve(p));
      });
    });
    if (port > 0 && port !== 6379) return port;
  }
}

/** One raw RESP PING over TCP; resolves true on +PONG (or a NOAUTH error: it is alive). */
export function pingOnce(port: number, host = '127.0.0.1', timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    let buf = '';
    let done = false;
    const sock = net.connect({ port, host });
    const finish = (ok: boolean): void => {
      if (done) return;
      done = true;
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(timeoutMs, () => finish(false));
    sock.once('error', () => finish(false));
    sock.once('connect', () => sock.write('PING\r\n'));
    sock.on('data', (d: Buffer) => {
      buf += d.toString('utf8');
      if (buf.includes('\r\n')) finish(buf.startsWith('+PONG') || buf.startsWith('-NOAUTH'));
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readLogTail(dir: string, lines = 20): string {
  try {
    const text = fs.readFileSync(path.join(dir, 'redis.log'), 'utf8');
    return text.trim().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no redis.log)';
  }
}

/**
 * Remove leftovers of earlier runs that were killed before their teardown ran:
 * temp dirs whose owner process is gone. A redis-server is only killed if its
 * command line contains that very temp dir, so nothing unrelated is touched.
 */
export function sweepStaleServers(): void {
  if (process.platform !== 'linux') return;
  let entries: string[];
  try {
    entries = fs.readdirSync(os.tmpdir()).filter((e) => e.startsWith(TEMP_PREFIX));
  } catch {
    return;
  }
  for (const entry of entries) {
    const dir = path.join(os.tmpdir(), entry);
    let owner: number;
    let serverPid: number;
    try {
      const [o, s] = fs.readFileSync(path.join(dir, OWNER_FILE), 'utf8').trim().split(/\s+/);
      owner = Number(o);
      serverPid = Number(s);
    } catch {
      continue; // being created right now, or not ours
    }
    if (!owner || processAlive(owner)) continue;
    if (serverPid && processAlive(serverPid)) {
      try {
        const cmdline = fs.readFileSync(`/proc/${serverPid}/cmdline`, 'utf8');
        if (cmdline.includes('redis-server') && cmdline.includes(dir)) {
          process.kill(serverPid, 'SIGKILL');
        }
      } catch {
        /* gone or not inspectable */
      }
    }
    try {
      fs.rmSync(dir, { recursive: true, force: true });
    } catch {
      /* ignore */
    }
  }
}

function waitForExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.off('exit', onExit);
      resolve(false);
    }, ms);
    const onExit = (): void => {
      clearTimeout(timer);
      resolve(true);
    };
    child.once('exit', onExit);
  });
}

export interface SpawnRedisServerOptions {
  /**
   * Chooses the port (default: getFreePort()). Called again on each retry after
   * an "address already in use" failure. The cluster harness uses it to pick a
   * port whose cluster bus port (port + 10000) is free as well.
   */
  pickPort?: () => Promise<number>;
  /**
   * Runs the server as a Sentinel (`redis-server <dir>/sentinel.conf --sentinel`): Sentinel
   * rewrites its config file as it learns, so it gets an empty one in its own temp dir.
   * `extraArgs` then carry its `--sentinel monitor …` lines.
   */
  sentinel?: boolean;
}

/** Extra flags, or a function of the chosen port that returns them. */
export type RedisServerArgs = string[] | ((port: number) => string[]);

async function spawnOnce(
  extraArgs: RedisServerArgs,
  options: SpawnRedisServerOptions,
): Promise<SpawnedRedisServer> {
  const binary = findRedisServerBinary();
  const port = await (options.pickPort ?? getFreePort)();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), TEMP_PREFIX));
  const args: string[] = [];
  if (options.sentinel) {
    const config = path.join(dir, 'sentinel.conf');
    fs.writeFileSync(config, '');
    args.push(config, '--sentinel');
  }
  args.push(
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--logfile',
    path.join(dir, 'redis.log'),
    '--daemonize',
    'no',
    '--notify-keyspace-events',
    '',
  );
  if (redisServerMajorVersion(binary) >= 7) args.push('--enable-debug-command', 'yes');
  args.push(...(typeof extraArgs === 'function' ? extraArgs(port) : extraArgs));

  const setpriv = setprivSupportsPdeathsig();
  const [cmd, argv] = setpriv
    ? [setpriv, ['--pdeathsig', 'SIGKILL', '--', binary, ...args]]
    : [binary, args];

  // Not detached: same process group, so Ctrl+C on jest reaches the server too.
  const child = spawn(cmd, argv, { stdio: 'ignore', cwd: dir });
  const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  const pid = child.pid;
  if (pid === undefined) {
    const err = await spawnError;
    fs.rmSync(dir, { recursive: true, force: true });
    throw new Error(`failed to spawn ${binary}: ${err.message}`);
  }
  installExitHook();
  live.set(pid, { child, dir });
  fs.writeFileSync(path.join(dir, OWNER_FILE), `${process.pid} ${pid}\n`);
  // The server must not keep an otherwise finished process (e.g. a jest worker) alive.
  child.unref();

  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      if (!exited) {
        try {
          child.kill('SIGTERM');
        } catch {
          /* already gone */
        }
        if (!(await waitForExit(child, STOP_GRACE_MS))) {
          try {
            child.kill('SIGKILL');
          } catch {
            /* already gone */
          }
          await waitForExit(child, STOP_GRACE_MS);
        }
      }
      live.delete(pid);
      fs.rmSync(dir, { recursive: true, force: true });
    })();
    return stopped;
  };

  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (exited) {
      const log = readLogTail(dir);
      await stop();
      const e = new Error(
        `redis-server exited during startup on port ${port} (args: ${args.join(' ')}):\n${log}`,
      );
      (e as Error & { addressInUse?: boolean }).addressInUse = /address already in use/i.test(log);
      throw e;
    }
    if (await pingOnce(port, '127.0.0.1', 500)) break;
    if (Date.now() > deadline) {
      const log = readLogTail(dir);
      await stop();
      throw new Error(
        `redis-server on port ${port} did not answer PING within ${READY_TIMEOUT_MS} ms:\n${log}`,
      );
    }
    await sleep(25);
  }

  return { url: `redis://127.0.0.1:${port}`, port, pid, dir, stop };
}

/**
 * Spawn a fresh redis-server on a free port and wait until it answers PING.
 * `extraArgs` come last, so they override the defaults (e.g. `['--cluster-enabled', 'yes']`);
 * pass a function to build them from the port (it is called once per attempt).
 */
export async function spawnRedisServer(
  extraArgs: RedisServerArgs = [],
  options: SpawnRedisServerOptions = {},
): Promise<SpawnedRedisServer> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await spawnOnce(extraArgs, options);
    } catch (e) {
      lastError = e;
      // Only a lost race for the port is worth another try.
      if (!(e as { addressInUse?: boolean }).addressInUse) throw e;
    }
  }
  throw lastError;
}

/** Whether something still accepts connections on 127.0.0.1:port. */
export function portAcceptsConnections(port: number, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ port, host: '127.0.0.1' });
    const finish = (ok: boolean): void => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(timeoutMs, () => finish(false));
    sock.once('connect', () => finish(true));
    sock.once('error', () => finish(false));
  });
}

export { processAlive };
